"""A small PyTorch model whose outputs are kept in a list every step: with their autograd graph
(leaky: each kept output holds its graph's saved tensors) or detached (fixed)."""
import sys

import torch
import tleak

torch.manual_seed(0)
torch.set_num_threads(1)
leaky = len(sys.argv) > 1 and sys.argv[1] == "leaky"
model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Tanh(), torch.nn.Linear(256, 8))
data = torch.randn(128, 64)
history = []
for step in tleak.iterations(range(50)):
    out = model(data)  # OUTPUT
    history.append(out if leaky else out.detach())
print("outputs", "leaky" if leaky else "fixed", "done", len(history))

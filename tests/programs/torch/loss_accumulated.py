"""A small PyTorch training loop that sums the loss tensor across steps (leaky: every step's
autograd graph stays reachable from the running total) or its Python float (fixed: loss.item())."""
import sys

import torch
import tleak

torch.manual_seed(0)
torch.set_num_threads(1)
leaky = len(sys.argv) > 1 and sys.argv[1] == "leaky"
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(256, 64)
target = torch.randn(256, 1)
total = 0
for step in tleak.iterations(range(50)):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(data), target)  # LOSS
    loss.backward()
    optimizer.step()
    if leaky:
        total += loss  # TOTAL
    else:
        total += loss.item()
print("loss", "leaky" if leaky else "fixed", "done")

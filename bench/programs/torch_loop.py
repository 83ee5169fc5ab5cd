"""The PyTorch training loop of tests/programs/torch/loss_accumulated.py (its fixed variant) for
STEPS steps (argv[1], default 500), timed from its first step to its last and printed to stderr as
"loop SECONDS": what a tracker costs the training loop itself, apart from importing PyTorch (about
700,000 allocations, each a new stack, once per process). For overhead measurements only."""
import sys
import time

import torch
import tleak

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 500
torch.manual_seed(0)
torch.set_num_threads(1)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(256, 64)
target = torch.randn(256, 1)
total = 0.0
start = time.perf_counter()
for step in tleak.iterations(range(steps)):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(data), target)
    loss.backward()
    optimizer.step()
    total += loss.item()
print(f"loop {time.perf_counter() - start:.6f}", file=sys.stderr)
print(f"loss {total / steps:.6f}")

"""A small PyTorch training loop that sums the loss tensor across steps (leaky: every step's
autograd graph stays reachable from the running total) or its Python float (fixed: loss.item()).
argv: leaky|fixed [STEPS (default 50) [timed]]; with "timed", the time of the steps alone, from the
first to the last, goes to stderr as "loop SECONDS" (bench/compare_program_overhead reads it)."""
import sys
import time

import torch
import tleak

torch.manual_seed(0)
torch.set_num_threads(1)
leaky = len(sys.argv) > 1 and sys.argv[1] == "leaky"
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 50
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(256, 64)
target = torch.randn(256, 1)
total = 0
start = time.perf_counter()
for step in tleak.iterations(range(steps)):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(data), target)  # LOSS
    loss.backward()
    optimizer.step()
    if leaky:
        total += loss  # TOTAL
    else:
        total += loss.item()
if len(sys.argv) > 3 and sys.argv[3] == "timed":
    print(f"loop {time.perf_counter() - start:.6f}", file=sys.stderr)
print("loss", "leaky" if leaky else "fixed", "done")

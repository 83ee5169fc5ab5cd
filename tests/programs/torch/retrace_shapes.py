"""A function traced with torch.jit.trace and cached per input shape: fed a new batch size every
step (leaky: one more trace kept per step) or always the same one (fixed)."""
import sys

import torch
import tleak

torch.manual_seed(0)
torch.set_num_threads(1)
leaky = len(sys.argv) > 1 and sys.argv[1] == "leaky"
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4)).eval()
traces = {}


def run(batch):
    key = tuple(batch.shape)
    if key not in traces:
        traces[key] = torch.jit.trace(model, batch)  # TRACE
    return traces[key](batch)


with torch.no_grad():
    for step in tleak.iterations(range(50)):
        rows = 8 + step if leaky else 8
        run(torch.randn(rows, 32))
print("retrace", "leaky" if leaky else "fixed", "done", len(traces))

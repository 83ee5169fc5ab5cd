"""A numpy loop that keeps a 64 KiB array per iteration (leaky) or only its sum (fixed).
Expected: leaky: growth of 65536 B per iteration at the KEEP line; fixed: bounded."""
import sys

import numpy as np
import tleak

leaky = len(sys.argv) > 1 and sys.argv[1] == "leaky"
kept = {}
total = 0.0
for step in tleak.iterations(range(40)):
    x = np.full(8192, float(step))  # 8192 float64 = 64 KiB
    y = x * 2.0 + 1.0  # KEEP
    if leaky:
        kept[step] = y
    else:
        total += float(y.sum())
print("numpy", "leaky" if leaky else "fixed", "done", len(kept))

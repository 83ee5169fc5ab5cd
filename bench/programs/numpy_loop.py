"""A numpy loop of the kind tleak is for: small arrays made and dropped every step, one mark per
step. For overhead measurements (tleak versus plain), not for findings."""
import numpy as np
import tleak

rng = np.random.default_rng(0)
w = rng.standard_normal((64, 64))
acc = 0.0
for step in tleak.iterations(range(3000)):
    x = rng.standard_normal((32, 64))
    h = np.tanh(x @ w)
    y = (h * h).sum(axis=1) + x.mean(axis=1)
    acc += float(y.sum())
print(f"{acc:.3f}")

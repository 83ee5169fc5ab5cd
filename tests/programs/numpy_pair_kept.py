"""Keeps two arrays per iteration, made by two calls on one line: their allocations have the same
stacks but for where on that line each call is (the columns of the script's Python frame)."""
import numpy as np
import tleak

kept = []
for step in tleak.iterations(range(200)):
    kept.append((np.zeros(1000), np.zeros(3000)))  # KEEP
print("kept", len(kept))

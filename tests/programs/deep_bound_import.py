"""Imports numpy or torch (argv[1]) with every extension module loaded RTLD_DEEPBIND (argv[2]:
"deep"; "plain": as Python loads them by default), then keeps a 64 KiB array per marked step for 60
steps (KEEP). Expected under tleak: growth of 64 KiB per iteration at KEEP both ways, and no leak
(memcheck: none lost); deep-bound, a note that the libraries' constructors' blocks were not seen."""
import importlib
import os
import sys

if sys.argv[2] == "deep":
    sys.setdlopenflags(os.RTLD_NOW | os.RTLD_DEEPBIND)
import tleak

module = importlib.import_module(sys.argv[1])
kept = []
for step in tleak.iterations(range(60)):
    kept.append(module.ones(8192, dtype=module.float64))  # KEEP
print("kept", len(kept))

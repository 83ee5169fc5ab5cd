"""Keeps what a library deep below it allocates, one 64 KiB buffer per iteration, 30 iterations.
Run with --focus naming this file alone, the library (python_lib/deep_helper.py) is not the
user's: its 22 frames (grow and 21 of down) are more than the 12 Python frames a stack keeps, and
the site must still be named by the line below, after '(10 Python frames left out)'.
Expected: growth of 64 KiB per iteration at deep_calls.py's KEEP line."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "python_lib"))
import deep_helper  # noqa: E402
import tleak  # noqa: E402

kept = []
for step in tleak.iterations(range(30)):
    kept.append(deep_helper.grow())  # KEEP
print("kept", len(kept))

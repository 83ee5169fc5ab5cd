"""A daemon thread still allocating in C (tests/programs/finalizing_churn.c, through ctypes: no
GIL) while the interpreter finalizes and frees that thread's state. argv[1]: the library.
Expected: same output plain and under tleak; the allocations made while finalizing have no
Python frames."""
import ctypes
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
threading.Thread(target=lib.churn, daemon=True).start()
time.sleep(0.1)
print("main done")

"""A native buffer allocated through ctypes every step and dropped (leaky: never freed, a true leak,
unreachable at exit) or freed (fixed)."""
import ctypes
import sys

import tleak

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
leaky = len(sys.argv) > 1 and sys.argv[1] == "leaky"
for step in tleak.iterations(range(50)):
    buffer = libc.malloc(4096)  # BUFFER
    ctypes.memset(buffer, step, 4096)
    if not leaky:
        libc.free(buffer)
    buffer = None
print("ctypes", "leaky" if leaky else "fixed", "done")

"""A native buffer allocated through ctypes every step and dropped (leaky: never freed, a true leak,
unreachable at exit) or freed (fixed). as-data: dropped too, but its address is kept as data, in
the instructions of a code object, in bytes and in a str, none of them a reference to it: objects
that stay alive past the interpreter's teardown, held by a table outside the heap (as a C
extension's static table would hold them). A second argument "interrupted": after the loop the
program is interrupted as by Ctrl-C (SIGINT, which Python's handler turns into KeyboardInterrupt; the
interpreter then finalizes and ends itself with SIGINT). "terminated": after the loop, while the
program sleeps, SIGTERM comes (a kill from outside, or timeout's), which Python leaves to its default
action: the process ends at once, nothing of Python runs (sent by the system call from another
thread, as the kernel would give one from another process)."""
import ctypes
import os
import signal
import struct
import sys
import threading
import time

import tleak

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
mode = sys.argv[1] if len(sys.argv) > 1 else "fixed"


def step_function():
    pass


# Never unmapped: a root of the exit scan, like the data of a C extension.
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS = 3, 0x22
table = (ctypes.c_uint64 * 150).from_address(libc.mmap(None, 8 * 150, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0))
kept = 0


def keep_past_teardown(obj):
    global kept
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    table[kept] = id(obj)
    kept += 1


for step in tleak.iterations(range(50)):
    buffer = libc.malloc(4096)  # BUFFER
    ctypes.memset(buffer, step, 4096)
    if mode == "fixed":
        libc.free(buffer)
    elif mode == "as-data":
        address = struct.pack("<Q", buffer)
        keep_past_teardown(step_function.__code__.replace(co_code=address * 2))
        keep_past_teardown(address)
        keep_past_teardown(address.decode("latin-1"))
    buffer = None
print("ctypes", mode, "done")
if sys.argv[2:] == ["interrupted"]:
    os.kill(os.getpid(), signal.SIGINT)
    while True:
        pass
if sys.argv[2:] == ["terminated"]:
    SYS_KILL = 62
    threading.Thread(target=lambda: libc.syscall(SYS_KILL, os.getpid(), signal.SIGTERM), daemon=True).start()
    time.sleep(60)

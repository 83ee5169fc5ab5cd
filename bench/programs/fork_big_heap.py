"""A process with a large heap (argv[1] bytearrays of 1,000 B: 2,000,000 make about 2.2 GB) forks a
worker that allocates a little and leaves by os._exit, as a DataLoader's or a pool's worker does.
Under `tleak run --record-fork` the worker is recorded, and its exit scan reads the heap it
inherited, and still shares with this process, as roots. For timing the worker's exit, not for
findings."""
import os
import sys

big = [bytearray(1000) for _ in range(int(sys.argv[1]))]
pid = os.fork()
if pid == 0:
    mine = [bytearray(100) for _ in range(100)]
    os._exit(0)
os.waitpid(pid, 0)
print("done")

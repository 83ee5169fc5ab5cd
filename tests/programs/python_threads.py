"""8 Python threads allocate (bytes, lists, numpy arrays that release the GIL) while the main
thread marks 1,000 iterations; one thread exits early. Under tleak: no crash, no deadlock, the
program's own output and exit status, and totals that add up."""
import threading

import numpy as np
import tleak

stop = threading.Event()
counts = [0] * 9


def worker(index, rounds=None):
    kept = []
    n = 0
    while not stop.is_set() and (rounds is None or n < rounds):
        kept.append(bytearray(256 + index))  # WORKER
        kept.append(np.ones(1024 + index) * 2.0)
        if len(kept) > 64:
            kept.clear()
        n += 1
    counts[index] = n


threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
threads.append(threading.Thread(target=worker, args=(8, 200)))  # exits mid-run
for t in threads:
    t.start()
for step in range(1000):
    buffer = [bytes(64) for _ in range(8)]  # MAIN
    tleak.mark_iteration()
stop.set()
for t in threads:
    t.join()
print("threads done", all(c > 0 for c in counts))

"""A multiprocessing pool whose workers keep what each task made in a list of their module (KEEP),
started by the method argv[1] names (default fork). `tleak run --record-fork` records the first
forked worker; with spawn, `--record multiprocessing.spawn` the first worker; with forkserver,
`--record multiprocessing.forkserver --record-fork` the first worker the fork server forks. Forked
workers leave by os._exit once the closed pool has no more tasks for them: the recorded one is
judged there, its kept blocks reachable. (A pool left by `with`, which terminates its workers, may kill one before it
leaves: then nothing is judged, as the process never ends by itself.)"""
import multiprocessing
import sys
import time

kept = []


def task(i):
    kept.append(bytearray(10000))  # KEEP
    time.sleep(0.001)  # so that both workers take tasks
    return i


if __name__ == "__main__":
    multiprocessing.set_start_method(sys.argv[1] if len(sys.argv) > 1 else "fork")
    pool = multiprocessing.Pool(2)
    print("tasks", len(pool.map(task, range(100), chunksize=1)))
    pool.close()
    pool.join()

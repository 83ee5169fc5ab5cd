"""A multiprocessing pool (fork start method) whose workers keep what each task made in a list of
their module (KEEP); `tleak run --record-fork` records the first worker. Pool workers leave by
os._exit once the closed pool has no more tasks for them: the recorded worker is judged there, its
kept blocks reachable. (A pool left by `with`, which terminates its workers, may kill one before it
leaves: then nothing is judged, as the process never ends by itself.)"""
import multiprocessing
import time

kept = []


def task(i):
    kept.append(bytearray(10000))  # KEEP
    time.sleep(0.001)  # so that both workers take tasks
    return i


if __name__ == "__main__":
    multiprocessing.set_start_method("fork")
    pool = multiprocessing.Pool(2)
    print("tasks", len(pool.map(task, range(100), chunksize=1)))
    pool.close()
    pool.join()

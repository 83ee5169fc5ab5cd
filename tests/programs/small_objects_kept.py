"""Keeps 50 small objects a step in a dict (a tuple key and a 3-item tuple value each, under 512
bytes: pymalloc's), as a cache keyed by request would. The dict's own table reaches malloc as it
grows; the objects themselves only with PYTHONMALLOC=malloc."""
import tleak

cache = {}
for step in tleak.iterations(range(120)):
    for request in range(step * 50, step * 50 + 50):
        cache[("user", request)] = (request, request + 1, request + 2)  # KEEP
print("kept", len(cache))

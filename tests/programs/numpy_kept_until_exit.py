"""Keeps an array every 2 ms for a second, without marks (tleak samples it by time), then exits:
the interpreter frees what the loop kept as it finalizes, and an object finalized after that list
allocates for 300 ms more, so that time samples would fall in the teardown."""
import time

import numpy as np


class SlowToFinalize:
    # Its own reference: the module's names are cleared as the interpreter finalizes.
    def __del__(self, monotonic=time.monotonic):
        end = monotonic() + 0.3
        while monotonic() < end:
            bytearray(4096)


kept = []
end = time.monotonic() + 1.0
while time.monotonic() < end:
    kept.append(np.ones(1000))  # KEEP
    time.sleep(0.002)
slow = SlowToFinalize()
print("kept", len(kept) > 100)

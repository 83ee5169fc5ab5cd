"""Objects whose only reference lies in an instance's attribute values, in a pymalloc block a bytes
object had just been freed from: the values' first words (room for their insertion order, mostly
unwritten) still hold that bytes object's header. Ten strings of 3,000 B and more (KEPT), each
reachable through its instance, from the list `kept`, until the program leaves by os._exit.
Expected: nothing leaked (memcheck: 0 B definitely or indirectly lost)."""
import os


class Many:
    def __init__(self):
        for i in range(20):
            setattr(self, "a%d" % i, None)


def keep(size):
    junk = bytes(200)  # a block of the size class the values take next
    del junk
    kept = Many.__new__(Many)  # values for every attribute Many's instances have, none set
    kept.a0 = "x" * size  # KEPT
    return kept


def scrub():
    # The interpreter's frames kept the strings' addresses in slots since popped: written over.
    a = b = c = d = e = f = g = h = i = j = k = l = m = n = o = p = q = r = s = t = u = v = w = x = y = z = None
    return [None] * 10


warm = [Many() for _ in range(3)]  # Many's shared keys grown to their 20 attributes
kept = [keep(3000 + i) for i in range(10)]
scrub()
os._exit(0)

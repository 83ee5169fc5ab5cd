"""Iteration marks and snapshots for a Python program run under `tleak run -- python3 ...`.

Without tleak every call is a no-op, so the same script runs unchanged:

    import tleak
    for step in range(100):
        train_step()
        tleak.mark_iteration()
    tleak.snapshot("after-training")

or, for a loop, `for batch in tleak.iterations(loader): ...`, which marks after each item.
"""

import ctypes as _ctypes

__all__ = ["attached", "mark_iteration", "snapshot", "iterations"]


def _agent_function(name, argtypes):
    try:
        function = getattr(_ctypes.CDLL(None), name)
    except (AttributeError, OSError):
        return None
    function.argtypes = argtypes
    function.restype = None
    return function


_mark = _agent_function("tleak_agent_mark_iteration", [])
_snapshot = _agent_function("tleak_agent_snapshot", [_ctypes.c_char_p])
_recording = _agent_function("tleak_agent_recording", [])
if _recording is not None:
    _recording.restype = _ctypes.c_int


def attached():
    """Whether tleak records this process (not a child it forked or started, which inherit the
    agent but are not recorded)."""
    return _recording is not None and _recording() != 0


def mark_iteration():
    """One iteration of the program's loop is over: tleak samples every site's live bytes here."""
    if _mark is not None:
        _mark()


def snapshot(name="snapshot"):
    """Writes a full report of the live heap now, next to the final report."""
    if _snapshot is not None:
        _snapshot(str(name).encode("utf-8", "replace")[:255])


def iterations(iterable):
    """Yields each item of `iterable`, marking an iteration after the loop body is done with it."""
    for item in iterable:
        yield item
        mark_iteration()

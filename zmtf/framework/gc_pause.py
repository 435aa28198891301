"""gc_paused: no cyclic garbage collection while a graph is encoded, parsed, planned or
partitioned.

Why: setting up a step allocates a few objects per node that all live on (operations, plan
nodes, slot tables, partition dicts). Meanwhile CPython's collector rescans the long-lived
heap, which on a master holds several copies of the graph, each time the survivors grow by a
quarter. At 100k nodes that was over half of a cold run through a cluster (34.9 s against
16.4 s with the collector off, same machine and load; bench/scaling.py) and it grew faster
than the graph. A setup makes no garbage cycles worth collecting before it ends; the
collector runs as usual once the outermost pause is over. Pauses nest and may overlap
across threads: the collector comes back when the last one ends, and only if it was on.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from typing import Iterator

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic collector is off inside (reference counting still frees everything acyclic)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


__all__ = ["gc_paused"]

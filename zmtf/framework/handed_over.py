"""Arrays whose only holder hands them to the runtime: a kernel may keep one instead of copying.

Why: ``Saver.restore`` reads each tensor of a checkpoint into a fresh array that nobody else
ever sees, then feeds it to its variable's Assign, which stores a private copy. For a 200 MB
checkpoint that copy is a second 200 MB allocation and memcpy per restore. TensorFlow avoids it
with ``forward_input`` (a buffer whose refcount is one becomes the output); Python has no such
count that one can trust, so the holder says so explicitly: it ``hand_over``s the arrays before
the run, the kernel ``take``s one (once: a second taker copies), and the holder ``withdraw``s
whatever was not taken when the run returns. Process-local: a value that crosses the wire is a
new array on the other side and is copied there as before.

Only code that created an array and never lets it escape may hand it over: whoever takes it
may update it in place for ever after.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from typing import Any

import numpy as np

_given: dict[int, weakref.ref[Any]] = {}
_lock = threading.Lock()


def hand_over(arrays: Iterable[Any]) -> None:
    """Offer ``arrays`` (numpy arrays their caller alone holds) to the next kernel that takes one."""
    with _lock:
        for array in arrays:
            if isinstance(array, np.ndarray):
                _given[id(array)] = weakref.ref(array)


def take(array: Any) -> bool:
    """Whether ``array`` was handed over and is now the caller's to keep (at most one caller)."""
    if not _given:   # the usual case: nothing handed over, no lock
        return False
    with _lock:
        ref = _given.get(id(array))
        if ref is None or ref() is not array:
            return False
        del _given[id(array)]
        return True


def withdraw(arrays: Iterable[Any]) -> None:
    """Take back whatever of ``arrays`` no kernel took (the run failed, or ran elsewhere)."""
    with _lock:
        for array in arrays:
            ref = _given.get(id(array))
            if ref is not None and ref() is array:
                del _given[id(array)]

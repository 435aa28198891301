"""BufferPool: reuse big kernel output buffers instead of faulting in fresh pages every step.

On this VM a fresh 64 MB array costs 40-150 ms of page faults (transparent huge pages
make it vary run to run) while the add that fills it takes 5-7 ms: TF avoids this with its
BFC allocator, zmtf with this pool. A buffer goes back to the free list once nothing but
the pool refers to it (checked with its reference count, so a fetched result the caller
keeps is never reused), so no step has to say when its values die.
"""

from __future__ import annotations

import sys
import threading
from collections import defaultdict
from typing import Any

import numpy as np

MIN_POOLED_BYTES = 1 << 20          # smaller arrays come from malloc's own free lists
_OWNER_REFS = sys.getrefcount(np.empty(1)) + 1  # the pool's list entry + getrefcount's argument


class BufferPool:
    """Hands out arrays of big sizes from recycled memory; thread-safe."""

    def __init__(self, capacity_bytes: int = 2 << 30) -> None:
        self._capacity = capacity_bytes
        self._lent: list[np.ndarray] = []          # flat uint8 owners currently handed out
        self._free: dict[int, list[np.ndarray]] = defaultdict(list)
        self._held = 0                             # bytes owned by the pool (lent + free)
        self._lock = threading.Lock()

    def empty(self, shape: Any, dtype: Any) -> np.ndarray:
        """Like np.empty, from reused memory when the array is big."""
        dtype = np.dtype(dtype)
        if dtype.hasobject:  # string tensors hold Python objects: never raw recycled bytes
            return np.empty(shape, dtype)
        count = 1
        for d in (shape if isinstance(shape, tuple) else tuple(np.atleast_1d(shape))):
            count *= int(d)
        nbytes = count * dtype.itemsize
        if nbytes < MIN_POOLED_BYTES:
            return np.empty(shape, dtype)
        with self._lock:
            owner = self._take(nbytes)
        return owner.view(dtype).reshape(shape)

    def _take(self, nbytes: int) -> np.ndarray:
        free = self._free.get(nbytes)
        if not free:
            self._collect()
            free = self._free.get(nbytes)
        if free:
            owner = free.pop()
        else:
            if self._held + nbytes > self._capacity:
                self._drop_free()
            owner = np.empty(nbytes, np.uint8)
            if self._held + nbytes <= self._capacity:
                self._held += nbytes
            else:
                return owner  # over capacity: an untracked plain allocation
        self._lent.append(owner)
        return owner

    def _collect(self) -> None:
        still_lent = []
        for owner in self._lent:
            if sys.getrefcount(owner) <= _OWNER_REFS + 1:  # + the loop variable
                self._free[owner.nbytes].append(owner)
            else:
                still_lent.append(owner)
        self._lent = still_lent

    def _drop_free(self) -> None:
        for buffers in self._free.values():
            for owner in buffers:
                self._held -= owner.nbytes
        self._free.clear()

    def release_free(self) -> int:
        """Hand the buffers nobody uses back to the allocator; the bytes released. For a
        server that just closed sessions whose received tensors they were."""
        with self._lock:
            self._collect()
            held = self._held
            self._drop_free()
            return held - self._held

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"held_bytes": self._held, "lent": len(self._lent),
                    "free": sum(len(v) for v in self._free.values())}

"""Best fit with coalescing: how a GPU's memory is carved into tensors, as TF's BFC allocator.

The allocator owns address ranges ("regions") that its caller got from the device, and
hands out 256-byte-aligned chunks of them: the smallest free chunk that fits (lowest
address on a tie), split so the rest stays free; a freed chunk merges with free neighbours
of its region at once, so a step that frees what it allocated leaves one free chunk per
region. Regions are never given back (TF gives none back either: ``cudaFree`` synchronizes
the device, and a region freed now is asked for again next step).

Growth (TF's two modes): without it the caller reserves the whole limit as one region up
front (less if the device has less: what it gets becomes the limit); with it (``allow_growth``) a region is added when no free chunk fits, starting at
1 MiB and doubling, never past the limit. A request nothing can satisfy raises
``Exhausted`` with the numbers a person needs (the caller words the error).

No device code here: addresses are plain ints, so the policy is testable anywhere. Frees
may come from garbage-collection finalizers at any moment, even on a thread that is inside
``allocate``; they queue and are applied under the lock (see ``free``).
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import asdict, dataclass
from typing import Callable

#: Every chunk starts and ends on this boundary (TF's kMinAllocationSize; cudaMalloc's
#: alignment, and what vectorized loads want).
ALIGNMENT = 256
#: allow_growth's first region (TF 1.x's BFC starts at 1 MiB), doubled for each next one.
FIRST_GROWTH_REGION = 1 << 20


def rounded(nbytes: int) -> int:
    """The chunk size a request of ``nbytes`` takes: a multiple of ALIGNMENT, at least one."""
    return max(ALIGNMENT, -(-int(nbytes) // ALIGNMENT) * ALIGNMENT)


@dataclass(eq=False, slots=True)
class Chunk:
    """A piece of one region: ``size`` bytes at ``address``, free or handed out. ``prev``
    and ``next`` are its neighbours in the region (address order), for coalescing."""

    address: int
    size: int
    region: int                  # the region's base address
    free: bool = True
    prev: Chunk | None = None
    next: Chunk | None = None


@dataclass(frozen=True, slots=True)
class MemoryStats:
    """One allocator's accounting, with TF's AllocatorStats names (bytes unless said)."""

    num_allocs: int              # chunks handed out since the start
    bytes_in_use: int            # held by live chunks (their rounded sizes)
    peak_bytes_in_use: int
    largest_alloc_size: int
    bytes_limit: int             # the most this allocator may reserve
    bytes_reserved: int          # taken from the device (sum of the regions)
    regions: int
    bytes_free: int              # reserved and not in use
    largest_free_block_bytes: int
    #: 1 - largest free chunk / all free bytes: 0 when the free memory is one piece (or none)
    fragmentation: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


class Exhausted(Exception):
    """No chunk of ``size`` bytes can be had within the limit."""

    def __init__(self, requested: int, size: int, stats: MemoryStats) -> None:
        super().__init__(f"{requested} bytes (rounded to {size}) do not fit")
        self.requested, self.size, self.stats = requested, size, stats


class BestFitAllocator:
    """Chunks of regions obtained through ``extend(size) -> base address`` (which may raise:
    the device is out of memory), within ``limit`` bytes in all."""

    def __init__(self, limit: int, extend: Callable[[int], int], *, allow_growth: bool) -> None:
        self.limit = int(limit) // ALIGNMENT * ALIGNMENT
        self.allow_growth = allow_growth
        self._extend = extend
        self._free: list[tuple[int, int]] = []        # (size, address) of free chunks, sorted
        self._chunks: dict[int, Chunk] = {}            # free chunks by address
        self._regions: dict[int, int] = {}             # base address -> size
        self._next_region = min(self.limit, FIRST_GROWTH_REGION)
        self._lock = threading.Lock()
        self._pending: list[Chunk] = []                # frees not applied yet (see free)
        self._num_allocs = self._in_use = self._peak = self._largest = 0

    @property
    def reserved(self) -> int:
        return sum(self._regions.values())

    def reserve(self) -> int:
        """Without growth: take the whole limit now, as one region (TF's default). When the
        device has less, back off by 10% at a time, as TF does, down to ``FIRST_GROWTH_REGION``
        (then the device's error is raised); the bytes reserved, which become the limit."""
        with self._lock:
            if self._regions or not self.limit:
                return self.reserved
            size = self.limit
            while True:
                try:
                    self._add_region(size)
                    break
                except Exception:  # noqa: BLE001 - the device's own out-of-memory error
                    size = int(size * 0.9) // ALIGNMENT * ALIGNMENT
                    if size < min(self.limit, FIRST_GROWTH_REGION):
                        raise
            self.limit = size
            return size

    def allocate(self, nbytes: int) -> Chunk:
        size = rounded(nbytes)
        with self._lock:
            self._apply_frees()
            chunk = self._best_fit(size)
            if chunk is None:
                chunk = self._grow_for(nbytes, size)
            self._take(chunk, size)
            self._num_allocs += 1
            self._in_use += chunk.size
            self._peak = max(self._peak, self._in_use)
            self._largest = max(self._largest, chunk.size)
            return chunk

    def free(self, chunk: Chunk) -> None:
        """Give ``chunk`` back. It is queued, then applied now if the lock is free, else by
        the next call that takes the lock: a finalizer may run inside ``allocate`` on this
        very thread, where touching the free list would corrupt it."""
        self._pending.append(chunk)                     # atomic under the GIL
        if self._lock.acquire(blocking=False):
            try:
                self._apply_frees()
            finally:
                self._lock.release()

    def stats(self) -> MemoryStats:
        with self._lock:
            self._apply_frees()
            return self._stats_locked()

    # -- under the lock --------------------------------------------------------------------

    def _best_fit(self, size: int) -> Chunk | None:
        at = bisect.bisect_left(self._free, (size, -1))
        if at == len(self._free):
            return None
        return self._chunks[self._free[at][1]]

    def _grow_for(self, nbytes: int, size: int) -> Chunk:
        """A new region that holds ``size``, when growth allows one within the limit."""
        room = self.limit - self.reserved
        if not self.allow_growth or room < size:
            raise Exhausted(nbytes, size, self._stats_locked())
        region = self._next_region
        while region < size:
            region *= 2
        region = min(region, room)
        try:
            chunk = self._add_region(region)
        except Exception:  # noqa: BLE001 - the device's own out-of-memory error
            if region == size:
                raise
            chunk = self._add_region(size)   # the device has less than a doubling: just enough
        self._next_region = min(region * 2, self.limit)
        return chunk

    def _add_region(self, size: int) -> Chunk:
        base = int(self._extend(size))
        if base % ALIGNMENT:
            raise ValueError(f"region at {base:#x} is not {ALIGNMENT}-byte aligned")
        self._regions[base] = size
        chunk = Chunk(base, size, base)
        self._insert_free(chunk)
        return chunk

    def _take(self, chunk: Chunk, size: int) -> None:
        self._remove_free(chunk)
        chunk.free = False
        if chunk.size - size >= ALIGNMENT:               # split: the rest stays free
            rest = Chunk(chunk.address + size, chunk.size - size, chunk.region,
                         prev=chunk, next=chunk.next)
            if chunk.next is not None:
                chunk.next.prev = rest
            chunk.next, chunk.size = rest, size
            self._insert_free(rest)

    def _apply_frees(self) -> None:
        while self._pending:
            self._release(self._pending.pop())

    def _release(self, chunk: Chunk) -> None:
        if chunk.free:
            raise ValueError(f"chunk at {chunk.address:#x} freed twice")
        chunk.free = True
        self._in_use -= chunk.size
        after = chunk.next
        if after is not None and after.free:             # absorb the next chunk
            self._remove_free(after)
            chunk.size += after.size
            chunk.next = after.next
            if after.next is not None:
                after.next.prev = chunk
        before = chunk.prev
        if before is not None and before.free:           # the previous one absorbs this
            self._remove_free(before)
            before.size += chunk.size
            before.next = chunk.next
            if chunk.next is not None:
                chunk.next.prev = before
            chunk = before
        self._insert_free(chunk)

    def _insert_free(self, chunk: Chunk) -> None:
        bisect.insort(self._free, (chunk.size, chunk.address))
        self._chunks[chunk.address] = chunk

    def _remove_free(self, chunk: Chunk) -> None:
        at = bisect.bisect_left(self._free, (chunk.size, chunk.address))
        del self._free[at]
        del self._chunks[chunk.address]

    def _stats_locked(self) -> MemoryStats:
        free = sum(size for size, _ in self._free)
        largest = self._free[-1][0] if self._free else 0
        return MemoryStats(
            num_allocs=self._num_allocs, bytes_in_use=self._in_use, peak_bytes_in_use=self._peak,
            largest_alloc_size=self._largest, bytes_limit=self.limit, bytes_reserved=self.reserved,
            regions=len(self._regions), bytes_free=free, largest_free_block_bytes=largest,
            fragmentation=1.0 - largest / free if free else 0.0)

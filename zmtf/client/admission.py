"""Admission of AsyncSession runs in slices, so that a burst of submissions keeps the loop ticking.

Each run does its first part at once on the loop (plan the fetches, convert the feeds,
encode and send the request: tens of microseconds). asyncio runs every task made ready in a
turn before it looks at its timers and sockets again, so 1,000 runs submitted together
(``asyncio.gather``) held the loop ~100 ms: heartbeats, replies and other coroutines waited.
Here a run that starts after ``SLICE_RUNS`` others within ``SLICE_SECONDS`` waits its turn
in a queue; each loop turn lets the next ``SLICE_RUNS`` go, in order. A run on its own (or
a few a turn) never waits: one clock read and a comparison.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque

#: runs admitted within one slice before the next ones wait for a loop turn
SLICE_RUNS = 16
#: how long a slice lasts: runs admitted further apart than this never wait
SLICE_SECONDS = 0.002
_clock = time.perf_counter


class Admission:
    """The runs of one event loop: ``admit()`` returns None (go on) or a future to await first."""

    __slots__ = ("_loop", "_started", "_admitted", "_waiting", "_turn_set", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._started = -1.0   # when the current slice began
        self._admitted = 0     # runs admitted in it
        self._waiting: deque[asyncio.Future] = deque()
        self._turn_set = False

    def admit(self) -> asyncio.Future | None:
        if not self._waiting:
            now = _clock()
            if now - self._started > SLICE_SECONDS:
                self._started, self._admitted = now, 0
            if self._admitted < SLICE_RUNS:
                self._admitted += 1
                return None
        waiter = self._loop.create_future()
        self._waiting.append(waiter)
        if not self._turn_set:
            self._turn_set = True
            self._loop.call_soon(self._next_slice)
        return waiter

    def _next_slice(self) -> None:
        """A loop turn passed: the next ``SLICE_RUNS`` waiting runs go (cancelled ones skipped)."""
        self._turn_set = False
        self._started, self._admitted = _clock(), 0
        waiting = self._waiting
        while waiting and self._admitted < SLICE_RUNS:
            waiter = waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._admitted += 1
        if waiting:
            self._turn_set = True
            self._loop.call_soon(self._next_slice)

    def waiting(self) -> int:
        """Runs queued now (read by tests)."""
        return len(self._waiting)


_PER_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Admission] = (
    weakref.WeakKeyDictionary())


def admission_for(loop: asyncio.AbstractEventLoop) -> Admission:
    """The loop's Admission (made on first use): every AsyncSession on a loop shares it."""
    admission = _PER_LOOP.get(loop)
    if admission is None:
        admission = _PER_LOOP[loop] = Admission(loop)
    return admission

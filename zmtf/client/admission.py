"""Admission of AsyncSession runs in slices, so that a burst of submissions keeps the loop ticking.

Each run does its first part at once on the loop (plan the fetches, convert the feeds,
encode and send the request: tens of microseconds). asyncio runs every task made ready in a
turn before it looks at its timers and sockets again, so 1,000 runs submitted together
(``asyncio.gather``) held the loop ~100 ms: heartbeats, replies and other coroutines waited.
Here at most ``SLICE_RUNS`` runs start in one loop turn; the ones after them wait in a queue,
and each later turn lets the next ``SLICE_RUNS`` go, in order. A run on its own (or a few a
turn) never waits. Turns, not time: a slice that ended after 2 ms let a burst of slow runs
(a loaded machine: >125 us each) start all at once, which is when holding the loop hurts most.
"""

from __future__ import annotations

import asyncio
import weakref
from collections import deque

#: runs admitted in one loop turn before the next ones wait for the next turn
SLICE_RUNS = 16


class Admission:
    """The runs of one event loop: ``admit()`` returns None (go on) or a future to await first."""

    __slots__ = ("_loop", "_admitted", "_waiting", "_turn_set", "_reset_set", "__weakref__")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._admitted = 0     # runs admitted in this loop turn
        self._waiting: deque[asyncio.Future] = deque()
        self._turn_set = False    # _next_slice is scheduled
        self._reset_set = False   # _turn_passed is scheduled

    def admit(self) -> asyncio.Future | None:
        if not self._waiting and self._admitted < SLICE_RUNS:
            self._admitted += 1
            self._reset_next_turn()
            return None
        waiter = self._loop.create_future()
        self._waiting.append(waiter)
        if not self._turn_set:
            self._turn_set = True
            self._loop.call_soon(self._next_slice)
        return waiter

    def _reset_next_turn(self) -> None:
        if not self._reset_set:
            self._reset_set = True
            self._loop.call_soon(self._turn_passed)

    def _turn_passed(self) -> None:
        """A loop turn passed since runs were admitted: the next ones start a new slice,
        unless runs are queued (``_next_slice`` lets those go first)."""
        self._reset_set = False
        if not self._waiting:
            self._admitted = 0

    def _next_slice(self) -> None:
        """A loop turn passed: the next ``SLICE_RUNS`` waiting runs go (cancelled ones skipped)."""
        self._turn_set = False
        self._admitted = 0
        waiting = self._waiting
        while waiting and self._admitted < SLICE_RUNS:
            waiter = waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                self._admitted += 1
        if waiting:
            self._turn_set = True
            self._loop.call_soon(self._next_slice)
        else:
            self._reset_next_turn()

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

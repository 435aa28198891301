"""Deadlines of the step path: one loop timer for every in-flight request and step.

Each RunGraph request and each partition run has a deadline that almost never fires. An
asyncio ``call_later`` plus its ``cancel`` cost ~13 Python calls (TimerHandle, heap, the
loop's cancelled-timer count): on a worker, a ninth of a small step's calls. Here a
deadline is a heap entry and a cancelled one a cleared slot; one ``call_at`` stands for
the earliest, and cancelled entries are dropped once they are over half the heap (as
asyncio does with its own timers). Everything runs on the loop's thread.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
import weakref
from typing import Any, Callable

log = logging.getLogger("zmtf.deadlines")
_COMPACT_MIN = 64   # cancelled entries tolerated before the heap is rebuilt


class Deadline:
    """A pending deadline: ``cancel()`` it when its request or step ends first."""

    __slots__ = ("callback", "args", "_owner")

    def __init__(self, callback: Callable[..., Any], args: tuple, owner: Deadlines) -> None:
        self.callback: Callable[..., Any] | None = callback
        self.args = args
        self._owner = owner

    def cancel(self) -> None:
        if self.callback is not None:
            self.callback = self.args = None  # type: ignore[assignment]
            self._owner._cancelled += 1


class Deadlines:
    """The deadlines of one event loop (see ``deadlines_for``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._cancelled = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = float("inf")

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Deadline:
        """Call ``callback(*args)`` on the loop in ``delay`` s unless cancelled first."""
        when = time.monotonic() + delay   # the loop's clock (asyncio uses time.monotonic)
        entry = Deadline(callback, args, self)
        heap = self._heap
        heapq.heappush(heap, (when, next(self._order), entry))
        if when < self._timer_at:
            self._arm(when)
        elif self._cancelled > _COMPACT_MIN and self._cancelled * 2 > len(heap):
            self._compact()
        return entry

    def _arm(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = self._loop.call_at(when, self._fire)

    def _compact(self) -> None:
        self._heap = [item for item in self._heap if item[2].callback is not None]
        heapq.heapify(self._heap)
        self._cancelled = 0

    def _fire(self) -> None:
        self._timer, self._timer_at = None, float("inf")
        heap, now = self._heap, time.monotonic()
        due = []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)[2]
            if entry.callback is None:
                self._cancelled -= 1
            else:
                due.append(entry)
        while heap and heap[0][2].callback is None:   # no timer for a cancelled head
            heapq.heappop(heap)
            self._cancelled -= 1
        if heap:
            self._arm(heap[0][0])
        for entry in due:
            callback, args = entry.callback, entry.args
            entry.callback = entry.args = None  # type: ignore[assignment]
            if callback is None:   # an earlier one of this batch cancelled it
                continue
            try:
                callback(*args)
            except Exception:  # noqa: BLE001 - the batch's other deadlines must still fire
                log.exception("a deadline's callback failed")


_PER_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines] = weakref.WeakKeyDictionary()


def deadlines_for(loop: asyncio.AbstractEventLoop) -> Deadlines:
    """The loop's Deadlines (made on first use)."""
    deadlines = _PER_LOOP.get(loop)
    if deadlines is None:
        deadlines = _PER_LOOP[loop] = Deadlines(loop)
    return deadlines

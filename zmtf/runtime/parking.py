"""Parking: waiters held as callbacks on shared state (a queue, an accumulator).

An op that cannot proceed yet parks its kernel's ``done`` callback instead of blocking a
thread; whoever changes the state completes what it can (``_serve``, under the lock). The
callbacks always run after the lock is released: a callback may continue another step,
which may touch the same state again.
"""

from __future__ import annotations

import copy
import threading
from collections import deque
from typing import Any, Callable

Done = Callable[[Any, "BaseException | None"], None]
# (callback, outputs, error) to run once the lock is released
Completion = tuple[Done, Any, "BaseException | None"]


class Parking:
    """Base of the shared states with parked waiters (each waiter has a ``done``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def _serve(self) -> list[Completion]:
        """The waiters that can complete now, removed from their tables (under the lock)."""
        return []

    def _park(self, table: deque, waiter: Any,
              refuse: Callable[[], "BaseException | None"] | None = None) -> Any:
        """Park ``waiter`` in ``table`` and serve; the waiter if it is still parked, else None.
        ``refuse()``, checked under the lock, fails it at once instead."""
        with self._lock:
            error = refuse() if refuse is not None else None
            if error is not None:
                completions: list[Completion] = [(waiter.done, None, error)]
            else:
                table.append(waiter)
                completions = self._serve()
            parked = waiter if error is None and waiter in table else None
        run(completions)
        return parked

    def _withdraw(self, table: deque, waiter: Any, error: BaseException) -> None:
        """Take back a parked waiter (its step aborted) and fail it; nothing if it completed."""
        with self._lock:
            try:
                table.remove(waiter)
            except ValueError:
                return
        waiter.done(None, error)

    def _fail_all(self, tables: list[deque], error: BaseException) -> None:
        """Fail every parked waiter (the session closed or was reset)."""
        with self._lock:
            waiters = [w for table in tables for w in table]
            for table in tables:
                table.clear()
        # one error each: the executor writes its waiter's node name into it
        run([(w.done, None, copy.copy(error)) for w in waiters])


def run(completions: list[Completion]) -> None:
    for done, outputs, error in completions:
        done(outputs, error)

"""Rendezvous: where a step's Send puts a tensor and its Recv picks it up.

Keys are per step (``step_id``, ``key``). A value may arrive before or after the consumer
asks; a consumer gives a callback instead of blocking a thread. Aborting a step fails every
waiting consumer of that step and any later one, so no Recv waits forever. A value that
arrives for a step already cleaned up (a late push after an abort) is dropped, not kept.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable

Callback = Callable[[Any, "BaseException | None"], None]
FINISHED_REMEMBERED = 100_000   # step ids whose late values are dropped (~10 MB of ints at most)


class Rendezvous:
    """Thread-safe (step_id, key) -> value table with one-shot callbacks."""

    def __init__(self) -> None:
        self._values: dict[tuple[int, str], Any] = {}
        # steps cleaned up lately: a value for one of them is dropped (bounded memory)
        self._finished: set[int] = set()
        self._finished_order: deque[int] = deque()
        self._waiters: dict[tuple[int, str], Callback] = {}
        self._aborted: dict[int, BaseException] = {}
        self._lock = threading.Lock()

    def put(self, step_id: int, key: str, value: Any) -> None:
        """Deliver ``value`` for ``key``; a waiting consumer is called on this thread."""
        with self._lock:
            if step_id in self._aborted or step_id in self._finished:
                return
            waiter = self._waiters.pop((step_id, key), None)
            if waiter is None:
                self._values[(step_id, key)] = value
                return
        waiter(value, None)

    def recv(self, step_id: int, key: str, callback: Callback) -> None:
        """Call ``callback(value, None)`` once the value is there, or ``(None, error)`` on abort."""
        with self._lock:
            error = self._aborted.get(step_id)
            if error is None:
                if (step_id, key) not in self._values:
                    self._waiters[(step_id, key)] = callback
                    return
                value = self._values.pop((step_id, key))
        if error is not None:
            callback(None, error)
        else:
            callback(value, None)

    def abort_step(self, step_id: int, error: BaseException) -> None:
        """Fail the step's waiting and future consumers with ``error``."""
        with self._lock:
            self._aborted[step_id] = error
            waiters = [(k, cb) for k, cb in self._waiters.items() if k[0] == step_id]
            for k, _ in waiters:
                del self._waiters[k]
            for k in [k for k in self._values if k[0] == step_id]:
                del self._values[k]
        for _, callback in waiters:
            callback(None, error)

    def aborted(self, step_id: int) -> BaseException | None:
        """The error a step was aborted with, if it was (and not cleaned up yet)."""
        return self._aborted.get(step_id)   # one dict read: atomic under the GIL, no lock

    def cleanup_step(self, step_id: int) -> None:
        """Forget everything about a finished step (and refuse its late values from now on)."""
        with self._lock:
            self._finished.add(step_id)
            self._finished_order.append(step_id)
            if len(self._finished_order) > FINISHED_REMEMBERED:
                self._finished.discard(self._finished_order.popleft())
            self._aborted.pop(step_id, None)
            for table in (self._values, self._waiters):
                for k in [k for k in table if k[0] == step_id]:
                    del table[k]

    def pending(self) -> int:
        with self._lock:
            return len(self._values) + len(self._waiters)

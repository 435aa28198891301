"""The master's session garbage collector: sessions that nobody closes are closed here.

A client that dies (kill -9, a lost machine) never sends CloseSession, and its session's
graph, its partitions on every task and their constants would stay for the life of the
servers. TF's master has the same collector (``Master(env, session_gc_seconds)``: sessions
not used for that long are closed). Here a session is idle when no request named it for
``idle`` seconds and none of its steps is running; it is then closed as CloseSession would
close it (its partitions deregistered on every task), and the freed memory is handed back
to the OS (a server otherwise keeps received buffers for reuse, ``runtime.buffer_pool``, and
freed heap, ``runtime.heap``).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any, Awaitable, Callable, Protocol

from zmtf.runtime.heap import returning_freed_memory

log = logging.getLogger("zmtf.master")

LONGEST_SWEEP_PERIOD = 30.0


class Sessions(Protocol):
    """What the collector needs of a master."""

    task: str   # the master's task, for the log

    def idle_sessions(self, idle: float) -> list[str]: ...

    def touch(self, handle: str) -> None: ...


class SessionCollector:
    """Every ``min(idle / 2, 30)`` s, closes (``close(handle)``) the sessions idle for ``idle`` s
    whose steps are not running (``busy(handle)``: a long step is not idleness), then
    ``release()``s the buffers the server keeps for reuse and trims the heap. ``collect``
    does the same for sessions known to be abandoned otherwise (``client_sessions``)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, sessions: Sessions, idle: float,
                 busy: Callable[[str], bool], close: Callable[[str], Awaitable[Any]],
                 release: Callable[[], Any] = lambda: None) -> None:
        self.idle = idle
        self.period = max(min(idle / 2, LONGEST_SWEEP_PERIOD), 0.05)
        self._loop = loop
        self._sessions = sessions
        self._busy = busy
        self._close = close
        self._release = release   # drops the buffers kept for reuse that nothing uses now
        self._timer: asyncio.TimerHandle | None = None
        self._collecting: set[asyncio.Future] = set()
        self._one_at_a_time = asyncio.Lock()
        self._closing: set[str] = set()   # sessions being collected (not swept again)
        self._stopped = False

    def start(self) -> None:
        """Sweep for idle sessions every period (not called when idleness collects nothing)."""
        self._timer = self._loop.call_later(self.period, self._sweep)

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
        for collecting in list(self._collecting):
            collecting.cancel()

    def collect(self, handles: list[str], why: str) -> None:
        """Close these sessions now (``why``: the log's reason), one collection at a time."""
        handles = [h for h in handles if h not in self._closing]
        if self._stopped or not handles:
            return
        self._closing.update(handles)
        collecting = asyncio.ensure_future(self._collect(handles, why))
        self._collecting.add(collecting)
        collecting.add_done_callback(self._collected)

    def _collected(self, collecting: asyncio.Future) -> None:
        self._collecting.discard(collecting)
        if not collecting.cancelled() and collecting.exception() is not None:
            log.warning("collecting sessions: %s", collecting.exception())

    def _sweep(self) -> None:
        self._timer = None
        idle = []
        for handle in self._sessions.idle_sessions(self.idle):
            if handle in self._closing:
                continue
            if self._busy(handle):
                self._sessions.touch(handle)   # idle from the end of its step on, not its start
            else:
                idle.append(handle)
        if idle:
            self.collect(idle, f"no request from its client for {self.idle:.1f} s "
                               f"(--session-gc-secs)")
        if not self._stopped:
            self.start()

    async def _collect(self, handles: list[str], why: str) -> None:
        try:
            async with self._one_at_a_time:   # the heap's thresholds are the process's
                for handle in handles:
                    log.info("%s closing session %s: %s", self._sessions.task, handle[:8], why)
                with returning_freed_memory():
                    results = await asyncio.gather(*[self._close(h) for h in handles],
                                                   return_exceptions=True)
                    gc.collect()   # a graph is cyclic (ops <-> graph): its arrays go with it
                    self._release()
                for handle, result in zip(handles, results):
                    if isinstance(result, Exception):
                        log.warning("closing session %s: %s", handle, result)
        finally:
            self._closing.difference_update(handles)

"""Liveness: how long a silent task is given before the steps that need it fail, and how a
task that was paused tells the work queued meanwhile (which its senders failed) from fresh work.

Two halves, because neither sees the other's fault:

* ZeroMQ's own connection heartbeats (``ZMQ_HEARTBEAT_IVL/TIMEOUT/TTL`` and
  ``ZMQ_HANDSHAKE_IVL``, set by ``sockets.heartbeats``) on every channel to another task: the peer's I/O thread answers
  them, so a dead process, a closed link and a SIGSTOPped process (its I/O thread stops too)
  all drop the connection within the liveness bound, and the calls waiting on it fail with
  UnavailableError naming the task. They cost no message of ours and nothing on the step path.
* ``PauseWatch``: a task cannot see that it was stopped, yet the requests its kernel queued
  meanwhile were failed by their senders (heartbeats or deadlines). A small thread ticks; a
  request read while the ticks stopped, or just after they resumed, counts as having arrived
  when they stopped: its deadline budget runs from there, and if that is longer ago than a
  peer waits, it is dropped instead of run. A failed step is then never applied afterwards.

The bound is one setting per process: ``ZMTF_LIVENESS_TIMEOUT`` (seconds), which
``python -m zmtf.server --liveness-timeout`` sets; every task of a cluster should use the same.
"""

from __future__ import annotations

import asyncio
import math
import os
import threading
import time

from zmtf.framework.errors import DeadlineExceededError, OpError, UnavailableError

LIVENESS_ENV = "ZMTF_LIVENESS_TIMEOUT"
DEFAULT_LIVENESS_SECONDS = 5.0
#: a resumed task treats what it reads this long after its ticks came back as possibly queued
#: during the pause (its I/O thread and its loop need a moment to read the backlog)
SETTLE_SECONDS = 0.5


def liveness_seconds() -> float:
    """The liveness bound of this process: ``ZMTF_LIVENESS_TIMEOUT`` or the default."""
    text = os.environ.get(LIVENESS_ENV, "").strip()
    if not text:
        return DEFAULT_LIVENESS_SECONDS
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0.05 <= seconds <= 3600:   # NaN fails this too
        raise ValueError(f"{LIVENESS_ENV}={text!r}: the liveness bound must be a number of "
                         f"seconds in [0.05, 3600]")
    return seconds


class PauseWatch:
    """When was this process last known to be running? A daemon thread ticks every ``tick``
    s; a gap in its ticks is a pause (SIGSTOP, a frozen VM), not a busy event loop, since a
    loop that holds the GIL still lets the thread tick between bytecodes."""

    def __init__(self, liveness: float) -> None:
        self.liveness = liveness
        #: a peer may fail our work once we were silent this long (its heartbeat timeout)
        self.stale_after = 2 * liveness / 3
        self.tick = min(0.1, liveness / 10)
        # a tick this late means the process did not run (a starved thread is late by less)
        self.late = self.tick + max(0.25, liveness / 10)
        self.last = time.monotonic()
        self.paused_from = -math.inf
        self.resumed_at = -math.inf
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zmtf-pause-watch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.tick):
            now = time.monotonic()
            if now - self.last > self.late:
                self.paused_from, self.resumed_at = self.last, now
            self.last = now

    def arrived_after(self, now: float) -> float:
        """The earliest time a request read at ``now`` may have reached this process."""
        last = self.last
        if now - last > self.late:   # the ticks stopped: paused until a moment ago
            return last
        if now - self.resumed_at < SETTLE_SECONDS:
            return self.paused_from
        return now

    def refusal(self, task: str, kind: str, number: int, timeout: float | None,
                late: float = 0.0, beat: LoopBeat | None = None) -> tuple[OpError | None, float]:
        """(an error if the request read now must not run, seconds it may have waited);
        ``kind`` and ``number`` name the request in the error (formatted only then).
        ``late``: seconds it took longer than usual to get here (``transit``: a stalled
        network, or a big message's own transfer). It counts against the deadline only: on
        a live connection its sender has not failed it for the liveness bound. With
        ``beat`` (the reading loop's), a loop that was stuck counts as a pause too.

        Nearly always (None, 0.0) after one clock read: only a request read during or just
        after a pause, or delivered late, has waited."""
        now = time.monotonic()
        paused, stale_after = now - self.arrived_after(now), self.stale_after
        if beat is not None and (now - beat.last > beat.late or
                                 now - beat.resumed_at < SETTLE_SECONDS):   # rare: no call else
            stuck_for = now - beat.arrived_after(now)
            if stuck_for > paused:   # peers fail calls to a stuck loop after L (Channel's ping)
                paused, stale_after = stuck_for, self.liveness
        waited = max(paused, late)
        if waited <= 0.0:
            return None, 0.0
        what = f"{kind} {number}"
        if timeout is not None and waited >= timeout:
            why = ("while this task (or its event loop) was paused" if paused >= late
                   else "on its way here (the network between us stalled or is slow)")
            return DeadlineExceededError(
                None, None, f"{what} was dropped on {task}: it may have waited {waited:.1f} s "
                f"{why}, past its deadline of {timeout:.3g} s"), waited
        if paused >= stale_after:
            return UnavailableError(
                None, None, f"{what} was dropped on {task}: this task (or its event loop) was "
                f"paused for {paused:.1f} s, longer than its peers wait for it (liveness bound "
                f"{self.liveness:g} s): they have failed the work sent meanwhile"), waited
        return None, waited

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(1.0)   # it wakes at once from its wait


class LoopBeat:
    """When did a server's event loop last run? A callback every ``tick`` s records it. A
    loop that was stuck (a handler that blocked it) still had its process running, so
    PauseWatch's thread saw no pause; yet the requests read once it runs again sat in the
    socket meanwhile, and peers failed them (``Channel``'s ping through the loop, after the
    liveness bound L): they count as having arrived when the beats stopped, as after a
    pause, and are dropped if that is L ago or more. A loop busy for less than L/2 (a
    long callback, a compile) is not taken for stuck."""

    def __init__(self, loop: asyncio.AbstractEventLoop, watch: PauseWatch) -> None:
        # a loop busy for less than half the bound is not stuck: no peer fails it for that
        self._loop, self._tick = loop, watch.tick
        self.late = max(watch.late, watch.liveness / 2)
        self.last = time.monotonic()
        self.stuck_from = -math.inf
        self.resumed_at = -math.inf
        self._handle: asyncio.TimerHandle | None = loop.call_later(self._tick, self._beat)

    def _beat(self) -> None:
        now = time.monotonic()
        if now - self.last > self.late:
            self.stuck_from, self.resumed_at = self.last, now
        self.last = now
        self._handle = self._loop.call_later(self._tick, self._beat)

    def arrived_after(self, now: float) -> float:
        """The earliest time a request this loop reads at ``now`` may have arrived."""
        last = self.last
        if now - last > self.late:   # the beats stopped: the loop was stuck until a moment ago
            return last
        if now - self.resumed_at < SETTLE_SECONDS:
            return self.stuck_from
        return now

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


_WATCH: PauseWatch | None = None
_WATCHERS = 0   # servers of this process that use the watch; its thread runs while any does
_WATCH_LOCK = threading.Lock()


def watch_pauses() -> PauseWatch:
    """This process's PauseWatch (one thread for all its servers), started by the first
    server that asks; ``unwatch_pauses()`` when that server stops."""
    global _WATCH, _WATCHERS
    with _WATCH_LOCK:
        if _WATCH is None:
            _WATCH = PauseWatch(liveness_seconds())
        _WATCHERS += 1
        return _WATCH


def unwatch_pauses() -> None:
    """A server stopped: the last one to stop ends the watch's thread (no thread outlives
    the servers)."""
    global _WATCH, _WATCHERS
    with _WATCH_LOCK:
        _WATCHERS = max(_WATCHERS - 1, 0)
        if _WATCHERS or _WATCH is None:
            return
        watch, _WATCH = _WATCH, None
    watch.stop()


__all__ = ["DEFAULT_LIVENESS_SECONDS", "LIVENESS_ENV", "LoopBeat", "PauseWatch",
           "liveness_seconds", "unwatch_pauses", "watch_pauses"]

"""What a task counts about itself, for ``python -m zmtf.status`` (and any metrics exporter).

The step path only increments plain ints here (a step, a partition, a message and its
bytes): no locks, no clock reads. Everything that costs more (rates, memory, uptime) is
computed when someone asks. All counters are touched on the server's event loop thread
only, so plain ``+=`` is exact. Rates come from a sample of the counters the loop takes
once a second (one timer per server), kept for ``WINDOW_SECS``: steps/s is the task's own
rate over its last ten seconds, not the asker's guess from two polls.

Readers (status replies, a Prometheus collector) call ``TaskStats.snapshot()``.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from zmtf.framework.versions import ZMTF_VERSION

SAMPLE_SECS = 1.0    # how often the loop samples the counters
WINDOW_SECS = 10     # how far back a rate looks


class Traffic:
    """ZeroMQ messages and their bytes, in and out, of one task's sockets (listeners and
    channels to peers all add to one). ``reactor.Reactor`` increments it per message."""

    __slots__ = ("bytes_in", "bytes_out", "messages_in", "messages_out")

    def __init__(self) -> None:
        self.bytes_in = self.bytes_out = self.messages_in = self.messages_out = 0


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The counters and rates of a task at one moment (plain numbers: for any reader)."""

    started_ms: int        # wall clock at start, ms since the epoch
    uptime_ms: int
    steps: int             # RunSteps finished as a master
    graphs: int            # RunGraphs finished as a worker
    steps_per_sec: float
    graphs_per_sec: float
    window_ms: int         # the span those rates cover (shorter just after start)
    bytes_in: int
    bytes_out: int
    messages_in: int
    messages_out: int
    rss_bytes: int


class TaskStats:
    """One server's counters: ``steps`` and ``graphs`` are incremented by the server's step
    handlers, ``traffic`` by its sockets; ``start``/``stop`` run the rate sampler."""

    __slots__ = ("steps", "graphs", "traffic", "_started_wall", "_started", "_samples", "_timer")

    def __init__(self) -> None:
        self.steps = 0
        self.graphs = 0
        self.traffic = Traffic()
        self._started_wall = time.time()
        self._started = time.monotonic()
        # (monotonic time, steps, graphs), oldest first; the start is the first sample
        self._samples: deque[tuple[float, int, int]] = deque(maxlen=WINDOW_SECS + 1)
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Count uptime from now and sample the counters on ``loop`` every SAMPLE_SECS."""
        self._started_wall, self._started = time.time(), time.monotonic()
        self._samples.clear()
        self._samples.append((self._started, self.steps, self.graphs))
        self._timer = loop.call_later(SAMPLE_SECS, self._sample, loop)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _sample(self, loop: asyncio.AbstractEventLoop) -> None:
        self._samples.append((time.monotonic(), self.steps, self.graphs))
        self._timer = loop.call_later(SAMPLE_SECS, self._sample, loop)

    def snapshot(self) -> Snapshot:
        now = time.monotonic()
        since, steps0, graphs0 = self._samples[0] if self._samples else (self._started, 0, 0)
        span = now - since
        steps_rate = (self.steps - steps0) / span if span > 0 else 0.0
        graphs_rate = (self.graphs - graphs0) / span if span > 0 else 0.0
        t = self.traffic
        return Snapshot(int(self._started_wall * 1000), int((now - self._started) * 1000),
                        self.steps, self.graphs, float(steps_rate), float(graphs_rate),
                        int(span * 1000), t.bytes_in, t.bytes_out, t.messages_in,
                        t.messages_out, rss_bytes())


def rss_bytes() -> int:
    """This process's resident memory now (Linux: /proc/self/statm), else its peak (getrusage)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource   # not on every platform; the peak in KiB (bytes on macOS)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(peak) * (1 if os.uname().sysname == "Darwin" else 1024)


def status_fields(stats: TaskStats) -> dict[str, Any]:
    """A snapshot as the fields of the ``TaskStatus`` reply (wire.messages) that carry it."""
    s = stats.snapshot()
    return {"version": ZMTF_VERSION, "started_ms": s.started_ms, "uptime_ms": s.uptime_ms,
            "steps": s.steps, "graphs": s.graphs, "steps_per_sec": s.steps_per_sec,
            "graphs_per_sec": s.graphs_per_sec, "window_ms": s.window_ms,
            "bytes_in": s.bytes_in, "bytes_out": s.bytes_out, "messages_in": s.messages_in,
            "messages_out": s.messages_out, "rss_bytes": s.rss_bytes}

"""Step stats as a Chrome trace (chrome://tracing, Perfetto): what ProfilerHook writes.

One process row per device (task and device, so a cluster step shows every task), one
thread row per executor thread, one complete event ("ph": "X") per node run, times in
microseconds from the step's first node. Works on any objects with TF1's NodeTrace
fields (node_name, device, start, end, thread), local or from remote tasks.
"""

from __future__ import annotations

import json
from typing import Any


class Timeline:
    """``Timeline(run_metadata.step_stats).generate_chrome_trace_format()`` -> JSON text."""

    def __init__(self, step_stats: Any) -> None:
        self._stats = list(getattr(step_stats, "step_stats", step_stats) or [])

    def generate_chrome_trace_format(self, show_dataflow: bool = True, show_memory: bool = False) -> str:
        events: list[dict[str, Any]] = []
        devices: dict[str, int] = {}
        threads: dict[tuple[int, str], int] = {}
        origin = min((s.start for s in self._stats), default=0.0)
        for stat in sorted(self._stats, key=lambda s: s.start):
            pid = devices.get(stat.device)
            if pid is None:
                pid = devices[stat.device] = len(devices)
                events.append({"name": "process_name", "ph": "M", "pid": pid,
                               "args": {"name": stat.device}})
            tid = threads.get((pid, stat.thread))
            if tid is None:
                tid = threads[(pid, stat.thread)] = len(threads)
                events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                               "args": {"name": stat.thread}})
            events.append({"name": stat.node_name, "cat": "Op", "ph": "X", "pid": pid, "tid": tid,
                           "ts": round((stat.start - origin) * 1e6, 3),
                           "dur": round((stat.end - stat.start) * 1e6, 3),
                           "args": {"name": stat.node_name}})
        return json.dumps({"traceEvents": events}, indent=None)

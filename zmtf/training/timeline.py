"""Step stats as a Chrome trace (chrome://tracing, Perfetto): what ProfilerHook writes.

Follows the Trace Event Format: one process (pid) per task and device, named by a
``process_name`` metadata event ("ph": "M"), one thread row (tid) per executor thread
(``thread_name``), one complete event ("X") per node run, times in microseconds from the
step's first node. A tensor that crossed tasks is a flow: "s" on its _Send (or, for a value
a RunGraph reply carried to the master, on the node that made it) and "f" on its _Recv, one
id per pair, with the bytes and the time on the wire (recv's end - send's start). A
distributed step's stats are on the client's clock already (``distributed.trace_clock``);
how far each task's times may be off (stated on its RunGraph/RunStep span's timeline_label)
is shown in ``otherData`` and on its process row.

It reads TF's StepStats message (``run_metadata.step_stats``, zmtf's or TF's own) through
``formats.step_stats_proto.node_runs``; ``transfers`` and ``clock_bounds`` take those runs.
"""

from __future__ import annotations

import json
import re
from typing import Any

from zmtf.formats.step_stats_proto import node_runs

_RECV = re.compile(r"_recv/(?P<source>.+)/from(?P<src>_job.+)$")
_OUTPUT_SUFFIX = re.compile(r"_\d+$")
_RPC_SPANS = ("RunGraph", "RunStep")


def task_of(device: str) -> str:
    """'/job:ps/replica:0/task:0/device:CPU:0' -> '/job:ps/replica:0/task:0'."""
    return device.split("/device:")[0]


def transfers(stats: list[Any]) -> list[tuple[Any, Any]]:
    """(send, recv) NodeRun pairs of every tensor that crossed tasks: a _Recv with its
    _Send, or, carried by a RunGraph reply (no _Send), with the node that produced it."""
    by_task: dict[tuple[str, str], Any] = {}
    for s in stats:
        by_task.setdefault((task_of(s.device).replace("/", "_"), s.node_name), s)
    pairs = []
    for recv in stats:
        match = _RECV.match(recv.node_name)
        if match is None:
            continue
        source, src = match["source"], match["src"]
        dst = task_of(recv.device).replace("/", "_")
        send = (by_task.get((src, f"_send/{source}/to{dst}")) or by_task.get((src, source))
                or by_task.get((src, _OUTPUT_SUFFIX.sub("", source))))
        if send is not None:
            pairs.append((send, recv))
    return pairs


def clock_bounds(stats: list[Any]) -> dict[str, float]:
    """Task -> how far (s) its times may be off the client's clock: its RunGraph's bound
    (against the master) plus the RunStep's (the master against the client)."""
    step = [t.clock[1] for t in stats if t.node_name == "RunStep" and t.clock]
    master = [task_of(t.device) for t in stats if t.node_name == "RunStep" and t.clock]
    base = step[0] if step else 0.0
    bounds = {task_of(t.device): base for t in stats}
    for t in stats:
        if t.node_name == "RunGraph" and t.clock and task_of(t.device) not in master:
            bounds[task_of(t.device)] = base + t.clock[1]
    return bounds


class Timeline:
    """``Timeline(run_metadata.step_stats).generate_chrome_trace_format()`` -> JSON text."""

    def __init__(self, step_stats: Any, graph: Any = None) -> None:
        self._stats = node_runs(getattr(step_stats, "step_stats", step_stats))

    def generate_chrome_trace_format(self, show_dataflow: bool = True, show_memory: bool = False) -> str:
        meta: list[dict[str, Any]] = []
        events: list[dict[str, Any]] = []
        devices: dict[str, int] = {}
        threads: dict[tuple[int, str], int] = {}
        origin = min((s.start for s in self._stats), default=0.0)
        bounds = clock_bounds(self._stats)

        def us(seconds: float) -> float:
            return round((seconds - origin) * 1e6, 3)

        def row(stat: Any) -> tuple[int, int]:
            pid = devices.get(stat.device)
            if pid is None:
                pid = devices[stat.device] = len(devices)
                bound = bounds.get(task_of(stat.device), 0.0)
                meta.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                             "args": {"name": stat.device}})
                meta.append({"name": "process_labels", "ph": "M", "pid": pid, "tid": 0,
                             "args": {"labels": f"clock within ±{bound * 1e6:.0f} us"}})
                meta.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0,
                             "args": {"sort_index": pid}})
            tid = threads.get((pid, stat.thread))
            if tid is None:
                tid = threads[(pid, stat.thread)] = len(threads)
                meta.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid,
                             "args": {"name": stat.thread}})
            return pid, tid

        for stat in sorted(self._stats, key=lambda s: s.start):
            pid, tid = row(stat)
            args: dict[str, Any] = {"name": stat.node_name}
            if stat.bytes:
                args["bytes"] = stat.bytes
            events.append({"name": stat.node_name, "cat": "RPC" if stat.node_name in _RPC_SPANS else "Op",
                           "ph": "X", "pid": pid, "tid": tid, "ts": us(stat.start),
                           "dur": round((stat.end - stat.start) * 1e6, 3), "args": args})
        if show_dataflow:
            for flow_id, (send, recv) in enumerate(transfers(self._stats)):
                wire = {"bytes": recv.bytes or send.bytes,
                        "wire_us": round((recv.end - send.start) * 1e6, 3)}
                (spid, stid), (rpid, rtid) = row(send), row(recv)
                events.append({"name": recv.node_name, "cat": "DataFlow", "ph": "s", "id": flow_id,
                               "pid": spid, "tid": stid, "ts": us(send.start), "args": wire})
                events.append({"name": recv.node_name, "cat": "DataFlow", "ph": "f", "bp": "e",
                               "id": flow_id, "pid": rpid, "tid": rtid, "ts": us(recv.end), "args": wire})
        events.sort(key=lambda e: e["ts"])   # stable: a flow's end stays after its slice
        other = {"clock": "every task's times are on the client's clock (NTP-style offsets "
                          "from the RunStep/RunGraph stamps)",
                 "clock_bound_us": {task: round(b * 1e6, 3) for task, b in bounds.items()}}
        return json.dumps({"traceEvents": meta + events, "displayTimeUnit": "ms",
                           "otherData": other}, indent=None)

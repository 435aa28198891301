"""RunMetadata.step_stats with TF1's shape: ``dev_stats[i].device`` and ``.node_stats[j]``.

zmtf records one NodeTrace per node run (``runtime.executor``: node_name, device, start and
end in wall-clock seconds, thread, a transfer's bytes, a remote task's clock correction).
``StepStats`` keeps that flat list (it is one: ProfilerHook and the profiler iterate it) and
answers TF1's view of it, grouped by device, times in microseconds, on demand.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class NodeExecStats:
    """TF1's NodeExecStats: when one node ran (``all_start_micros`` since the epoch, the rest
    relative to it), on which thread, and TF1's ``timeline_label``."""

    node_name: str
    all_start_micros: int
    op_start_rel_micros: int
    op_end_rel_micros: int
    all_end_rel_micros: int
    scheduled_micros: int
    thread_id: int
    timeline_label: str
    bytes: int = 0   # a _Send's or _Recv's tensor (TF1 has it in ``output``; zmtf: here)


@dataclass
class DeviceStepStats:
    """TF1's DeviceStepStats: one device's node stats."""

    device: str
    node_stats: list[NodeExecStats] = field(default_factory=list)
    thread_names: dict[int, str] = field(default_factory=dict)


class StepStats(list):  # type: ignore[type-arg]
    """The step's NodeTraces (a list) with TF1's ``dev_stats`` and each task's ``clocks``.

    ``bound``: the nodes evaluated once when the step's plan was bound (constants), which no
    step runs; TF1's dev_stats list them, so ``dev_stats`` does, taking no time."""

    def __init__(self, traces: Any = (), bound: Any = ()) -> None:
        super().__init__(traces)
        self.bound = list(bound)

    @property
    def dev_stats(self) -> list[DeviceStepStats]:
        devices: dict[str, DeviceStepStats] = {}
        threads: dict[tuple[str, str], int] = {}
        for t in sorted([*self.bound, *self], key=lambda t: t.start):
            dev = devices.get(t.device)
            if dev is None:
                dev = devices[t.device] = DeviceStepStats(t.device)
            tid = threads.setdefault((t.device, t.thread), len(dev.thread_names))
            dev.thread_names[tid] = t.thread
            start = int(round(t.start * 1e6))
            length = max(0, int(round(t.end * 1e6)) - start)
            label = getattr(t, "label", "") or (f"{t.node_name} ({t.bytes} bytes)" if t.bytes
                                                else t.node_name)
            dev.node_stats.append(NodeExecStats(t.node_name, start, 0, length, length, start, tid,
                                                label, t.bytes))
        return list(devices.values())

    @property
    def clocks(self) -> dict[str, tuple[float, float]]:
        """Device of each corrected span -> (offset, bound) seconds: how far that task's clock
        was ahead of its caller's, and how far the estimate may be off."""
        return {t.device: t.clock for t in self if getattr(t, "clock", None) is not None}


def step_stats_of(traces: Any) -> StepStats:
    """A RunMetadata's step_stats from a list of NodeTraces."""
    return traces if isinstance(traces, StepStats) else StepStats(traces or [])

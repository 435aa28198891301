"""RunMetadata.step_stats as TF's messages (step_stats.proto): StepStats -> DeviceStepStats ->
NodeExecStats, TF's field numbers, built like every zmtf message (formats/proto_message.py).

The executor records a NodeTrace per node run (runtime.executor: name, device, start and end
in seconds, thread name, a transfer's bytes, a fused node's label, a remote task's clock
correction); a traced step's session turns them into these messages once, when the step ends
(``fill_step_stats``), so an untraced step builds nothing. Readers (the Chrome-trace Timeline,
tfprof) read the messages back as ``NodeRun``s (``node_runs``), so they read TF's own
RunMetadata too.

What TF's messages have no field for is written where TF's readers tolerate it, in
``timeline_label`` (TF1's timeline.py parses "name = Op(inputs)" and shows "unknown" for any
other text): a fused node's label lists its ops in that form already; a remote task's
RunGraph/RunStep span states its clock correction ("RunGraph (clock offset +12.000 us, within
±40.000 us)"; the times themselves are already corrected). The nodes evaluated once when the
step's plan was bound (constants, variable references), which no step runs, are listed as TF1
lists its constants, taking no time, labelled "name (bound)"; ``node_runs`` leaves them out
unless asked (``with_bound``), so the readers see what ran.
"""

from __future__ import annotations

import re
from itertools import chain
from operator import attrgetter
from typing import Any, Iterable, NamedTuple

from zmtf.formats.graph_def_proto import TensorShapeProto
from zmtf.formats.proto_message import Field, Message


class AllocationRecord(Message):
    FIELDS = (Field(1, "alloc_micros", "int64"), Field(2, "alloc_bytes", "int64"))


class AllocatorMemoryUsed(Message):
    FIELDS = (Field(1, "allocator_name", "string"), Field(2, "total_bytes", "int64"),
              Field(3, "peak_bytes", "int64"), Field(4, "live_bytes", "int64"),
              Field(5, "allocator_bytes_in_use", "int64"),
              Field(6, "allocation_records", "message", repeated=True, message=AllocationRecord))


class AllocationDescription(Message):
    FIELDS = (Field(1, "requested_bytes", "int64"), Field(2, "allocated_bytes", "int64"),
              Field(3, "allocator_name", "string"), Field(4, "allocation_id", "int64"),
              Field(5, "has_single_reference", "bool"), Field(6, "ptr", "uint64"))


class TensorDescription(Message):
    FIELDS = (Field(1, "dtype", "enum"), Field(2, "shape", "message", message=TensorShapeProto),
              Field(4, "allocation_description", "message", message=AllocationDescription))


class NodeOutput(Message):
    FIELDS = (Field(1, "slot", "int32"),
              Field(3, "tensor_description", "message", message=TensorDescription))


class MemoryStats(Message):
    FIELDS = (Field(1, "temp_memory_size", "int64"), Field(2, "device_temp_memory_size", "int64"),
              Field(3, "persistent_memory_size", "int64"),
              Field(4, "device_persistent_memory_size", "int64"),
              Field(5, "persistent_tensor_alloc_ids", "int64", repeated=True),
              Field(6, "device_persistent_tensor_alloc_ids", "int64", repeated=True))


class NodeExecStats(Message):
    """When one node ran: ``all_start_micros`` since the epoch, the rest relative to it (and
    the same in nanoseconds, as TF 2 writes them); on which thread; TF1's ``timeline_label``."""

    FIELDS = (Field(1, "node_name", "string"), Field(2, "all_start_micros", "int64"),
              Field(3, "op_start_rel_micros", "int64"), Field(4, "op_end_rel_micros", "int64"),
              Field(5, "all_end_rel_micros", "int64"),
              Field(6, "memory", "message", repeated=True, message=AllocatorMemoryUsed),
              Field(7, "output", "message", repeated=True, message=NodeOutput),
              Field(8, "timeline_label", "string"), Field(9, "scheduled_micros", "int64"),
              Field(10, "thread_id", "uint32"),
              Field(11, "referenced_tensor", "message", repeated=True,
                    message=AllocationDescription),
              Field(12, "memory_stats", "message", message=MemoryStats),
              Field(13, "all_start_nanos", "int64"), Field(14, "op_start_rel_nanos", "int64"),
              Field(15, "op_end_rel_nanos", "int64"), Field(16, "all_end_rel_nanos", "int64"),
              Field(17, "scheduled_nanos", "int64"))


class DeviceStepStats(Message):
    """One device's node stats; ``thread_names`` names each ``thread_id``."""

    FIELDS = (Field(1, "device", "string"),
              Field(2, "node_stats", "message", repeated=True, message=NodeExecStats),
              Field(3, "thread_names", "map", key="uint32", value="string"))


class StepStats(Message):
    """One traced step: ``dev_stats``, a DeviceStepStats per device that ran nodes."""

    FIELDS = (Field(1, "dev_stats", "message", repeated=True, message=DeviceStepStats),)


# ---- NodeTraces -> messages (once per traced step) ----------------------------------------------
def fill_step_stats(message: Any, traces: Iterable[Any], bound: Iterable[Any] = (),
                    wall_offset: float = 0.0) -> None:
    """Write NodeTraces (``runtime.executor.NodeTrace`` or alike: node_name, device, start,
    end, thread, bytes, clock, label) into an empty StepStats ``message``, grouped by device
    in order of start. ``bound``: nodes evaluated when the plan was bound, at the step's start
    (no time). ``wall_offset``: added to the traces' times to make them seconds since the
    epoch (kept apart until they are integer nanoseconds: no float rounding at the epoch)."""
    message.SetInParent()   # traced: HasField("step_stats") even for a step that ran nothing
    devices: dict[str, Any] = {}
    threads: dict[tuple[str, str], int] = {}
    offset_ns = _nanos(wall_offset)
    ordered = chain(((t, True) for t in bound),
                    ((t, False) for t in sorted(traces, key=attrgetter("start"))))
    for t, is_bound in ordered:
        name, device = t.node_name, t.device
        dev = devices.get(device)
        if dev is None:
            dev = devices[device] = message.dev_stats.add(device=device)
        tid = threads.get((device, t.thread))
        if tid is None:
            tid = threads[(device, t.thread)] = len(dev.thread_names)
            dev.thread_names[tid] = t.thread
        start_ns = offset_ns + _nanos(t.start)
        nanos = offset_ns + _nanos(t.end) - start_ns
        nanos = nanos if nanos > 0 else 0
        start_us = (start_ns + 500) // 1000
        micros = (start_ns + nanos + 500) // 1000 - start_us
        if is_bound:
            label = name + _BOUND
        elif t.clock is not None:
            label = (f"{name} (clock offset {t.clock[0] * 1e6:+.3f} us, "
                     f"within ±{t.clock[1] * 1e6:.3f} us)")
        else:
            label = t.label or (f"{name} ({t.bytes} bytes)" if t.bytes else name)
        stats = dev.node_stats.add(
            node_name=name, all_start_micros=start_us, op_end_rel_micros=micros,
            all_end_rel_micros=micros, scheduled_micros=start_us, thread_id=tid,
            timeline_label=label, all_start_nanos=start_ns, op_end_rel_nanos=nanos,
            all_end_rel_nanos=nanos, scheduled_nanos=start_ns)
        if t.bytes:   # a _Send's or _Recv's tensor: TF keeps it in the output's allocation
            described = stats.output.add(slot=0).tensor_description.allocation_description
            described.requested_bytes = described.allocated_bytes = t.bytes


def _nanos(seconds: float) -> int:
    if 0.0 <= seconds < 4e6:   # a perf_counter time: exact to the nanosecond as one float
        return int(seconds * 1e9 + 0.5)
    whole = int(seconds)   # seconds * 1e9 as a float would round to 256 ns at today's epoch
    return whole * 1_000_000_000 + int(round((seconds - whole) * 1e9))


_BOUND = " (bound)"
_CLOCK = re.compile(r" \(clock offset (?P<offset>[-+][0-9.]+) us, within ±(?P<bound>[0-9.]+) us\)$")


# ---- messages -> runs (the readers: timeline, tfprof) --------------------------------------------
class NodeRun(NamedTuple):
    """One node run of a StepStats, as the readers use it: seconds since the epoch, the
    thread's name, the bytes of its outputs, and the clock correction a span states."""

    node_name: str
    device: str
    start: float
    end: float
    thread: str
    bytes: int
    clock: tuple[float, float] | None
    label: str


def node_runs(step_stats: Any, with_bound: bool = False) -> list[NodeRun]:
    """Every node run of a StepStats message (zmtf's or TF's), device by device; the nodes
    bound with the step's plan (no run, "name (bound)") only ``with_bound``."""
    runs = []
    for dev in step_stats.dev_stats:
        names = dev.thread_names
        for n in dev.node_stats:
            if n.all_start_nanos:
                start = n.all_start_nanos * 1e-9
                end = start + n.all_end_rel_nanos * 1e-9
            else:   # TF1 writes micros only
                start = n.all_start_micros * 1e-6
                end = start + n.all_end_rel_micros * 1e-6
            size = sum(o.tensor_description.allocation_description.requested_bytes
                       for o in n.output)
            label = n.timeline_label
            if not with_bound and label == n.node_name + _BOUND:
                continue
            match = _CLOCK.search(label)
            clock = None if match is None else (float(match["offset"]) * 1e-6,
                                                float(match["bound"]) * 1e-6)
            runs.append(NodeRun(n.node_name, dev.device, start, end,
                                names.get(n.thread_id, str(n.thread_id)), size, clock, label))
    return runs

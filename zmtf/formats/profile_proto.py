"""What ``tf.profiler.profile`` returns: TF's GraphNodeProto and MultiGraphNodeProto fields.

Only the fields zmtf measures are here: parameters, float ops, execution times and run
counts. zmtf records no allocations, so the memory fields (``requested_bytes``, ...) are
absent rather than a misleading 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the per-node numbers; each also exists as ``total_<name>`` (the node and what it accounts)
STAT_FIELDS = ("run_count", "exec_micros", "accelerator_exec_micros", "cpu_exec_micros",
               "parameters", "float_ops")


@dataclass
class _NodeStats:
    name: str = ""
    run_count: int = 0
    exec_micros: int = 0
    accelerator_exec_micros: int = 0
    cpu_exec_micros: int = 0
    parameters: int = 0
    float_ops: int = 0
    total_run_count: int = 0
    total_exec_micros: int = 0
    total_accelerator_exec_micros: int = 0
    total_cpu_exec_micros: int = 0
    total_parameters: int = 0
    total_float_ops: int = 0
    total_definition_count: int = 0


@dataclass
class GraphNodeProto(_NodeStats):
    """One node of the scope or graph view; ``children`` are the displayed nodes under it."""

    devices: list[str] = field(default_factory=list)
    shapes: list[list[int]] = field(default_factory=list)
    children: list[GraphNodeProto] = field(default_factory=list)


@dataclass
class MultiGraphNodeProto(_NodeStats):
    """One op type of the op view; ``graph_nodes`` are its graph nodes, ``children`` holds
    the next op type in display order (TF's op view is a chain, each total counting the rest)."""

    graph_nodes: list[GraphNodeProto] = field(default_factory=list)
    children: list[MultiGraphNodeProto] = field(default_factory=list)

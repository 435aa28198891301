"""plan_step: fetches + feeds + targets + devices -> a StepPlan that an executor can run.

Pure: one function shared by the local session and (later) the master service. The plan
numbers every needed node, gives each node output a value slot, and lists for each node
its input slots, its consumers and how many predecessors it waits for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Operation, Tensor
from zmtf.placement.placer import Placement, Supports, kernel_dtype, place
from zmtf.placement.pruning import predecessors, prune


@dataclass(frozen=True, slots=True)
class PlannedNode:
    """One node to execute: where, with which inputs, and who waits for it."""

    name: str
    op_type: str
    device: str
    kernel_dtype: str | None
    attrs: dict[str, Any]
    input_slots: tuple[int, ...]
    output_slots: tuple[int, ...]   # a fed output gets a private slot: the fed value wins
    consumers: tuple[int, ...]
    pending_count: int


@dataclass(frozen=True, slots=True)
class StepPlan:
    """Everything an executor needs for one (fetches, feeds, targets) signature."""

    nodes: tuple[PlannedNode, ...]
    num_slots: int
    feed_slots: tuple[int, ...]          # slot of each fed tensor, in feed order
    fetch_slots: tuple[int, ...]         # slot of each fetched tensor, in fetch order
    roots: tuple[int, ...]               # nodes with nothing to wait for
    placement: Placement


def plan_step(fetches: Sequence[Tensor], feeds: Sequence[Tensor], targets: Sequence[Operation],
              devices: Sequence[str], supports: Supports, *, task: DeviceSpec,
              previous: dict[str, str] | None = None, allow_soft_placement: bool = False) -> StepPlan:
    """Prune, place and number the nodes of one step."""
    fed = set(feeds)
    ops = prune(fetches, targets, fed)
    _check_placeholders_fed(ops, fed)
    placement = place(ops, devices, supports, task=task, previous=previous,
                      allow_soft_placement=allow_soft_placement)
    index = {id(op): i for i, op in enumerate(ops)}
    slot_of: dict[Tensor, int] = {t: i for i, t in enumerate(feeds)}
    num_slots = len(slot_of)
    output_slots = []
    for op in ops:
        slots = []
        for t in op.outputs:
            if t not in slot_of:
                slot_of[t] = num_slots
            slots.append(num_slots)
            num_slots += 1
        output_slots.append(tuple(slots))
    consumers: list[list[int]] = [[] for _ in ops]
    pending = [0] * len(ops)
    for i, op in enumerate(ops):
        for p in predecessors(op, fed):
            consumers[index[id(p)]].append(i)
            pending[i] += 1
    nodes = tuple(
        PlannedNode(op.name, op.type, placement.devices[op.name], kernel_dtype(op),
                    {**op.attrs, "_node_name": op.name},
                    tuple(slot_of[t] for t in op.inputs), output_slots[i],
                    tuple(consumers[i]), pending[i])
        for i, op in enumerate(ops))
    return StepPlan(nodes, num_slots, tuple(slot_of[t] for t in feeds),
                    tuple(slot_of[t] for t in fetches),
                    tuple(i for i in range(len(ops)) if pending[i] == 0), placement)


def _check_placeholders_fed(ops: list[Operation], fed: set[Tensor]) -> None:
    for op in ops:
        if op.type == "Placeholder" and op.outputs[0] not in fed:
            t = op.outputs[0]
            shape = "unknown" if t.shape.ndims is None else \
                "[" + ",".join("?" if d is None else str(d) for d in t.shape.as_list()) + "]"
            raise InvalidArgumentError(
                None, None,
                f"You must feed a value for placeholder tensor '{op.name}' with dtype "
                f"{t.dtype.name} and shape {shape}: pass feed_dict={{{op.name}: value}} to run().",
                node_name=op.name)

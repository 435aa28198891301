"""plan_step: fetches + feeds + targets + devices -> a StepPlan that an executor can run.

Pure: one function shared by the local session, the master and the workers, and
``StepPlanner``, the one place that makes plans for them (sticky placements, placement log).
The plan numbers every needed node, gives each node output a value slot, and lists for each
node its input slots, its consumers and how many predecessors it waits for.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any, Sequence

from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.gc_pause import gc_paused
from zmtf.framework.graph import Operation, Tensor
from zmtf.placement.placer import REF_CONSUMERS, Placement, Supports, kernel_dtype, place
from zmtf.placement.pruning import prune


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
    targets: tuple[int, ...] = ()        # the nodes the caller named as targets


def plan_step(fetches: Sequence[Tensor], feeds: Sequence[Tensor], targets: Sequence[Operation],
              devices: Sequence[str], supports: Supports, *, task: DeviceSpec,
              previous: dict[str, str] | None = None, allow_soft_placement: bool = False) -> StepPlan:
    """Prune, place and number the nodes of one step; copy tensors between host and GPUs."""
    fed = set(feeds)
    ops = prune(fetches, targets, fed)
    _check_placeholders_fed(ops, fed)
    placement = place(ops, devices, supports, task=task, previous=previous,
                      allow_soft_placement=allow_soft_placement,
                      universe=ops[0].graph.get_operations() if ops else ())
    builder = _Builder(placement.devices, feeds)
    for op in ops:
        builder.add_op(op, fed)
    fetch_slots = tuple(builder.host_slot(t) for t in fetches)
    plan = builder.finish(fetch_slots, placement)
    return replace(plan, targets=tuple(builder.index[op.name] for op in targets)) if targets else plan


placement_log = logging.getLogger("zmtf.placement")


class StepPlanner:
    """Plans the steps of one graph for its owner: a local session, a master's session, or a
    worker's registered partition.

    With ``sticky`` a node keeps the device an earlier plan gave it (TF places a node once
    per session, so two runs never see a variable in two places); with ``log_placement``
    (ConfigProto.log_device_placement) every plan's placement goes to the "zmtf.placement"
    log."""

    def __init__(self, supports: Supports, task: DeviceSpec, *, allow_soft_placement: bool,
                 log_placement: bool = False, sticky: bool = True) -> None:
        self.supports = supports
        self.task = task
        self.allow_soft_placement = allow_soft_placement
        self.log_placement = log_placement
        self.placements: dict[str, str] | None = {} if sticky else None

    def plan(self, fetches: Sequence[Tensor], feeds: Sequence[Tensor],
             targets: Sequence[Operation], devices: Sequence[str]) -> StepPlan:
        with gc_paused():   # a big graph's plan all lives on: no heap rescans while it grows
            plan = plan_step(fetches, feeds, targets, devices, self.supports, task=self.task,
                             previous=self.placements, allow_soft_placement=self.allow_soft_placement)
        if self.placements is not None:
            for name, device in plan.placement.devices.items():
                self.placements.setdefault(name, device)
        if self.log_placement:
            for line in plan.placement.log_lines:
                placement_log.info("%s", line)
        return plan


#: The op types of the copy nodes a plan inserts on host<->GPU edges (not graph ops).
COPY_OPS = frozenset({"_HostToDevice", "_DeviceToHost"})
#: The op type of the read a plan inserts where an op takes a variable's ref as a value.
READ_REF_OP = "_ReadVariableRef"
#: Every op type a plan inserts (nodes that are not in the graph).
PLAN_OPS = COPY_OPS | {READ_REF_OP}

#: Ops whose kernels take a variable's reference itself; any other consumer of a Variable
#: op's output ("v:0", e.g. from get_tensor_by_name) gets its value, as TF1 dereferences
#: ref inputs that an op does not declare as refs.
_TAKES_REF = REF_CONSUMERS | {"CountUpTo", "IdentityN", "StopGradient", "Snapshot", "Switch"}
_VARIABLE_OPS = frozenset({"Variable", "VariableV2"})


def _is_ref(t: Tensor) -> bool:
    """A Variable op's output, or one a tf.cond Switch forwards (a ref entering a branch)."""
    while t.op.type == "Switch":
        t = t.op.inputs[0]
    return t.op.type in _VARIABLE_OPS


def _is_gpu(device: str) -> bool:
    return "device:GPU:" in device


class _Builder:
    """Numbers nodes and slots; inserts a copy node on every host<->GPU edge (one per tensor
    and destination device), so kernels only ever see arrays that live on their device."""

    def __init__(self, devices: dict[str, str], feeds: Sequence[Tensor]) -> None:
        self.devices = devices
        self.slot_of: dict[Tensor, int] = {t: i for i, t in enumerate(feeds)}
        self.device_of_slot: dict[int, str] = {i: "" for i in range(len(feeds))}  # "" = host
        self.producer_of_slot: dict[int, int] = {}
        self.num_slots = len(feeds)
        self.nodes: list[dict[str, Any]] = []
        self.index: dict[str, int] = {}
        self.copies: dict[tuple[int, str], int] = {}   # (slot, device) -> slot of the copy
        self.reads: dict[int, int] = {}   # a Variable's ref slot -> slot of its value
        self.log: list[str] = []
        self.num_feeds = len(feeds)
        self.feed_names = [t.op.name for t in feeds]

    def _new_slot(self, device: str, producer: int) -> int:
        slot = self.num_slots
        self.num_slots += 1
        self.device_of_slot[slot] = device
        self.producer_of_slot[slot] = producer
        return slot

    def _add(self, name: str, op_type: str, device: str, dtype: str | None, attrs: dict[str, Any],
             inputs: tuple[int, ...], num_outputs: int, control: list[int]) -> int:
        i = len(self.nodes)
        outputs = tuple(self._new_slot(device if _is_gpu(device) else "", i) for _ in range(num_outputs))
        preds = {self.producer_of_slot[s] for s in inputs if s in self.producer_of_slot}
        preds.update(control)
        self.nodes.append({"name": name, "op_type": op_type, "device": device, "dtype": dtype,
                           "attrs": {**attrs, "_node_name": name, "_device": device}, "inputs": inputs,
                           "outputs": outputs, "preds": sorted(preds)})
        self.index[name] = i
        return i

    def _on(self, slot: int, device: str) -> int:
        """``slot``'s value where ``device`` reads it: itself, or a copy made once."""
        here = self.device_of_slot[slot]
        want = device if _is_gpu(device) else ""
        if here == want:
            return slot
        key = (slot, want)
        if key not in self.copies:
            gpu = want or here
            op_type = "_HostToDevice" if want else "_DeviceToHost"   # COPY_OPS
            producer = self.producer_of_slot.get(slot)
            source = self.nodes[producer]["name"] if producer is not None else self.feed_names[slot]
            name = f"{source}/_copy{slot}_to_{(want or 'host').rsplit('/', 1)[-1]}"
            i = self._add(name, op_type, gpu, None, {}, (slot,), 1, [])
            self.device_of_slot[self.nodes[i]["outputs"][0]] = want
            self.copies[key] = self.nodes[i]["outputs"][0]
            self.log.append(f"{name}: {gpu}")
        return self.copies[key]

    def _value_of(self, t: Tensor, consumer: Operation) -> int:
        """The slot ``consumer`` reads ``t`` from: a Variable's ref goes through one read
        (an Identity on the variable's device) unless the consumer takes refs."""
        slot = self.slot_of[t]
        if consumer.type in _TAKES_REF or slot < self.num_feeds or not _is_ref(t):
            return slot
        if slot not in self.reads:
            device = self.devices[t.op.name]
            i = self._add(f"{t.op.name}/_read{slot}", READ_REF_OP, device, t.dtype.name, {}, (slot,), 1, [])
            self.reads[slot] = self.nodes[i]["outputs"][0]
        return self.reads[slot]

    def add_op(self, op: Operation, fed: set[Tensor]) -> None:
        device = self.devices[op.name]
        inputs = tuple(self._on(self._value_of(t, op), device) for t in op.inputs)
        control = [self.index[c.name] for c in op.control_inputs]
        i = self._add(op.name, op.type, device, kernel_dtype(op), op.attrs, inputs,
                      len(op.outputs), control)
        for t, slot in zip(op.outputs, self.nodes[i]["outputs"]):
            self.slot_of.setdefault(t, slot)  # a fed output keeps the fed slot: the feed wins

    def host_slot(self, t: Tensor) -> int:
        return self._on(self.slot_of[t], "")

    def finish(self, fetch_slots: tuple[int, ...], placement: Placement) -> StepPlan:
        consumers: list[list[int]] = [[] for _ in self.nodes]
        for i, node in enumerate(self.nodes):
            for p in node["preds"]:
                consumers[p].append(i)
        nodes = tuple(PlannedNode(n["name"], n["op_type"], n["device"], n["dtype"], n["attrs"],
                                  n["inputs"], n["outputs"], tuple(consumers[i]), len(n["preds"]))
                      for i, n in enumerate(self.nodes))
        if self.log:
            placement = Placement(placement.devices, placement.log_lines + self.log)
        return StepPlan(nodes, self.num_slots, tuple(range(self.num_feeds)), fetch_slots,
                        tuple(i for i, n in enumerate(nodes) if n.pending_count == 0), placement)


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

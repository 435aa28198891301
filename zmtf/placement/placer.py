"""The simple placer of TF1, rule by rule, as a pure function.

1. A node placed in an earlier run of the session keeps its device.
2. A node pinned with tf.device goes where pinned (omitted job/task: the session's own
   task; omitted device: that task's default device).
3. Otherwise the default device: GPU:0 if there is one with a kernel, else CPU:0.
Colocated nodes (a variable with its Assign/read ops, a queue or accumulator with the ops
that use its handle, colocate_with) share one device.
A pin no device can satisfy is an InvalidArgumentError unless soft placement is on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from zmtf.ops.scatter_ops import SCATTER_OPS
from zmtf.ops.state_ops import ASSIGN_OPS
from zmtf.framework import device_spec as pydev
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.dtypes import resource, variant
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Operation

Supports = Callable[[str, str, "str | None"], bool]

# Ops that never run a kernel (their value is fed) fit any device.
NO_KERNEL_OPS = frozenset({"Placeholder"})
# Consumers of a variable's reference output must live with the variable.
REF_CONSUMERS = frozenset({*ASSIGN_OPS, *SCATTER_OPS, "IsVariableInitialized", "Identity"})


@dataclass(frozen=True, slots=True)
class Placement:
    """The decisions of one placer run: node name -> canonical device, and the log lines."""

    devices: dict[str, str]
    log_lines: list[str]


def kernel_dtype(op: Operation) -> str | None:
    """The dtype a kernel is looked up by: first input's, else first output's."""
    if op.inputs:
        return op.inputs[0].dtype.name
    if op.outputs:
        return op.outputs[0].dtype.name
    return None


def place(ops: Sequence[Operation], devices: Sequence[str], supports: Supports, *,
          task: DeviceSpec, previous: dict[str, str] | None = None,
          allow_soft_placement: bool = False, universe: Sequence[Operation] = ()) -> Placement:
    """Place ``ops`` on ``devices`` (full names, preferred default first: GPU:0 before CPU:0).

    ``universe`` (the whole graph) widens each colocation group with the members this step
    does not run, as TF places the whole graph: a variable first placed by its initializer
    step must land where its optimizer's update op (ApplyAdam, say) has a kernel too.
    """
    previous = previous or {}
    specs = [DeviceSpec.from_string(d) for d in devices]
    chosen: dict[str, str] = {}
    lines: list[str] = []
    wider = _groups_by_member(universe) if universe else {}
    for group in colocation_groups(ops):
        kept = next((previous[o.name] for o in group if o.name in previous), None)
        device = kept or _place_with_colocated(group, wider.get(group[0].name, group), specs,
                                               supports, task, allow_soft_placement)
        for op in group:
            chosen[op.name] = device
            if op.name not in previous:
                lines.append(f"{op.name}: {device}")
    moved = _follow_control_inputs(ops, chosen, previous)
    lines = [f"{name}: {chosen[name]}" if name in moved else line
             for line in lines for name in [line.split(":", 1)[0]]]
    order = {op.name: op.creation_index for op in ops}
    lines.sort(key=lambda line: order.get(line.split(":", 1)[0], 0))
    return Placement(chosen, lines)


def _task_of(device: str) -> str:
    return device.split("/device:", 1)[0]


def _follow_control_inputs(ops: Sequence[Operation], chosen: dict[str, str],
                           previous: dict[str, str]) -> set[str]:
    """Move a NoOp (a tf.group) to the task its control inputs run on when everything that
    waits for it runs there too; returns the names moved.

    A NoOp computes nothing, so where it runs only decides which control edges cross
    tasks. ``minimize(global_step=)`` builds one on the worker (the device scope) between
    the updates on the ps and the global step's increment on the ps: left there, every step
    pays a ps -> worker -> ps round trip for two control edges (TF's grappler removes such
    NoOps for the same reason)."""
    waiting: dict[str, list[str]] = {}
    for op in ops:
        for control in op.control_inputs:
            waiting.setdefault(control.name, []).append(op.name)
    moved: set[str] = set()
    changed = True
    while changed:   # a group of groups moves once its inner groups have
        changed = False
        for op in ops:
            if op.type != "NoOp" or op.inputs or not op.control_inputs or op.name in previous \
                    or op.colocation_groups() != [f"loc:@{op.name}"] \
                    or any(c.name not in chosen for c in op.control_inputs):
                continue
            sources = {_task_of(chosen[c.name]) for c in op.control_inputs}
            if len(sources) != 1:
                continue
            task = sources.pop()
            if _task_of(chosen[op.name]) == task:
                continue
            if all(_task_of(chosen.get(name, task)) == task for name in waiting.get(op.name, ())):
                chosen[op.name] = chosen[op.control_inputs[0].name]
                moved.add(op.name)
                changed = True
    return moved


def colocation_groups(ops: Sequence[Operation]) -> list[list[Operation]]:
    """Union-find over colocation names, variable-reference, resource-handle and variant
    edges (a TensorArray's list value is a Python object: it never leaves its device)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        parent[find(a)] = find(b)

    for op in ops:
        for group in op.colocation_groups():
            union(op.name, group[len("loc:@"):])
        if op.type in REF_CONSUMERS and op.inputs and op.inputs[0].op.type == "Variable":
            union(op.name, op.inputs[0].op.name)
        for t in op.inputs:  # a queue's handle or a TensorArray's list never leaves its device
            if t.dtype == resource or t.dtype == variant:
                union(op.name, t.op.name)
    groups: dict[str, list[Operation]] = {}
    for op in ops:
        groups.setdefault(find(op.name), []).append(op)
    return list(groups.values())


def _groups_by_member(ops: Sequence[Operation]) -> dict[str, list[Operation]]:
    return {op.name: group for group in colocation_groups(ops) for op in group}


def _place_with_colocated(group: list[Operation], whole: list[Operation], devices: list[DeviceSpec],
                          supports: Supports, task: DeviceSpec, allow_soft: bool) -> str:
    """Place ``group`` where its whole colocation group (members outside this step too)
    has kernels; if no device runs them all, where this step's members run."""
    if len(whole) > len(group):
        try:
            return _place_group(whole, devices, supports, task, allow_soft)
        except InvalidArgumentError:
            pass
    return _place_group(group, devices, supports, task, allow_soft)


def _requested(group: list[Operation]) -> tuple[DeviceSpec, Operation | None]:
    """The merged pin of a group; conflicting pins name both nodes."""
    merged, source = DeviceSpec(), None
    for op in group:
        if not op.device:
            continue
        spec = DeviceSpec.from_string(op.device)
        if source is not None and not _agree(merged, spec):
            raise InvalidArgumentError(
                None, None,
                f"Cannot colocate nodes '{source.name}' and '{op.name}': their devices "
                f"'{merged.to_string()}' and '{spec.to_string()}' conflict. Pin them to the "
                f"same device, or remove one of the pins.", node_name=op.name)
        merged, source = merged.make_merged_spec(spec), source or op
    return merged, source


def _agree(a: DeviceSpec, b: DeviceSpec) -> bool:
    fields = ("job", "replica", "task", "device_type", "device_index")
    return all(getattr(a, f) is None or getattr(b, f) is None or getattr(a, f) == getattr(b, f)
               for f in fields)


def _with_task_defaults(spec: DeviceSpec, task: DeviceSpec) -> DeviceSpec:
    """Omitted job and task mean the session's task; an omitted task alone means task 0."""
    if spec.job is None:
        return spec.replace(job=task.job, replica=task.replica if spec.replica is None else spec.replica,
                            task=task.task if spec.task is None else spec.task)
    return spec.replace(replica=0 if spec.replica is None else spec.replica,
                        task=0 if spec.task is None else spec.task)


def _place_group(group: list[Operation], devices: list[DeviceSpec], supports: Supports,
                 task: DeviceSpec, allow_soft: bool) -> str:
    requested, pinned_op = _requested(group)
    spec = _with_task_defaults(requested, task)
    matching = [d for d in devices if pydev.is_compatible(spec, d)]
    capable = [d for d in matching if _group_runs_on(group, d.device_type or "", supports)]
    if capable:
        return capable[0].to_string()
    if allow_soft:
        soft = spec.replace(device_type=None, device_index=None)
        fallback = [d for d in devices if pydev.is_compatible(soft, d)
                    and _group_runs_on(group, d.device_type or "", supports)]
        fallback = fallback or [d for d in devices if _group_runs_on(group, d.device_type or "", supports)]
        if fallback:
            return sorted(fallback, key=lambda d: d.device_type != "CPU")[0].to_string()
    raise _unsatisfiable(group, pinned_op, requested, matching, devices, supports)


def _group_runs_on(group: list[Operation], device_type: str, supports: Supports) -> bool:
    return all(_runs_on(op, device_type, supports) for op in group)


def _runs_on(op: Operation, device_type: str, supports: Supports) -> bool:
    if device_type != "CPU" and _touches_strings(op):
        return False   # string tensors are Python objects: they live in host memory only
    return op.type in NO_KERNEL_OPS or supports(op.type, device_type, kernel_dtype(op))


def _touches_strings(op: Operation) -> bool:
    """Strings and variants (TensorArray lists) are Python objects: host memory only."""
    return any(t.dtype.name in ("string", "variant") for t in (*op.inputs, *op.outputs))


def _unsatisfiable(group: list[Operation], pinned_op: Operation | None, requested: DeviceSpec,
                   matching: list[DeviceSpec], devices: list[DeviceSpec],
                   supports: Supports) -> InvalidArgumentError:
    node = pinned_op or group[0]
    fix = ("Pass config=tf.ConfigProto(allow_soft_placement=True) to fall back to a device "
           "that can run it, or change the tf.device() pin.")
    if not matching:
        why = ("no devices matching that specification are registered in this process; "
               f"available devices: {', '.join(d.to_string() for d in devices)}")
    else:
        device_type = matching[0].device_type
        blocker = next(op for op in group if not _runs_on(op, device_type or "", supports))
        why = (f"no supported kernel for {device_type} devices is available for "
               f"{blocker.type}({kernel_dtype(blocker)}) (node '{blocker.name}')")
        if device_type != "CPU" and _touches_strings(blocker):
            why += "; tf.string tensors and TensorArray lists stay on CPU"
        if blocker is not node:
            why += f", which is colocated with '{node.name}'"
    return InvalidArgumentError(
        None, None,
        f"Cannot assign a device to node '{node.name}': Could not satisfy explicit device "
        f"specification '{requested.to_string()}' because {why}. {fix}", node_name=node.name)

"""Fuse a plan's chains and trees of elementwise arithmetic into one node each, at bind time.

An LSTM cell's gradient is ~15 small elementwise nodes (the products of Mul's gradient,
SigmoidGrad, TanhGrad, the AddN of the gradients of a reused tensor); each costs the step
its executor work and a kernel call on a [32,128] array. A fused node runs them as one
Numba loop (``runtime.fused_kernels``) that reads each input once and writes only the
values used outside the group.

Fused: Add, AddV2, BiasAdd (NHWC), Sub, Mul, Neg, Square, Relu, ReluGrad, SigmoidGrad,
TanhGrad and AddN on one CPU device, float32 or float64, and float32 Sigmoid and Tanh, none
of them fetched or a target. Sigmoid and Tanh run kernels.cpu.elementwise's polynomial forms,
which LLVM vectorizes (numba's np.exp/np.tanh are scalar libm calls here, no SVML: 6-20x
slower than numpy); those are float32-only (within 3 and 1 float32 ulps of numpy's), so
float64 Sigmoid and Tanh stay unfused.

Plans with tf.cond (Switch/Merge) stay unfused. A group stays convex (no path leaves it and comes back), so the fused node can wait for
all its members' outside predecessors at once. Off: ``ZMTF_FUSION=0`` in the environment,
or a session's ``graph_options.optimizer_options.global_jit_level = OptimizerOptions.OFF``.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Callable, Sequence

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.plan_rewrites import has_deadness, named_nodes, predecessors, producers, slot_readers

FUSED_OP = "_FusedElementwise"
#: op type -> its arity (None: any, AddN)
FUSIBLE: dict[str, int | None] = {
    "Add": 2, "AddV2": 2, "BiasAdd": 2, "Sub": 2, "Mul": 2, "Neg": 1, "Square": 1, "Relu": 1,
    "ReluGrad": 2, "SigmoidGrad": 2, "TanhGrad": 2, "AddN": None, "Sigmoid": 1, "Tanh": 1,
}
#: ops fused for float32 only (their fused form computes in float64 and rounds once)
_FLOAT32_ONLY = frozenset({"Sigmoid", "Tanh"})
_DTYPES = frozenset({"float32", "float64"})
#: plans with tf.cond's dead branches are left unfused (runtime.plumbing keeps them whole too)
#: a group's size cap: a bigger loop body compiles for longer and spills registers
MAX_MEMBERS = 40
#: the environment switch (the session's switch is the config's global_jit_level)
ENV_SWITCH = "ZMTF_FUSION"


def fusion_default() -> bool:
    """Fusion on unless ``ZMTF_FUSION`` is 0/false/off."""
    return os.environ.get(ENV_SWITCH, "1").strip().lower() not in ("0", "false", "off", "no")


def _fusible(node: PlannedNode) -> bool:
    arity = FUSIBLE.get(node.op_type, 0)
    if arity == 0 or node.kernel_dtype not in _DTYPES or "/device:GPU:" in node.device:
        return False
    if node.op_type in _FLOAT32_ONLY and node.kernel_dtype != "float32":
        return False
    if len(node.output_slots) != 1 or (arity is not None and len(node.input_slots) != arity):
        return False
    if node.op_type == "BiasAdd" and node.attrs.get("data_format", "NHWC") not in ("NHWC", b"NHWC"):
        return False
    return bool(node.input_slots)


def fuse_elementwise(plan: StepPlan) -> StepPlan:
    """``plan`` with each convex group of two or more fusible nodes as one FUSED_OP node.

    The result's node order is no longer topological (the executor does not need it)."""
    nodes = plan.nodes
    if has_deadness(nodes):
        return plan   # a node fed a dead value is skipped whole: keep members' deadness their own
    producer = producers(nodes)
    fetched = {producer[s] for s in plan.fetch_slots if s in producer}
    excluded = fetched | set(plan.targets)
    group: dict[int, int] = {}              # node -> its group's id (the first member)
    members: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):           # plan order is topological here
        if i in excluded or not _fusible(n):
            continue
        candidates = []
        for s in n.input_slots:
            p = producer.get(s)
            if p is not None and p in group and group[p] not in candidates:
                g = group[p]
                head = nodes[members[g][0]]
                if head.device == n.device and head.kernel_dtype == n.kernel_dtype:
                    candidates.append(g)
        joined = _join(nodes, i, candidates, group, members)
        if joined is None:
            group[i] = i
            members[i] = [i]
    groups = [m for m in members.values() if len(m) > 1]
    if not groups:
        return plan
    return fold_splits(_rebuild(plan, groups))


def fold_splits(plan: StepPlan) -> StepPlan:
    """``plan`` with each SplitV whose pieces one fused node alone reads folded into it.

    An LSTM cell splits its gates [32,512] into four [32,128] pieces, copies, which only the
    cell's fused forward reads: folded, the fused loop reads each piece where it lies in the
    gates (``attrs["views"]``: per program input, ("i", input) or ("piece", input, split,
    piece), and ``attrs["splits"]``: each split's (name, attrs)), and the step runs one node
    less. A split along another axis than the last runs as the SplitV would, inside the
    fused node (runtime.fused_kernels)."""
    nodes = plan.nodes
    producer = producers(nodes)
    named = named_nodes(plan, producer)
    readers = slot_readers(nodes)
    folds: dict[int, list[int]] = {}        # fused node -> the splits folded into it
    for i, n in enumerate(nodes):
        if n.op_type != "SplitV" or i in named or len(n.input_slots) != 1:
            continue
        who = set(n.consumers).union(*(readers.get(s, set()) for s in n.output_slots))
        if len(who) != 1:
            continue
        (f,) = who
        fused = nodes[f]
        if fused.op_type == FUSED_OP and fused.device == n.device and fused.kernel_dtype == n.kernel_dtype:
            folds.setdefault(f, []).append(i)
    if not folds:
        return plan
    removed = {s for splits in folds.values() for s in splits}   # the fused node waits for their inputs
    return without_nodes(plan, removed, {f: _with_splits(nodes, nodes[f], splits) for f, splits in folds.items()})


def _with_splits(nodes: Sequence[PlannedNode], fused: PlannedNode, splits: list[int]) -> PlannedNode:
    """``fused`` reading the inputs of ``splits`` in place of their pieces."""
    piece_of = {slot: (k, j) for k, s in enumerate(splits) for j, slot in enumerate(nodes[s].output_slots)}
    inputs: list[int] = []
    views: list[tuple[Any, ...]] = []
    for slot in fused.input_slots:
        source = nodes[splits[piece_of[slot][0]]].input_slots[0] if slot in piece_of else slot
        if source not in inputs:
            inputs.append(source)
        views.append(("piece", inputs.index(source), *piece_of[slot]) if slot in piece_of
                     else ("i", inputs.index(source)))
    names = tuple(nodes[s].name for s in splits)
    label = fused.attrs["_label"].replace(f"{FUSED_OP}[", f"{FUSED_OP}[{'+'.join('SplitV' for _ in splits)}+", 1)
    label = label.replace("(", f"({', '.join(names)}, ", 1) if "(" in label else label
    attrs = {**fused.attrs, "_label": label, "views": tuple(views),
             "splits": tuple((nodes[s].name, nodes[s].attrs) for s in splits),
             "fused_nodes": names + tuple(fused.attrs["fused_nodes"])}
    return replace(fused, attrs=attrs, input_slots=tuple(inputs))


def _join(nodes: Sequence[PlannedNode], i: int, candidates: list[int], group: dict[int, int],
          members: dict[int, list[int]]) -> int | None:
    """Add node i to all its candidate groups merged, else to the biggest one it can join
    without breaking convexity; the group joined, or None."""
    options = [candidates] if len(candidates) > 1 else []
    options += [[g] for g in sorted(candidates, key=lambda g: -len(members[g]))]
    for option in options:
        merged = [m for g in option for m in members[g]] + [i]
        if len(merged) <= MAX_MEMBERS and _convex(nodes, set(merged), group, members):
            target = option[0]
            for g in option[1:]:
                for m in members.pop(g):
                    group[m] = target
                    members[target].append(m)
            members[target].append(i)
            members[target].sort()
            group[i] = target
            return target
    return None


def _convex(nodes: Sequence[PlannedNode], group: set[int], grouped: dict[int, int],
            members: dict[int, list[int]]) -> bool:
    """Whether no path leaves ``group`` and comes back into it, the other groups counted as
    one node each (a fused node waits for all its members' inputs: two groups that feed
    each other would wait for each other). Node indices are topological and no group has a
    member past the group's last, so such a path stays below it."""
    last = max(group)
    seen: set[int] = set()
    stack = [c for m in group for c in nodes[m].consumers if c not in group and c < last]
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        here = members[grouped[x]] if x in grouped else [x]
        seen.update(here)
        for y in here:
            for c in nodes[y].consumers:
                if c in group:
                    return False
                if c < last and c not in seen:
                    stack.append(c)
    return True


def _rebuild(plan: StepPlan, groups: list[list[int]]) -> StepPlan:
    """The plan with each group replaced by one fused node (at its last member's place)."""
    nodes = plan.nodes
    owner = {m: k for k, g in enumerate(groups) for m in g}
    readers = slot_readers(nodes)
    new_index: dict[int, int] = {}
    fused_at: dict[int, int] = {}           # group -> its new index
    order: list[int | tuple[str, int]] = []
    for i in range(len(nodes)):
        k = owner.get(i)
        if k is None:
            new_index[i] = len(order)
            order.append(i)
        elif i == groups[k][-1]:
            fused_at[k] = len(order)
            order.append(("fused", k))
    for i, k in owner.items():
        new_index[i] = fused_at[k]
    preds = merged_predecessors(nodes, new_index, len(order))
    consumers = consumers_of(preds)
    out: list[PlannedNode] = []
    for new, item in enumerate(order):
        if isinstance(item, int):
            out.append(replace(nodes[item], consumers=tuple(sorted(consumers[new])),
                               pending_count=len(preds[new])))
        else:
            out.append(_fused_node(nodes, groups[item[1]], readers, tuple(sorted(consumers[new])),
                                   len(preds[new])))
    return replace(plan, nodes=tuple(out), roots=tuple(i for i, n in enumerate(out) if n.pending_count == 0),
                   targets=tuple(new_index[t] for t in plan.targets))



def merged_predecessors(nodes: Sequence[PlannedNode], new_index: dict[int, int],
                        count: int) -> list[set[int]]:
    """Each of ``count`` new nodes' predecessors, when old node i became new node
    ``new_index[i]`` (several old nodes may become one: edges inside it disappear)."""
    preds: list[set[int]] = [set() for _ in range(count)]
    for i, n in enumerate(nodes):
        for c in n.consumers:
            a, b = new_index[i], new_index[c]
            if a != b:
                preds[b].add(a)
    return preds


def merge_groups(plan: StepPlan, groups: Sequence[Sequence[int]],
                 node_of: Callable[[Sequence[int]], PlannedNode]) -> StepPlan:
    """``plan`` with each group of nodes (disjoint) as one node, ``node_of(group)``, at the
    place of the group's last node: it waits for what a member waited for outside the group,
    and what waited for a member waits for it."""
    nodes = plan.nodes
    at = {m: max(group) for group in groups for m in group}
    group_at = {max(group): group for group in groups}
    new_index: dict[int, int] = {}
    kept: list[int] = []
    for i in range(len(nodes)):
        if at.get(i, i) == i:
            new_index[i] = len(kept)
            kept.append(i)
    for m, last in at.items():
        new_index[m] = new_index[last]
    preds = merged_predecessors(nodes, new_index, len(kept))
    consumers = consumers_of(preds)
    out = [replace(node_of(group_at[i]) if i in group_at else nodes[i],
                   consumers=tuple(sorted(consumers[new])), pending_count=len(preds[new]))
           for new, i in enumerate(kept)]
    return replace(plan, nodes=tuple(out), roots=tuple(i for i, n in enumerate(out) if n.pending_count == 0),
                   targets=tuple(new_index[t] for t in plan.targets))


def without_nodes(plan: StepPlan, removed: set[int], replacements: dict[int, PlannedNode]) -> StepPlan:
    """``plan`` without the ``removed`` nodes and with ``replacements`` (old index -> node)
    in place of theirs. A removed node's consumers wait instead for what it waited for
    (through removed nodes too), so every ordering the plan had still holds."""
    nodes = plan.nodes
    preds = predecessors(nodes)
    kept_preds: dict[int, set[int]] = {}

    def waits(i: int) -> set[int]:
        if i not in kept_preds:
            result: set[int] = set()
            for p in preds[i]:
                result |= waits(p) if p in removed else {p}
            kept_preds[i] = result
        return kept_preds[i]

    kept = [i for i in range(len(nodes)) if i not in removed]
    index = {old: new for new, old in enumerate(kept)}
    new_preds = [{index[p] for p in waits(old)} for old in kept]
    consumers = consumers_of(new_preds)
    out = [replace(replacements.get(old, nodes[old]), consumers=tuple(sorted(consumers[new])),
                   pending_count=len(new_preds[new])) for new, old in enumerate(kept)]
    return replace(plan, nodes=tuple(out), roots=tuple(i for i, n in enumerate(out) if n.pending_count == 0),
                   targets=tuple(index[t] for t in plan.targets))


def consumers_of(preds: Sequence[set[int]]) -> list[list[int]]:
    """The consumer lists that ``preds`` (each node's predecessors) imply."""
    consumers: list[list[int]] = [[] for _ in preds]
    for b, ps in enumerate(preds):
        for a in ps:
            consumers[a].append(b)
    return consumers

def _fused_node(nodes: Sequence[PlannedNode], group: list[int], readers: dict[int, set[int]],
                consumers: tuple[int, ...], pending: int) -> PlannedNode:
    """One node computing ``group``: its outside inputs in, the values read outside out.

    ``attrs["program"]``: (ops, number of inputs, temps to output), each op (op type,
    arguments), an argument ("i", input) or ("t", an earlier op's temp)."""
    inside = set(group)
    temp_of = {nodes[m].output_slots[0]: k for k, m in enumerate(group)}
    inputs: list[int] = []
    ops: list[tuple[str, tuple[tuple[str, int], ...]]] = []
    for m in group:
        args = []
        for s in nodes[m].input_slots:
            if s in temp_of and temp_of[s] < len(ops):
                args.append(("t", temp_of[s]))
            else:
                if s not in inputs:
                    inputs.append(s)
                args.append(("i", inputs.index(s)))
        ops.append((nodes[m].op_type, tuple(args)))
    outputs = [k for k, m in enumerate(group)
               if readers.get(nodes[m].output_slots[0], set()) - inside] or [len(group) - 1]
    last = nodes[group[-1]]
    name = last.name   # as grappler's fused nodes: the name of the node whose value it ends in
    label = (f"{name} = {FUSED_OP}[{'+'.join(op for op, _ in ops)}]"
             f"({', '.join(nodes[m].name for m in group)})")
    attrs = {"_node_name": name, "_device": last.device, "_label": label,
             "program": (tuple(ops), len(inputs), tuple(outputs)),
             "fused_nodes": tuple(nodes[m].name for m in group),
             "fused_members": tuple((nodes[m].name, nodes[m].op_type, nodes[m].kernel_dtype,
                                     nodes[m].attrs) for m in group)}
    return PlannedNode(name, FUSED_OP, last.device, last.kernel_dtype, attrs, tuple(inputs),
                       tuple(nodes[group[k]].output_slots[0] for k in outputs), consumers, pending)

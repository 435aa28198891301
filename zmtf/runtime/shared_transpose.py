"""Give MatMuls that read one weight transposed a transposed copy of it, made once per step.

An unrolled RNN's backward pass multiplies each time step's gradient by the same weight,
transposed (``dx = dgates @ w^T``: MatMul with transpose_b). OpenBLAS packs a transposed
operand more slowly: 32x512 @ (256x512)^T takes ~148 us where the same product from a
contiguous (512x256) copy takes ~102 us. So when several MatMuls read one variable's weight
with transpose_b, a bind-time rewrite adds one ``TRANSPOSE_OP`` node (a blocked transposing
copy, ~100 us for 256x512) and points those MatMuls at it, untransposed. The LSTM of
bench/models.py has 19 such products per step.

Only a variable's weight (VariableV2/Variable, or an Identity read of one) whose every
other reader is a MatMul or an Identity, or runs after all those MatMuls (the optimizer's
update): then the weight cannot change between the copy and the products. Plans with
tf.cond (Switch/Merge) are left alone. Off with fusion (``ZMTF_FUSION=0`` or the session's
``global_jit_level = OFF``): the plan then runs as the graph says.
"""

from __future__ import annotations

from dataclasses import replace

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.plan_rewrites import has_deadness, predecessors, producers

TRANSPOSE_OP = "_TransposeForMatMul"
#: MatMuls that must share one transposed weight for the copy to pay: for the LSTM's
#: 256x512 weight the copy takes ~100 us and saves ~46 us per product
MIN_SHARED = 4
_VARIABLE_OPS = frozenset({"VariableV2", "Variable"})
_PURE_READERS = frozenset({"MatMul", "Identity"})
_DTYPES = frozenset({"float32", "float64"})


def _candidate(node: PlannedNode) -> bool:
    return (node.op_type == "MatMul" and bool(node.attrs.get("transpose_b"))
            and node.kernel_dtype in _DTYPES and "/device:GPU:" not in node.device
            and len(node.input_slots) == 2)


def share_transposes(plan: StepPlan) -> StepPlan:
    """``plan`` with one TRANSPOSE_OP node per weight that MIN_SHARED or more MatMuls read
    transposed (see the module docstring for when it is safe); the plan itself otherwise."""
    nodes = plan.nodes
    if has_deadness(nodes):
        return plan
    by_weight: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        if _candidate(n):
            by_weight.setdefault(n.input_slots[1], []).append(i)
    shared = {s: ms for s, ms in by_weight.items() if len(ms) >= MIN_SHARED}
    if not shared:
        return plan
    producer = producers(nodes)
    readers: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        for s in set(n.input_slots):
            readers.setdefault(s, []).append(i)
    preds: list[list[int]] | None = None
    rewrites: list[tuple[int, list[int]]] = []
    for slot, matmuls in shared.items():
        weight_slots = _weight_slots(nodes, producer, slot)
        if weight_slots is None:
            continue
        group = set(matmuls)
        if len({(nodes[m].device, nodes[m].kernel_dtype) for m in matmuls}) != 1:
            continue   # one device, one dtype
        others = {r for s in weight_slots for r in readers.get(s, ())
                  if r not in group and nodes[r].op_type not in _PURE_READERS}
        if others:
            if preds is None:
                preds = predecessors(nodes)
            if not all(group <= _ancestors(preds, r) for r in others):
                continue
        rewrites.append((slot, matmuls))
    return _rewrite(plan, producer, rewrites) if rewrites else plan


def _weight_slots(nodes: tuple[PlannedNode, ...], producer: dict[int, int],
                  slot: int) -> tuple[int, ...] | None:
    """The slots through which the variable behind ``slot`` is read or written, or None if
    ``slot`` is not a variable's weight (its producer's output might change underneath)."""
    p = producer.get(slot)
    if p is None:
        return None
    node = nodes[p]
    if node.op_type in _VARIABLE_OPS:
        return (slot,)
    if node.op_type == "Identity" and len(node.input_slots) == 1:
        q = producer.get(node.input_slots[0])
        if q is not None and nodes[q].op_type in _VARIABLE_OPS:
            return (slot, node.input_slots[0])
    return None


def _ancestors(preds: list[list[int]], node: int) -> set[int]:
    seen: set[int] = set()
    stack = list(preds[node])
    while stack:
        x = stack.pop()
        if x not in seen:
            seen.add(x)
            stack.extend(preds[x])
    return seen


def _rewrite(plan: StepPlan, producer: dict[int, int],
             rewrites: list[tuple[int, list[int]]]) -> StepPlan:
    """Append one TRANSPOSE_OP node per (weight slot, MatMuls); the MatMuls read it, untransposed."""
    nodes = list(plan.nodes)
    num_slots = plan.num_slots
    for slot, matmuls in rewrites:
        index, out_slot = len(nodes), num_slots
        num_slots += 1
        p = producer[slot]
        first = nodes[matmuls[0]]
        name = f"{nodes[p].name}/{TRANSPOSE_OP}"
        attrs = {"_node_name": name, "_device": first.device,
                 "_label": f"{name} = {TRANSPOSE_OP}({nodes[p].name}) for "
                           f"{', '.join(nodes[m].name for m in matmuls)}"}
        nodes.append(PlannedNode(name, TRANSPOSE_OP, first.device, first.kernel_dtype, attrs,
                                 (slot,), (out_slot,), tuple(sorted(matmuls)), 1))
        nodes[p] = replace(nodes[p], consumers=tuple(sorted({*nodes[p].consumers, index})))
        for m in matmuls:
            n = nodes[m]
            nodes[m] = replace(n, attrs={**n.attrs, "transpose_b": False},
                               input_slots=(n.input_slots[0], out_slot),
                               pending_count=n.pending_count + 1)
    return replace(plan, nodes=tuple(nodes), num_slots=num_slots)

"""Sum a shared weight's gradient products as one matrix product of the stacked operands.

An unrolled RNN reads one weight at every time step, so its gradient is an AddN of one
product per step: ``dW = sum_t x_t^T @ dgates_t`` (MatMul with transpose_a). For the LSTM
of bench/models.py that is 20 products with an inner dimension of 32 (the batch) and a
[256,512] AddN of their 20 results: ~2.9 ms of thread CPU per step. The same sum is one
product over the time-concatenated operands, ``[x_1; ...; x_20]^T @ [dg_1; ...; dg_20]``
(inner dimension 640), which BLAS runs at a better rate, with no AddN: ~1.8 ms with the
copies that stack the operands. The result is the same sum, added in another order (equal
within float rounding).

So a bind-time rewrite replaces such an AddN and its MatMuls with one ``STACKED_OP`` node
(kernels/cpu/matmul.py), when the AddN (float32/64, on a CPU) sums at least ``MIN_PRODUCTS``
distinct MatMuls with one pair of transpose flags, on its device and of its dtype, whose
results nothing else reads and that are neither fetched nor targets. The node keeps the
AddN's name and output slot and lists its products in the trace's label. A removed
MatMul's other consumers (control edges: ``tf.gradients``' tuples) wait instead for what
the MatMul waited for, so every ordering the graph asked for still holds. Plans with
tf.cond (Switch/Merge) are left alone. Off with fusion (``ZMTF_FUSION=0`` or the session's
``global_jit_level = OFF``).
"""

from __future__ import annotations

from dataclasses import replace

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.fusion import consumers_of

STACKED_OP = "_StackedMatMul"
#: products an AddN must sum for the rewrite: stacking copies every operand once, which
#: only the bigger product's better rate pays for (measured on the LSTM's 20)
MIN_PRODUCTS = 4
_DTYPES = frozenset({"float32", "float64"})
_DEADNESS_OPS = frozenset({"Switch", "RefSwitch", "Merge", "RefMerge"})


def stack_products(plan: StepPlan) -> StepPlan:
    """``plan`` with each AddN of gradient products as one STACKED_OP node (see the module
    docstring for which); the plan itself when there is none."""
    nodes = plan.nodes
    if not any(n.op_type == "AddN" for n in nodes) or any(n.op_type in _DEADNESS_OPS for n in nodes):
        return plan
    producer = {s: i for i, n in enumerate(nodes) for s in n.output_slots}
    named = set(plan.targets) | {producer[s] for s in plan.fetch_slots if s in producer}
    readers: dict[int, int] = {}
    for n in nodes:
        for s in n.input_slots:
            readers[s] = readers.get(s, 0) + 1
    groups = {}
    for i, n in enumerate(nodes):
        products = _products(nodes, i, producer, readers, named)
        if products is not None:
            groups[i] = products
    return _rewrite(plan, groups) if groups else plan


def _products(nodes: tuple[PlannedNode, ...], i: int, producer: dict[int, int],
              readers: dict[int, int], named: set[int]) -> list[int] | None:
    """The MatMuls AddN node ``i`` sums, if it qualifies; else None."""
    add = nodes[i]
    if (add.op_type != "AddN" or add.kernel_dtype not in _DTYPES or "/device:GPU:" in add.device
            or len(add.output_slots) != 1 or len(add.input_slots) < MIN_PRODUCTS
            or len(set(add.input_slots)) != len(add.input_slots)):
        return None
    products = [producer.get(s, -1) for s in add.input_slots]
    flags = set()
    for m, s in zip(products, add.input_slots):
        if m < 0 or m in named:
            return None
        mm = nodes[m]
        if (mm.op_type != "MatMul" or mm.device != add.device or mm.kernel_dtype != add.kernel_dtype
                or len(mm.input_slots) != 2 or mm.output_slots != (s,) or readers[s] != 1):
            return None
        flags.add((bool(mm.attrs.get("transpose_a")), bool(mm.attrs.get("transpose_b"))))
    return products if len(flags) == 1 else None


def _rewrite(plan: StepPlan, groups: dict[int, list[int]]) -> StepPlan:
    """Each AddN of ``groups`` becomes a STACKED_OP node; its MatMuls leave the plan."""
    nodes = plan.nodes
    removed = {m for products in groups.values() for m in products}
    preds: list[set[int]] = [set() for _ in nodes]
    for i, n in enumerate(nodes):
        for c in n.consumers:
            preds[c].add(i)
    kept_preds: dict[int, set[int]] = {}

    def waits(i: int) -> set[int]:
        """What node i waits for, a removed predecessor replaced by what it waited for."""
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
    new_nodes = []
    for new, old in enumerate(kept):
        n = nodes[old]
        if old in groups:
            n = _stacked_node(nodes, n, groups[old])
        new_nodes.append(replace(n, consumers=tuple(sorted(consumers[new])),
                                 pending_count=len(new_preds[new])))
    return replace(plan, nodes=tuple(new_nodes),
                   roots=tuple(i for i, n in enumerate(new_nodes) if n.pending_count == 0),
                   targets=tuple(index[i] for i in plan.targets))


def _stacked_node(nodes: tuple[PlannedNode, ...], add: PlannedNode, products: list[int]) -> PlannedNode:
    """The node that computes ``add``'s sum of ``products`` as one product."""
    first = nodes[products[0]]
    names = ", ".join(nodes[m].name for m in products)
    attrs = {"_node_name": add.name, "_device": add.device,
             "transpose_a": bool(first.attrs.get("transpose_a")),
             "transpose_b": bool(first.attrs.get("transpose_b")),
             "_label": f"{add.name} = {STACKED_OP}(AddN of {len(products)} MatMul: {names})"}
    inputs = tuple(s for m in products for s in nodes[m].input_slots)
    return replace(add, op_type=STACKED_OP, attrs=attrs, input_slots=inputs)

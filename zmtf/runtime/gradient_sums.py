"""Sum a shared weight's per-step gradients in one kernel instead of one node per step.

An unrolled RNN reads one weight and one bias at every time step, so their gradients are
AddNs of one term per step: ``dW = sum_t x_t^T @ dgates_t`` (MatMuls with transpose_a) and
``db = sum_t SumToShape(dgates_t, shape(b))``. For the LSTM of bench/models.py that is 20
products with an inner dimension of 32 (the batch) and a [256,512] AddN of them (~2.9 ms
of thread CPU per step), and 20 column sums and their AddN (~0.35 ms with the nodes'
executor work). A bind-time rewrite replaces each such AddN and its terms with one node:

* ``STACKED_MATMUL_OP``: the products' sum is one product over the time-concatenated
  operands, ``[x_1; ...; x_20]^T @ [dg_1; ...; dg_20]`` (inner dimension 640), which BLAS
  runs at a better rate: ~1.6 ms with the copies that stack the operands;
* ``SUM_OF_SUMS_OP``: the column sums' sum is the column sum of the terms' sum (SumToShape
  is linear): 19 adds of [32,512] and one reduction.

Both add the same terms in another order: equal within float rounding. Their kernels
(kernels/cpu/matmul.py, kernels/cpu/reduce.py) run the original nodes' kernels when the
operands do not fit (shapes, dtypes), so errors stay the graph's.

Rewritten: an AddN (float32/64, on a CPU) of at least ``MIN_TERMS`` distinct terms, each a
MatMul (one pair of transpose flags for all) or each a SumToShape, on the AddN's device and
of its dtype, whose results nothing else reads and that are neither fetched nor targets.
The node keeps the AddN's name and output slot and lists its terms in the trace's label. A
removed term's other consumers (control edges: ``tf.gradients``' tuples) wait instead for
what the term waited for, so every ordering the graph asked for still holds. Plans with
tf.cond (Switch/Merge) are left alone. Off with fusion (``ZMTF_FUSION=0`` or the session's
``global_jit_level = OFF``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.plan_rewrites import has_deadness, producers, named_nodes
from zmtf.runtime.fusion import without_nodes

STACKED_MATMUL_OP = "_StackedMatMul"
SUM_OF_SUMS_OP = "_SumToShapeOfSum"
#: the term op -> the op of the node that replaces the AddN of such terms
_REPLACEMENT = {"MatMul": STACKED_MATMUL_OP, "SumToShape": SUM_OF_SUMS_OP}
#: terms an AddN must sum for the rewrite: stacking copies every operand once, which only
#: the bigger product's better rate pays for (measured on the LSTM's 20)
MIN_TERMS = 4
_DTYPES = frozenset({"float32", "float64"})


def sum_gradients(plan: StepPlan) -> StepPlan:
    """``plan`` with each AddN of per-step gradient terms as one node (see the module
    docstring for which); the plan itself when there is none."""
    nodes = plan.nodes
    if not any(n.op_type == "AddN" for n in nodes) or has_deadness(nodes):
        return plan
    producer = producers(nodes)
    named = named_nodes(plan, producer)
    readers: dict[int, int] = {}
    for n in nodes:
        for s in n.input_slots:
            readers[s] = readers.get(s, 0) + 1
    groups = {}
    for i, n in enumerate(nodes):
        terms = _terms(nodes, i, producer, readers, named)
        if terms is not None:
            groups[i] = terms
    return _rewrite(plan, groups) if groups else plan


def _terms(nodes: tuple[PlannedNode, ...], i: int, producer: dict[int, int],
           readers: dict[int, int], named: set[int]) -> list[int] | None:
    """The nodes AddN node ``i`` sums, if it qualifies; else None."""
    add = nodes[i]
    if (add.op_type != "AddN" or add.kernel_dtype not in _DTYPES or "/device:GPU:" in add.device
            or len(add.output_slots) != 1 or len(add.input_slots) < MIN_TERMS
            or len(set(add.input_slots)) != len(add.input_slots)):
        return None
    terms = [producer.get(s, -1) for s in add.input_slots]
    kinds = set()
    for t, s in zip(terms, add.input_slots):
        if t < 0 or t in named:
            return None
        term = nodes[t]
        if (term.op_type not in _REPLACEMENT or term.device != add.device
                or term.kernel_dtype != add.kernel_dtype or len(term.input_slots) != 2
                or term.output_slots != (s,) or readers[s] != 1):
            return None
        kinds.add((term.op_type, bool(term.attrs.get("transpose_a")), bool(term.attrs.get("transpose_b"))))
    return terms if len(kinds) == 1 else None


def _rewrite(plan: StepPlan, groups: dict[int, list[int]]) -> StepPlan:
    """Each AddN of ``groups`` becomes the node of its terms' kind; the terms leave the plan."""
    removed = {t for terms in groups.values() for t in terms}
    return without_nodes(plan, removed, {i: _summing_node(plan.nodes, plan.nodes[i], terms)
                                         for i, terms in groups.items()})


def _summing_node(nodes: tuple[PlannedNode, ...], add: PlannedNode, terms: list[int]) -> PlannedNode:
    """The node that computes ``add``'s sum of ``terms`` in one kernel."""
    first = nodes[terms[0]]
    op = _REPLACEMENT[first.op_type]
    names = ", ".join(nodes[t].name for t in terms)
    attrs: dict[str, Any] = {"_node_name": add.name, "_device": add.device,
             "_label": f"{add.name} = {op}(AddN of {len(terms)} {first.op_type}: {names})"}
    if first.op_type == "MatMul":
        attrs["transpose_a"] = bool(first.attrs.get("transpose_a"))
        attrs["transpose_b"] = bool(first.attrs.get("transpose_b"))
    inputs = tuple(s for t in terms for s in nodes[t].input_slots)
    return replace(add, op_type=op, attrs=attrs, input_slots=inputs)

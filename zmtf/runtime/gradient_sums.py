"""Sum a shared weight's per-step gradients in one kernel instead of one node per step.

An unrolled RNN reads one weight and one bias at every time step, so their gradients are
AddNs of one term per step: ``dW = sum_t x_t^T @ dgates_t`` (MatMuls with transpose_a) and
``db = sum_t SumToShape(dgates_t, shape(b))``. For the LSTM of bench/models.py that is 20
products with an inner dimension of 32 (the batch) and a [256,512] AddN of them (~2.9 ms
of thread CPU per step), and 20 column sums and their AddN (~0.35 ms with the nodes'
executor work). A bind-time rewrite replaces each such AddN and its terms with one node:

* ``STACKED_MATMUL_OP``: the products' sum is one product over the time-concatenated
  operands, ``[x_1; ...; x_20]^T @ [dg_1; ...; dg_20]`` (inner dimension 640), which BLAS
  runs at a better rate: ~1.6 ms with the copies that stack the operands. From
  2 * STACK_TERMS products on, they go in stacks of about STACK_TERMS, in the order the
  backward pass makes their operands, and an AddN of the stacks: each stack is ready in the
  middle of the pass and runs beside it on the other core (only the AddN waits for it; the
  executor considers it first, executor._beside_last), and only the last is left for the
  end of the step. The LSTM's 20 in 4 stacks of 5: its step 9.06 -> 8.04 ms (in-process
  A/B, median of 228 blocks of 10 steps each);
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
from zmtf.runtime.plan_rewrites import has_deadness, named_nodes, predecessors, producers
from zmtf.runtime.fusion import without_nodes

STACKED_MATMUL_OP = "_StackedMatMul"
SUM_OF_SUMS_OP = "_SumToShapeOfSum"
#: the term op -> the op of the node that replaces the AddN of such terms
_REPLACEMENT = {"MatMul": STACKED_MATMUL_OP, "SumToShape": SUM_OF_SUMS_OP}
#: terms an AddN must sum for the rewrite: stacking copies every operand once, which only
#: the bigger product's better rate pays for (measured on the LSTM's 20)
MIN_TERMS = 4
#: products an AddN of at least twice as many sums in stacks of about this many (``_stacks``)
STACK_TERMS = 5
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
    """Each AddN of ``groups`` becomes the node of its terms' kind, or, for at least
    2 * STACK_TERMS products, an AddN of stacked products (``_stacks``), each at the place
    of its last term; the other terms leave the plan."""
    nodes = list(plan.nodes)
    removed: set[int] = set()
    replacements: dict[int, PlannedNode] = {}
    preds: list[list[int]] | None = None
    depth: list[int] = []
    for i, terms in groups.items():
        add = plan.nodes[i]
        if plan.nodes[terms[0]].op_type != "MatMul" or len(terms) < 2 * STACK_TERMS:
            removed.update(terms)
            replacements[i] = _summing_node(plan.nodes, add, terms)
            continue
        if preds is None:
            preds, depth = predecessors(plan.nodes), _depths(plan.nodes)
        stacks = _stacks(terms, depth)
        for k, stack in enumerate(stacks):
            last = stack[-1]
            for t in stack[:-1]:   # the stack's node waits for what each of its terms waited for
                removed.add(t)
                for p in preds[t]:
                    nodes[p] = replace(nodes[p], consumers=nodes[p].consumers + (last,))
            # ... and only the AddN waits for it: the last term's control consumers (the
            # pass's next steps, through tf.gradients' tuples) wait for its inputs instead,
            # as a removed term's do, so that the pass goes on beside the product
            others = tuple(c for c in plan.nodes[last].consumers if c != i)
            for p in preds[last]:
                nodes[p] = replace(nodes[p], consumers=nodes[p].consumers + others)
            nodes[last] = replace(nodes[last], consumers=(i,))
            part = replace(plan.nodes[last], name=f"{add.name}/stack_{k}")
            replacements[last] = _summing_node(plan.nodes, part, stack)
        replacements[i] = replace(add, input_slots=tuple(plan.nodes[stack[-1]].output_slots[0]
                                                         for stack in stacks))
    return without_nodes(replace(plan, nodes=tuple(nodes)), removed, replacements)


def _stacks(terms: list[int], depth: list[int]) -> list[list[int]]:
    """``terms`` in groups of about STACK_TERMS, in the order their inputs come (an RNN's
    backward pass makes its last step's gradient first): each group's product can start
    while the pass goes on, and only the last one is left for its end."""
    ordered = sorted(terms, key=lambda t: depth[t])
    count = len(ordered) // STACK_TERMS
    size, extra = divmod(len(ordered), count)
    stacks, start = [], 0
    for k in range(count):
        end = start + size + (1 if k < extra else 0)
        stacks.append(ordered[start:end])
        start = end
    return stacks


def _depths(nodes: tuple[PlannedNode, ...]) -> list[int]:
    """Each node's longest path from a node that waits for nothing."""
    depth = [0] * len(nodes)
    pending = [n.pending_count for n in nodes]
    ready = [i for i, n in enumerate(pending) if n == 0]
    while ready:
        i = ready.pop()
        for c in nodes[i].consumers:
            depth[c] = max(depth[c], depth[i] + 1)
            pending[c] -= 1
            if pending[c] == 0:
                ready.append(c)
    return depth


def _summing_node(nodes: tuple[PlannedNode, ...], add: PlannedNode, terms: list[int]) -> PlannedNode:
    """The node that computes ``add``'s sum of ``terms`` in one kernel (``add``: the node
    whose name, place and output slot it takes)."""
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

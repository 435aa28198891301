"""What every bind-time plan rewrite (plumbing, fusion, conv_fusion, gradient_sums,
shared_transpose, matmul_readers, weight_gradients_beside) asks of a StepPlan before it
changes anything: whether tf.cond's dead values can flow through it (then the rewrites leave
it alone), which node makes and which nodes read each slot, which ops have effects, which
nodes the caller named (fetched or targeted: never removed), and whether one node waits for
another (merging them would add a cycle)."""

from __future__ import annotations

from typing import Sequence

from zmtf.framework.op_def import OP_DEFS, is_stateful
from zmtf.placement.plan import PlannedNode, StepPlan

#: ops that carry tf.cond's dead values: a plan with one is left as it is
DEADNESS_OPS = frozenset({"Switch", "RefSwitch", "Merge", "RefMerge"})


def has_deadness(nodes: Sequence[PlannedNode]) -> bool:
    return any(n.op_type in DEADNESS_OPS for n in nodes)


def has_effects(op_type: str) -> bool:
    """Whether a node of ``op_type`` may change or read state that others change (a
    variable's update, a queue, a _Send), by its op definition. An op without one that the
    runtime did not make (the runtime's ops start with ``_`` and are pure, but _Send and
    _Recv, which have one) counts as having effects: unknown, it keeps every ordering."""
    return is_stateful(op_type) or (op_type not in OP_DEFS and not op_type.startswith("_"))


def producers(nodes: Sequence[PlannedNode]) -> dict[int, int]:
    """Slot -> the index of the node that writes it."""
    return {s: i for i, n in enumerate(nodes) for s in n.output_slots}


def slot_readers(nodes: Sequence[PlannedNode]) -> dict[int, set[int]]:
    """Slot -> the indices of the nodes that read it."""
    readers: dict[int, set[int]] = {}
    for i, n in enumerate(nodes):
        for s in n.input_slots:
            readers.setdefault(s, set()).add(i)
    return readers


def predecessors(nodes: Sequence[PlannedNode]) -> list[list[int]]:
    """Each node's predecessors (the nodes whose consumers list it), in index order."""
    preds: list[list[int]] = [[] for _ in nodes]
    for i, n in enumerate(nodes):
        for c in n.consumers:
            preds[c].append(i)
    return preds


def named_nodes(plan: StepPlan, producer: dict[int, int]) -> set[int]:
    """The nodes a run fetches from or targets."""
    return set(plan.targets) | {producer[s] for s in plan.fetch_slots if s in producer}


def reaches(nodes: Sequence[PlannedNode], start: int, goal: int) -> bool:
    """Whether ``goal`` waits (through any path) for ``start``: an edge start -> goal then
    adds no cycle."""
    seen = {start}
    stack = [start]
    while stack:
        for c in nodes[stack.pop()].consumers:
            if c == goal:
                return True
            if c not in seen:
                seen.add(c)
                stack.append(c)
    return False

"""Which nodes a step needs: walk back from fetches and targets; fed tensors cut the walk."""

from __future__ import annotations

from collections import deque
from typing import Iterable

from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Operation, Tensor


def prune(fetch_tensors: Iterable[Tensor], target_ops: Iterable[Operation],
          fed: set[Tensor]) -> list[Operation]:
    """Operations needed to compute the fetches and run the targets, in topological order.

    A fed tensor is not computed, so its producer is only needed if something else uses it.
    Raises InvalidArgumentError naming the nodes of a cycle (made through control inputs).
    """
    needed: dict[int, Operation] = {}
    stack: list[Operation] = [t.op for t in fetch_tensors if t not in fed] + list(target_ops)
    while stack:
        op = stack.pop()
        if id(op) in needed:
            continue
        needed[id(op)] = op
        stack.extend(t.op for t in op.inputs if t not in fed)
        stack.extend(op.control_inputs)
    return topological_order(list(needed.values()), fed)


def predecessors(op: Operation, fed: set[Tensor]) -> list[Operation]:
    """Distinct ops that must finish before ``op`` runs (data and control)."""
    seen: dict[int, Operation] = {}
    for t in op.inputs:
        if t not in fed:
            seen.setdefault(id(t.op), t.op)
    for c in op.control_inputs:
        seen.setdefault(id(c), c)
    return list(seen.values())


def topological_order(ops: list[Operation], fed: set[Tensor]) -> list[Operation]:
    """Kahn's algorithm over ``ops`` (stable by creation order); cycle -> InvalidArgumentError."""
    ops = sorted(ops, key=lambda o: o.creation_index)
    members = {id(o) for o in ops}
    pending = {id(o): 0 for o in ops}
    consumers: dict[int, list[Operation]] = {id(o): [] for o in ops}
    for op in ops:
        for p in predecessors(op, fed):
            if id(p) in members:
                pending[id(op)] += 1
                consumers[id(p)].append(op)
    ready = deque(o for o in ops if pending[id(o)] == 0)
    order: list[Operation] = []
    while ready:
        op = ready.popleft()
        order.append(op)
        for c in consumers[id(op)]:
            pending[id(c)] -= 1
            if pending[id(c)] == 0:
                ready.append(c)
    if len(order) != len(ops):
        stuck = sorted(o.name for o in ops if pending[id(o)] > 0)
        raise InvalidArgumentError(
            None, None,
            f"Graph contains a cycle through nodes {stuck[:10]}: each waits for another "
            f"(look for control_dependencies or _add_control_input that point backwards).",
            node_name=stuck[0],
        )
    return order

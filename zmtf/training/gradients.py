"""``tf.gradients``: reverse-mode differentiation over a TF1 graph.

Walks back from ``ys`` to ``xs`` as TF1 does: only ops on a float path from an x to a y
("between" ops) take part; an op is processed once all of its between-consumers have sent
their gradients (a pending count per op), and several gradients into one tensor are summed
with ``add_n``. The gradient functions come from ``zmtf.framework.gradient_registry``.
A gather's gradient is an IndexedSlices (framework/indexed_slices.py): it passes through
Identity (a variable's read) as it is, several are concatenated, any other op gets it dense.
"""

from __future__ import annotations

from collections import deque
from contextlib import ExitStack
from typing import Any, Iterable, Sequence

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient_function
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops import (  # noqa: F401  (fill GRADIENTS)
    array_grad, cond_grad, conv_grad, math_grad, nn_grad, partition_grad, segment_grad, selection_grad,
    sparse_grad, topk_grad,
)
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import group
from zmtf.training import while_grad  # registers the While gradient

#: per op: for each output, the gradients received so far (a list), or once aggregated a Tensor
_GradTable = dict[Operation, list[Any]]

#: ops whose gradient function passes an IndexedSlices on as it is (every other op's gets
#: it densified): a variable's read, so a gather's sparse gradient reaches the variable
_SPARSE_THROUGH = frozenset({"Identity"})


def gradients(ys: Any, xs: Any, grad_ys: Any = None, name: str = "gradients",
              colocate_gradients_with_ops: bool = False, gate_gradients: bool = False,
              aggregation_method: Any = None, stop_gradients: Any = None,
              unconnected_gradients: str = "none") -> list[Tensor | None]:
    """Symbolic d(sum(ys))/dx for each x in ``xs``: ``tf.gradients(loss, [w, b])``.

    ``ys`` and ``xs`` are tensors, tf.Variables or lists of them. An x that no y depends on
    (through float tensors) gets None, or zeros with ``unconnected_gradients="zero"``.
    ``grad_ys`` weights each y (default ones). Ops in ``stop_gradients`` pass no gradient
    on to their inputs. ``aggregation_method`` is accepted for compatibility; sums use add_n.
    """
    if unconnected_gradients not in ("none", "zero"):
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}; "
                         f"use 'none' or 'zero'")
    ys = [_as_y(y) for y in _as_list(ys)]
    xs = [_as_x(x) for x in _as_list(xs)]
    grad_ys = _as_list(grad_ys) if grad_ys is not None else [None] * len(ys)
    if len(grad_ys) != len(ys):
        raise ValueError(f"Passed {len(grad_ys)} grad_ys for {len(ys)} ys")
    graph = ys[0].graph
    stopped = _as_list(stop_gradients) if stop_gradients is not None else []
    stop_ops = {_as_y(t).op for t in stopped}
    with graph.as_default(), graph.name_scope(name):
        walk = _Backprop(graph, ys, xs, stop_ops, colocate_gradients_with_ops, gate_gradients)
        walk.seed(grad_ys)
        walk.run()
        return [walk.result(x, unconnected_gradients == "zero") for x in xs]


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _as_y(value: Any) -> Tensor:
    """ys: a Variable stands for its value (the "name/read" tensor)."""
    return convert_to_tensor(value)


def _as_x(value: Any) -> Tensor:
    """xs: a Variable stands for its reference, so every read of it is differentiated (TF1)."""
    if hasattr(value, "_ref_tensor"):
        return value._ref_tensor()
    if not isinstance(value, Tensor):
        raise TypeError(f"xs must be Tensors or Variables, got {type(value).__name__}: {value!r}")
    return value


def _backpropagatable(t: Tensor) -> bool:
    """Floats, and TensorArray flows (variant: their gradient holds the elements')."""
    return t.dtype.is_floating or t.dtype == dtypes.variant


class _Backprop:
    """One reverse pass: the between-ops, their pending counts and the gradient table."""

    def __init__(self, graph: Graph, ys: list[Tensor], xs: list[Tensor], stop_ops: set[Operation],
                 colocate: bool, gate: bool) -> None:
        self.graph, self.ys, self.xs = graph, ys, xs
        self.colocate, self.gate = colocate, gate
        self.consumers = _consumers(graph)
        reached = _reached_from({x.op for x in xs}, self.consumers)
        self.between = _between(reached, [y.op for y in ys])
        self.pending: dict[Operation, int] = {op: 0 for op in self.between}
        for op in self.between:
            for t in op.inputs:
                if t.op in self.between:
                    self.pending[t.op] += 1
        self.stop_ops = stop_ops | _stop_ops({x.op for x in xs}, self.pending)
        self.grads: _GradTable = {}

    # ---- the walk -------------------------------------------------------------------
    def seed(self, grad_ys: list[Any]) -> None:
        """Record the gradient of each y: grad_ys[i], or ones shaped like y."""
        for i, (y, g) in enumerate(zip(self.ys, grad_ys)):
            with self._near(y.op):
                if g is None:
                    g = array_ops.ones_like(y, name=f"grad_ys_{i}")
                else:
                    g = convert_to_tensor(g, dtype=y.dtype, name=f"grad_ys_{i}")
            self._add(y, g)

    def run(self) -> None:
        ready = (y.op for y in self.ys if y.op in self.between and self.pending[y.op] == 0)
        queue = deque(_unique(ready))
        while queue:
            op = queue.popleft()
            in_grads = self._backprop(op)
            for t, g in zip(op.inputs, in_grads):
                if g is not None:
                    self._set_shape(op, t, g)
                    self._add(t, g)
            for t in op.inputs:
                if t.op in self.between:
                    self.pending[t.op] -= 1
                    if self.pending[t.op] == 0:
                        queue.append(t.op)

    def _backprop(self, op: Operation) -> Sequence[Tensor | None]:
        """Call op's gradient function on its (summed) output gradients."""
        with self._near(op):
            out_grads = self._aggregate(op)
            if op in self.stop_ops or all(g is None for g in out_grads):
                return [None] * len(op.inputs)
            fn = gradient_function(op)
            if fn is None:
                return [None] * len(op.inputs)
            for i, t in enumerate(op.outputs):  # TF: silent float outputs get zeros
                if out_grads[i] is None and _backpropagatable(t):
                    out_grads[i] = array_ops.zeros_like(t)
                elif isinstance(out_grads[i], IndexedSlices) and op.type not in _SPARSE_THROUGH:
                    out_grads[i] = convert_to_tensor(out_grads[i])   # densify for this op
            with self.graph.name_scope(op.name + "_grad"):
                returned = fn(op, *out_grads)
                # TF takes a bare gradient (or None) from a function of a one-input op
                in_grads = list(returned) if isinstance(returned, (list, tuple)) else [returned]
                if len(in_grads) != len(op.inputs):
                    raise ValueError(
                        f"The gradient function of {op.type} returned {len(in_grads)} gradients "
                        f"for op '{op.name}', which has {len(op.inputs)} inputs")
                # A gradient for an input that lies on no path from an x is never used: drop
                # it before gating, so the gate does not force it to be computed (TF's tuple
                # does: e.g. a first layer's MatMul gradient w.r.t. the input batch).
                in_grads = [g if t.op in self.between else None
                            for t, g in zip(op.inputs, in_grads)]
                # a Merge's gradients go into different tf.cond branches, one of them dead: a
                # gate joining them would make both dead
                if self.gate and op.type != "Merge" and sum(g is not None for g in in_grads) > 1:
                    in_grads = self._gated(in_grads)
        return in_grads

    def _gated(self, in_grads: list[Tensor | None]) -> list[Tensor | None]:
        with self.graph.device(None), self.graph.colocate_with(None):
            return gate(in_grads)

    def _near(self, op: Operation) -> Any:
        """colocate_gradients_with_ops: build op's gradient where op runs."""
        stack = ExitStack()
        if self.colocate:
            stack.enter_context(self.graph.colocate_with(op))
        return stack

    # ---- the gradient table -----------------------------------------------------------
    def _add(self, t: Tensor, g: Tensor) -> None:
        slots = self.grads.setdefault(t.op, [[] for _ in t.op.outputs])
        slots[t.value_index].append(g)

    def _aggregate(self, op: Operation) -> list[Tensor | None]:
        """Each output's gradients summed (add_n); stored back so it happens once."""
        slots = self.grads.get(op)
        if slots is None:
            return [None] * len(op.outputs)
        for i, received in enumerate(slots):
            if isinstance(received, list):
                slots[i] = None if not received else received[0] if len(received) == 1 \
                    else _sum(received)
        return list(slots)

    def result(self, x: Tensor, zeros: bool) -> Tensor | None:
        g = self._aggregate(x.op)[x.value_index]
        if g is None and zeros:
            return array_ops.zeros_like(x)
        return g

    @staticmethod
    def _set_shape(op: Operation, t: Tensor, g: Tensor) -> None:
        if isinstance(g, IndexedSlices):
            return
        try:
            g.set_shape(t.shape)
        except ValueError:
            raise ValueError(
                f"Incompatible shapes between op input and calculated input gradient. Forward "
                f"operation: {op.name}. Input: {t.name} {t.shape}. Gradient: {g.name} {g.shape}."
            ) from None


def gate(tensors: list[Tensor | None]) -> list[Tensor | None]:
    """The tensors (Nones kept), each usable only once all of them are computed.

    TF's ``tuple``: a NoOp waits for all; each output is an Identity of its input,
    colocated with it, that depends on the NoOp. The gate adds no transfer between tasks.
    """
    present = [t for t in tensors if t is not None]
    if len(present) < 2:
        return list(tensors)
    graph = present[0].graph
    parts = [p for t in present for p in _parts(t)]
    barrier = group(*parts)

    def gated(t: Tensor) -> Tensor:
        with graph.colocate_with(t.op), graph.control_dependencies([barrier]):
            return array_ops.identity(t)

    out: list[Any] = []
    for t in tensors:
        if t is None:
            out.append(None)
        elif isinstance(t, IndexedSlices):
            out.append(IndexedSlices(gated(t.values), gated(t.indices), t.dense_shape))
        else:
            out.append(gated(t))
    return out


def _parts(t: Any) -> list[Tensor]:
    return [t.values, t.indices] if isinstance(t, IndexedSlices) else [t]


def _sum(grads: list[Any]) -> Any:
    """Several gradients of one tensor: IndexedSlices concatenated (their rows add up when
    applied or densified), else everything densified and added."""
    if all(isinstance(g, IndexedSlices) for g in grads):
        return IndexedSlices(array_ops.concat([g.values for g in grads], 0),
                             array_ops.concat([g.indices for g in grads], 0), grads[0].dense_shape)
    return math_ops.add_n([convert_to_tensor(g) for g in grads])


# ---- graph walks ------------------------------------------------------------------------
def _consumers(graph: Graph) -> dict[Tensor, list[Operation]]:
    table: dict[Tensor, list[Operation]] = {}
    for op in graph.get_operations():
        for t in op.inputs:
            table.setdefault(t, []).append(op)
    return table


def _reached_from(from_ops: set[Operation],
                  consumers: dict[Tensor, list[Operation]]) -> set[Operation]:
    """Ops reachable from ``from_ops`` along float tensors."""
    reached: set[Operation] = set()
    queue = deque(from_ops)
    while queue:
        op = queue.popleft()
        if op in reached:
            continue
        reached.add(op)
        for t in op.outputs:
            if _backpropagatable(t):
                queue.extend(consumers.get(t, ()))
    return reached


def _between(reached: set[Operation], to_ops: list[Operation]) -> set[Operation]:
    """Reached ops from which some y can be reached: the ops on an x -> y path."""
    between: set[Operation] = set()
    queue = deque(to_ops)
    while queue:
        op = queue.popleft()
        if op in reached and op not in between:
            between.add(op)
            queue.extend(t.op for t in op.inputs)
    return between


def _stop_ops(from_ops: set[Operation], pending: dict[Operation, int]) -> set[Operation]:
    """x ops with no between-op input: nothing upstream of them needs a gradient."""
    return {op for op in from_ops if all(pending.get(t.op, 0) == 0 for t in op.inputs)}


def _unique(ops: Iterable[Operation]) -> list[Operation]:
    return list(dict.fromkeys(ops))


while_grad.use_gradients(gradients)  # the While gradient differentiates its body with it

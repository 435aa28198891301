"""tf.while_loop as one functional op: the loop's body is a subgraph the While kernel runs.

TF1 builds a loop from Enter/Exit/NextIteration frames that its executor tracks per
iteration. zmtf builds the condition and the body once, in the caller's graph, inside a
``WhileContext`` that records every op they create; those ops are then serialized into
the ``While`` op's attrs (``graph``: JSON of ``graph_io.graph_to_dict``, ``arrays``: its
Const values), so the loop travels to a worker like any other op. Tensors from outside
the loop that the body reads (weights, inputs) are *captured*: they become extra inputs
of the While op, fed to the subgraph as placeholders named ``_capture_<i>``. The ops of
the body stay in the caller's graph, unreachable from anything but the While op's attrs:
a step never runs them directly. Variables created in the body (an RNN cell's weights
on its first call) are lifted out of the loop, as in TF1 (``Graph.outside_loops``).

The While op's outputs are the loop variables' final values, then for each loop variable
its *history*, the values it took after each iteration stacked on a new first axis
(``[T, ...]``, the last one the final value), then ``T``, the number of iterations. The history feeds the gradient
(``zmtf/training/while_grad.py`` runs the body's gradient backwards over it), and
``dynamic_rnn``/``scan`` read their per-step outputs from it.

Limits, each a clear error: the body runs on one device (the While op's); a loop
variable keeps its dtype, and its shape unless ``shape_invariants`` relaxes it; a body
cannot assign to variables; gradients recompute the body's forward values, so a body
with random ops (dropout) cannot be differentiated.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

from zmtf.framework import dtypes
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.graph_io import graph_to_dict
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.array_ops import identity, placeholder, stop_gradient
from zmtf.ops.cond_ops import _flatten
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape, as_shape

CAPTURE_PREFIX = "_capture_"
#: ops whose output is state, not a value: a loop cannot capture them
STATE_OPS = frozenset({"Variable", "VariableV2", "FIFOQueue", "RandomShuffleQueue", "PaddingFIFOQueue"})


class WhileContext:
    """The ops created while a loop's condition and body are built (see ``Graph.create_op``)."""

    def __init__(self) -> None:
        self.ops: list[Operation] = []


def _history_shape(shape: TensorShape) -> TensorShape:
    return TensorShape(None) if shape.ndims is None else TensorShape([None] + list(shape.dims))


@op_def("While")
def _while_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    specs = [(dtypes.as_dtype(d), TensorShape(s)) for d, s in attrs["loop_specs"]]
    return specs + [(dtype, _history_shape(shape)) for dtype, shape in specs] + [
        (dtypes.int32, TensorShape([]))]


@op_def("WhileGrad")
def _while_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.as_dtype(d), TensorShape(s)) for d, s in attrs["grad_specs"]]


class Subgraph:
    """Ops of one WhileContext (or several), cut out of their graph with captures explicit."""

    def __init__(self, ops: Sequence[Operation]) -> None:
        self.ops = sorted(set(ops), key=lambda op: op.creation_index)
        members = set(self.ops)
        self.captures: list[Tensor] = []     # outside tensors the ops read, in first-use order
        self.control: list[Operation] = []   # outside ops they wait for
        for op in self.ops:
            for t in op.inputs:
                if t.op not in members and t not in self.captures:
                    if t.op.type in STATE_OPS:
                        raise ValueError(f"tf.while_loop: '{op.name}' ({op.type}) in the loop uses "
                                         f"the state '{t.op.name}' itself; a zmtf loop can read "
                                         f"variables (captured by value) but not update them")
                    self.captures.append(t)
            for c in op.control_inputs:
                if c not in members and c not in self.control:
                    self.control.append(c)

    def capture_name(self, t: Tensor) -> str:
        return f"{CAPTURE_PREFIX}{self.captures.index(t)}:0"

    def serialize(self, graph: Any) -> dict[str, Any]:
        """{"graph": JSON, "arrays": [...]}: the ops with captures as placeholders, devices
        and colocations dropped (the subgraph runs where its While op runs)."""
        data, arrays = graph_to_dict(graph, ops=self.ops)
        renamed = {t.name: self.capture_name(t) for t in self.captures}
        stubs = [{"name": f"{CAPTURE_PREFIX}{i}", "op": "Placeholder", "inputs": [],
                  "control_inputs": [], "device": "", "colocation": [],
                  "attrs": {"dtype": t.dtype.name, "shape": t.shape.dims},
                  "outputs": [[t.dtype.name, t.shape.dims]]} for i, t in enumerate(self.captures)]
        members = {op.name for op in self.ops}
        for node in data["nodes"]:
            node["inputs"] = [renamed.get(name, name) for name in node["inputs"]]
            node["control_inputs"] = [c for c in node["control_inputs"] if c in members]
            node["device"], node["colocation"] = "", []
        data["nodes"] = stubs + data["nodes"]
        return {"graph": json.dumps(data, separators=(",", ":")), "arrays": arrays}


def _loop_placeholders(flat: list[Tensor], invariants: list[Any] | None) -> list[Tensor]:
    out = []
    for i, value in enumerate(flat):
        shape = value.shape if invariants is None or invariants[i] is None else as_shape(invariants[i])
        if not shape.is_compatible_with(value.shape):
            raise ValueError(f"tf.while_loop: the shape invariant {shape} of loop variable {i} is "
                             f"not compatible with its initial value's shape {value.shape}")
        out.append(placeholder(value.dtype, shape, name="loop_var"))
    return out


def _check_body_outputs(inputs: list[Tensor], outputs: list[Tensor]) -> None:
    for i, (x, y) in enumerate(zip(inputs, outputs)):
        if x.dtype != y.dtype:
            raise TypeError(f"tf.while_loop: loop variable {i} enters the body as {x.dtype.name} "
                            f"and leaves it as {y.dtype.name}; the body must keep each dtype")
        if not _fits(y.shape, x.shape):
            raise ValueError(
                f"tf.while_loop: loop variable {i} has shape {x.shape} on entry and {y.shape} "
                f"after one iteration. Provide shape invariants using the `shape_invariants` "
                f"argument of tf.while_loop (None for the dimensions that change)")


def _fits(shape: TensorShape, invariant: TensorShape) -> bool:
    """``shape`` is at least as specific as ``invariant`` and agrees with it."""
    if invariant.ndims is None:
        return True
    if shape.ndims != invariant.ndims:
        return False
    return all(want is None or got == want for got, want in zip(shape.dims, invariant.dims))


def build_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, maximum_iterations: Any = None,
               name: str | None = None) -> tuple[Operation, Callable[[list[Any]], Any]]:
    """Build the While op; returns it and the function that packs flat values as loop_vars."""
    if not callable(cond) or not callable(body):
        raise TypeError("tf.while_loop: cond and body must be callables")
    graph = get_default_graph()
    flat_init, pack = _flatten(loop_vars)
    if not flat_init:
        raise ValueError("tf.while_loop: loop_vars must contain at least one tensor")
    invariants = None
    if shape_invariants is not None:
        invariants, _ = _flatten(shape_invariants)
        if len(invariants) != len(flat_init):
            raise ValueError(f"tf.while_loop: {len(invariants)} shape invariants for "
                             f"{len(flat_init)} loop variables")
    with graph.name_scope(name or "while") as scope:
        flat_init = [convert_to_tensor(v) for v in flat_init]
        limit = None if maximum_iterations is None else convert_to_tensor(
            maximum_iterations, dtype=dtypes.int32, name="maximum_iterations")
        outer = graph._while_context
        context = WhileContext()
        graph._while_context = context
        try:
            inputs = _loop_placeholders(flat_init, invariants)
            keep_going = convert_to_tensor(cond(*_as_args(pack(inputs), loop_vars)))
            if keep_going.dtype != dtypes.bool_ or keep_going.shape.ndims not in (None, 0):
                raise TypeError(f"tf.while_loop: cond must return a scalar bool tensor, got "
                                f"{keep_going.dtype.name} {keep_going.shape}")
            keep_going = identity(keep_going, name="cond_value")
            result = body(*_as_args(pack(inputs), loop_vars))
            flat_out, _ = _flatten(result if isinstance(result, (list, tuple, dict)) or
                                   not isinstance(loop_vars, (list, tuple)) else [result])
            if len(flat_out) != len(inputs):
                raise ValueError(f"tf.while_loop: the body returned {len(flat_out)} values for "
                                 f"{len(inputs)} loop variables; it must return the same structure")
            flat_out = [identity(convert_to_tensor(v), name="next_value") for v in flat_out]
            _check_body_outputs(inputs, flat_out)
        finally:
            graph._while_context = outer
        sub = Subgraph(context.ops)
        attrs = {
            **sub.serialize(graph),
            "loop_specs": [[t.dtype.name, t.shape.dims] for t in inputs],
            "feeds": [t.name for t in inputs] + [sub.capture_name(t) for t in sub.captures],
            "cond_fetch": keep_going.name,
            "body_fetches": [t.name for t in flat_out],
            "has_limit": limit is not None,
        }
        op_inputs = flat_init + sub.captures + ([limit] if limit is not None else [])
        with graph.control_dependencies(sub.control or None):
            op = apply_op("While", op_inputs, attrs, name=scope)
    op._while_parts = (context, inputs, flat_out, sub)   # for the gradient (training/while_grad.py)
    return op, pack


def _as_args(packed: Any, loop_vars: Any) -> list[Any]:
    """TF1 calls cond and body with the loop variables as separate arguments."""
    return list(packed) if isinstance(loop_vars, (list, tuple)) else [packed]


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10, back_prop: bool = True,
               swap_memory: bool = False, name: str | None = None, maximum_iterations: Any = None,
               return_same_structure: bool = False) -> Any:
    """Repeat ``body`` while ``cond`` holds (TF1's tf.while_loop): one While op, run by its kernel.

    ``parallel_iterations`` and ``swap_memory`` are accepted for compatibility: iterations
    run one after the other. ``back_prop=False`` marks the outputs as not differentiable.
    """
    op, pack = build_loop(cond, body, loop_vars, shape_invariants, maximum_iterations, name)
    n = len(op._while_parts[1])
    finals = list(op.outputs[:n])
    if not back_prop:
        finals = [stop_gradient(t) for t in finals]
    packed = pack(finals)
    if not return_same_structure and isinstance(loop_vars, (list, tuple)) and len(loop_vars) == 1:
        return packed[0]
    return packed


def loop_history(op: Operation, index: int) -> Tensor:
    """The values loop variable ``index`` took after each iteration, as ``[T, ...]``."""
    n = len(op._while_parts[1])
    return op.outputs[n + index]


def loop_iterations(op: Operation) -> Tensor:
    return op.outputs[-1]

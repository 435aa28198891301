"""The gradient of tf.while_loop: the body's gradient, run backwards over the loop's history.

The body maps the loop values v_t to v_t+1 (reading captured tensors c). Its gradient
is built once, symbolically, next to the body's own ops: ``tf.gradients`` of the body's
outputs with respect to its loop placeholders and to c, weighted by placeholders for the
gradient of what the iteration produced. The forward ops and those gradient ops form one
subgraph that a ``WhileGrad`` op runs for t = T-1 .. 0 on the history the While op
recorded (v_1 .. v_T): the gradient reaching v_t+1 is what the next iteration sent back
plus what flowed into the history at t (dynamic_rnn's per-step outputs), the body's
vector-Jacobian product carries it to v_t, and c's gradient is the sum over iterations. The body's forward values are recomputed (not stored), so a body
with random ops has no gradient here: its second run would draw other numbers.
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops
from zmtf.ops.candidate_sampling_ops import SAMPLER_OPS
from zmtf.ops.random_ops import RANDOM_OPS
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.while_ops import Subgraph, WhileContext


_RANDOM = frozenset(RANDOM_OPS) | frozenset(SAMPLER_OPS) | {"RandomShuffle"}


#: tf.gradients, which differentiates the loop body. gradients.py imports this module (to
#: register the While gradient) and fills the slot at import, so this module does not import it.
_GRADIENTS: dict[str, Callable[..., Any]] = {}


def use_gradients(function: Callable[..., Any]) -> None:
    """Called by gradients.py once ``gradients`` is defined."""
    _GRADIENTS["gradients"] = function


def _floating(t: Tensor) -> bool:
    """What carries a gradient through a loop: floats and TensorArray flows."""
    return t.dtype.is_floating or t.dtype == dtypes.variant


@gradient("While")
def _while_grad(op: Operation, *grads: Any) -> list[Any]:
    gradients = _GRADIENTS["gradients"]

    parts = getattr(op, "_while_parts", None)
    if parts is None:
        raise LookupError(f"No gradient for '{op.name}' (While): its loop was not built in this "
                          f"process (an imported graph); build the loop with tf.while_loop here")
    context, inputs, outputs, sub = parts
    n = len(inputs)
    float_vars = [k for k in range(n) if _floating(inputs[k])]
    float_captures = [j for j, c in enumerate(sub.captures) if _floating(c)]
    none = [None] * len(op.inputs)
    if not float_vars:
        return none
    stateful = [o for o in context.ops if o.type in _RANDOM]
    if stateful:
        raise ValueError(f"tf.while_loop '{op.name}': its gradient recomputes the body, whose "
                         f"op '{stateful[0].name}' ({stateful[0].type}) is random or stateful "
                         f"and would not repeat its values; move it out of the loop")
    graph = op.graph
    grad_context = WhileContext()
    outer, graph._while_context = graph._while_context, grad_context
    try:
        grad_ys = [array_ops.placeholder(outputs[k].dtype, outputs[k].shape, name="grad_y")
                   for k in float_vars]
        xs = [inputs[k] for k in float_vars] + [sub.captures[j] for j in float_captures]
        # the captures are the body's inputs from outside: stop at them, or a capture
        # computed from another (keys = f(memory), both read in the body) would pass its
        # gradient on to that one here and again outside the loop
        vjp = gradients([outputs[k] for k in float_vars], xs, grad_ys=grad_ys,
                        stop_gradients=[sub.captures[j] for j in float_captures],
                        unconnected_gradients="zero")
        vjp = [array_ops.identity(convert_to_tensor(g), name="grad_x") for g in vjp]
    finally:
        graph._while_context = outer
    both = Subgraph(list(context.ops) + grad_context.ops)
    finals = [g if g is not None else array_ops.zeros_like(t) for g, t in zip(grads[:n], op.outputs[:n])]
    histories = list(op.outputs[n:2 * n])
    history_grads = [g if g is not None else array_ops.zeros_like(h)
                     for g, h in zip(grads[n:2 * n], histories)]
    attrs = {
        **both.serialize(graph),
        "feeds": [t.name for t in inputs] + [both.capture_name(c) for c in both.captures]
        + [t.name for t in grad_ys],
        "fetches": [t.name for t in vjp],
        "num_loop_vars": n,
        "num_captures": len(both.captures),
        "float_vars": float_vars,
        "capture_positions": [both.captures.index(sub.captures[j]) for j in float_captures],
        "grad_specs": [[t.dtype.name, t.shape.dims] for t in inputs]
        + [[sub.captures[j].dtype.name, sub.captures[j].shape.dims] for j in float_captures],
    }
    grad_op = apply_op("WhileGrad", [op.outputs[-1], *op.inputs[:n], *histories, *both.captures, *finals,
                                     *history_grads], attrs, name="WhileGrad")
    result = list(none)
    for k in float_vars:
        result[k] = grad_op.outputs[k]
    for position, j in enumerate(float_captures):
        result[n + j] = grad_op.outputs[n + position]
    return result

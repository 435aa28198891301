"""Gradient of TopKV2 (TF's _TopKGrad): the values' gradient goes back to the entries they
came from, zeros elsewhere; k and InTopKV2 pass none."""

from __future__ import annotations

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops.math_grad import shape_of

not_differentiable("InTopKV2")


@gradient("TopKV2")
def _top_k_grad(op: Operation, grad_values: Tensor, grad_indices: Tensor | None) -> list:
    x = op.inputs[0]
    static = x.shape.as_list() if x.shape.ndims is not None else None
    dx = apply_op("TopKGrad", [grad_values, op.outputs[1], shape_of(x)],
                  {"_static_shape": static}).outputs[0]
    return [dx, None]

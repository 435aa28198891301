"""Gradients of ReverseSequence (the same reverse), GatherNd (ScatterNd into zeros) and
ScatterNd (GatherNd of the gradient); the candidate samplers have none."""

from __future__ import annotations

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops.math_grad import shape_of
from zmtf.ops.sequence_ops import gather_nd, scatter_nd

not_differentiable("LogUniformCandidateSampler")
not_differentiable("UniformCandidateSampler")
not_differentiable("ComputeAccidentalHits")

Grads = list[Tensor | None]


@gradient("ReverseSequence")
def _reverse_sequence_grad(op: Operation, grad: Tensor) -> Grads:
    lengths = op.inputs[1]
    return [apply_op("ReverseSequence", [grad, lengths], dict(op.attrs)).outputs[0], None]


@gradient("GatherNd")
def _gather_nd_grad(op: Operation, grad: Tensor) -> Grads:
    params, indices = op.inputs
    dx = scatter_nd(indices, grad, shape_of(params))
    dx.set_shape(params.shape)
    return [dx, None]


@gradient("ScatterNd")
def _scatter_nd_grad(op: Operation, grad: Tensor) -> Grads:
    return [None, gather_nd(grad, op.inputs[0]), None]

"""Gradients of the tf.nn ops: activations, bias_add, softmaxes and the cross-entropies."""

from __future__ import annotations

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops, math_ops, nn_ops
from zmtf.ops.math_grad import sum_to

Grads = list[Tensor | None]


@gradient("Relu")
def _relu_grad(op: Operation, grad: Tensor) -> Grads:
    # x > 0 exactly where relu(x) > 0, so the output serves as the features (as in TF)
    return [apply_op("ReluGrad", [grad, op.outputs[0]]).outputs[0]]


@gradient("Relu6")
def _relu6_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    inside = math_ops.logical_and(math_ops.greater(x, 0), math_ops.less(x, 6))
    return [grad * math_ops.cast(inside, grad.dtype)]


@gradient("Softplus")
def _softplus_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad * math_ops.sigmoid(op.inputs[0])]


@gradient("BiasAdd")
def _bias_add_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad, sum_to(grad, op.inputs[1])]


@gradient("Softmax")
def _softmax_grad(op: Operation, grad: Tensor) -> Grads:
    y = op.outputs[0]  # dx = (dy - sum(dy * y)) * y over the last axis
    return [(grad - math_ops.reduce_sum(grad * y, axis=-1, keepdims=True)) * y]


@gradient("LogSoftmax")
def _log_softmax_grad(op: Operation, grad: Tensor) -> Grads:
    softmax = math_ops.exp(op.outputs[0])
    return [grad - math_ops.reduce_sum(grad, axis=-1, keepdims=True) * softmax]


def _per_example(grad_loss: Tensor, rows: Tensor) -> Tensor:
    """The [batch] loss gradient times a [batch, classes] tensor, row by row."""
    return array_ops.expand_dims(grad_loss, -1) * rows


@gradient("SoftmaxCrossEntropyWithLogits")
def _xent_grad(op: Operation, grad_loss: Tensor, grad_backprop: Tensor) -> Grads:
    # The op's second output is softmax(logits) - labels: the logits gradient, ready made.
    # (A gradient flowing into that output, a second derivative, is not propagated.)
    logits = op.inputs[0]
    return [_per_example(grad_loss, op.outputs[1]),
            _per_example(grad_loss, -nn_ops.log_softmax(logits))]


@gradient("SparseSoftmaxCrossEntropyWithLogits")
def _sparse_xent_grad(op: Operation, grad_loss: Tensor, grad_backprop: Tensor) -> Grads:
    return [_per_example(grad_loss, op.outputs[1]), None]

"""Gradients of convolution and pooling: each is the matching backprop op, as in TF.

DepthwiseConv2dNative and its two backprops follow the same bilinear pattern as Conv2D's.

Conv2D's input and filter gradients are Conv2DBackpropInput / Conv2DBackpropFilter. Those two
are differentiable as well (conv2d_transpose is Conv2DBackpropInput, and trains its filter):
all three ops are bilinear in their two float inputs, so each one's gradients are the other two.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops.math_grad import shape_of

Grads = list[Tensor | None]


def _conv_attrs(op: Operation) -> dict[str, Any]:
    return {key: op.get_attr(key) for key in ("strides", "padding", "data_format", "dilations")}


def _input_grad(op: Operation, x: Tensor, kernel: Tensor, grad: Tensor) -> Tensor:
    return apply_op("Conv2DBackpropInput", [shape_of(x), kernel, grad], _conv_attrs(op)).outputs[0]


def _filter_grad(op: Operation, x: Tensor, kernel: Tensor, grad: Tensor) -> Tensor:
    return apply_op("Conv2DBackpropFilter", [x, shape_of(kernel), grad], _conv_attrs(op)).outputs[0]


def _conv(op: Operation, x: Tensor, kernel: Tensor) -> Tensor:
    return apply_op("Conv2D", [x, kernel], _conv_attrs(op)).outputs[0]


@gradient("Conv2D")
def _conv2d_grad(op: Operation, grad: Tensor) -> Grads:
    x, kernel = op.inputs
    return [_input_grad(op, x, kernel, grad), _filter_grad(op, x, kernel, grad)]


@gradient("Conv2DBackpropInput")
def _conv2d_backprop_input_grad(op: Operation, grad: Tensor) -> Grads:
    # y = conv2d^T(dy; w): dy's gradient is conv2d(grad; w), w's is the filter gradient of
    # a conv2d whose input is ``grad`` and whose output gradient is ``dy``
    _, kernel, out_backprop = op.inputs
    return [None, _filter_grad(op, grad, kernel, out_backprop), _conv(op, grad, kernel)]


@gradient("Conv2DBackpropFilter")
def _conv2d_backprop_filter_grad(op: Operation, grad: Tensor) -> Grads:
    x, filter_sizes, out_backprop = op.inputs
    return [apply_op("Conv2DBackpropInput", [shape_of(x), grad, out_backprop],
                     _conv_attrs(op)).outputs[0],
            None, _conv(op, x, grad)]


def _depthwise(op_type: str, inputs: list[Tensor], op: Operation) -> Tensor:
    return apply_op(op_type, inputs, _conv_attrs(op)).outputs[0]


@gradient("DepthwiseConv2dNative")
def _depthwise_grad(op: Operation, grad: Tensor) -> Grads:
    x, kernel = op.inputs
    return [_depthwise("DepthwiseConv2dNativeBackpropInput", [shape_of(x), kernel, grad], op),
            _depthwise("DepthwiseConv2dNativeBackpropFilter", [x, shape_of(kernel), grad], op)]


@gradient("DepthwiseConv2dNativeBackpropInput")
def _depthwise_backprop_input_grad(op: Operation, grad: Tensor) -> Grads:
    # bilinear in (filter, out_backprop), as Conv2DBackpropInput is
    _, kernel, out_backprop = op.inputs
    return [None, _depthwise("DepthwiseConv2dNativeBackpropFilter",
                             [grad, shape_of(kernel), out_backprop], op),
            _depthwise("DepthwiseConv2dNative", [grad, kernel], op)]


@gradient("DepthwiseConv2dNativeBackpropFilter")
def _depthwise_backprop_filter_grad(op: Operation, grad: Tensor) -> Grads:
    x, _, out_backprop = op.inputs
    return [_depthwise("DepthwiseConv2dNativeBackpropInput", [shape_of(x), grad, out_backprop],
                       op),
            None, _depthwise("DepthwiseConv2dNative", [x, grad], op)]


def _pool_attrs(op: Operation) -> dict[str, Any]:
    return {key: op.get_attr(key) for key in ("ksize", "strides", "padding", "data_format")}


@gradient("MaxPool")
def _max_pool_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    return [apply_op("MaxPoolGrad", [x, op.outputs[0], grad], _pool_attrs(op)).outputs[0]]


@gradient("AvgPool")
def _avg_pool_grad(op: Operation, grad: Tensor) -> Grads:
    return [apply_op("AvgPoolGrad", [shape_of(op.inputs[0]), grad], _pool_attrs(op)).outputs[0]]

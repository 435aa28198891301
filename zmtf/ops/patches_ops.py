"""``tf.extract_image_patches`` / ``tf.image.extract_patches``: the ExtractImagePatches op.

Output pixel (i, j) holds the ``ksizes`` window (taps ``rates`` apart) at that position,
flattened row, column, channel: [batch, out_rows, out_cols, k_rows * k_cols * depth].
That is a depthwise convolution with one-hot filters, channels reordered, so the gradient is
that convolution's input gradient (DepthwiseConv2dNativeBackpropInput), no new op needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.conv3d_ops import full_rank_list, window_output
from zmtf.ops.conv_ops import _padding
from zmtf.ops.math_grad import shape_of
from zmtf.ops.static_dims import static_dims
from zmtf.framework.tensor_shape import TensorShape


@op_def("ExtractImagePatches")
def _extract_patches_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    images = inputs[0]
    dims = static_dims(images, 4, "ExtractImagePatches")
    window = attrs["ksizes"][1:3]
    spatial = window_output(dims[1:3], window, {**attrs, "dilations": attrs["rates"]})
    depth = None if dims[3] is None else dims[3] * window[0] * window[1]
    return [(images.dtype, TensorShape([dims[0], *spatial, depth]))]


def extract_image_patches(images: Any, ksizes: Any = None, strides: Any = None,
                          rates: Any = None, padding: Any = None, name: str | None = None,
                          sizes: Any = None) -> Tensor:
    """The ``ksizes`` patches of 4-D ``images`` (every ``strides`` pixels, taps ``rates``
    apart), each flattened into the depth of one output pixel."""
    sizes = ksizes if ksizes is not None else sizes
    if sizes is None or strides is None or rates is None or padding is None:
        raise TypeError("extract_image_patches needs images, ksizes (or sizes), strides, rates "
                        "and padding")
    attrs = {"ksizes": full_rank_list(sizes, 2, "ksizes"),
             "strides": full_rank_list(strides, 2, "strides"),
             "rates": full_rank_list(rates, 2, "rates"), "padding": _padding(padding)}
    x = convert_to_tensor(images, name="images")
    return apply_op("ExtractImagePatches", [x], attrs,
                    name=name or "ExtractImagePatches").outputs[0]


def extract_patches(images: Any, sizes: Any, strides: Any, rates: Any, padding: Any,
                    name: str | None = None) -> Tensor:
    """``tf.image.extract_patches``: extract_image_patches under its TF 2 name."""
    return extract_image_patches(images, sizes, strides, rates, padding, name=name)


@gradient("ExtractImagePatches")
def _extract_patches_grad(op: Operation, grad: Tensor) -> list:
    images = op.inputs[0]
    if not images.dtype.is_floating:
        return [None]
    depth = images.shape.as_list()[3] if images.shape.ndims == 4 else None
    if depth is None:
        raise ValueError(f"the gradient of ExtractImagePatches '{op.name}' needs the depth of "
                         f"its images known at graph construction, got shape {images.shape}")
    k_rows, k_cols = op.get_attr("ksizes")[1:3]
    taps = k_rows * k_cols
    one_hot = np.eye(taps, dtype=images.dtype.np).reshape(k_rows, k_cols, 1, taps)
    filters = constant(np.tile(one_hot, (1, 1, depth, 1)), name="one_hot_taps")
    with get_default_graph().name_scope("ExtractImagePatchesGrad"):
        dims = array_ops.shape(grad)
        split = array_ops.reshape(grad, array_ops.concat([dims[:3], [taps, depth]], 0))
        per_channel = array_ops.reshape(array_ops.transpose(split, [0, 1, 2, 4, 3]), dims)
        attrs = {"strides": op.get_attr("strides"), "padding": op.get_attr("padding"),
                 "dilations": op.get_attr("rates"), "data_format": "NHWC"}
        return [apply_op("DepthwiseConv2dNativeBackpropInput",
                         [shape_of(images), filters, per_channel], attrs).outputs[0]]

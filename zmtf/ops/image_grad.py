"""Gradients of the image primitives: ReverseV2 reverses the gradient back; the resizes
scatter it onto the input pixels they read, with the same weights (TF's ResizeBilinearGrad
and ResizeNearestNeighborGrad). RandomCrop and the gradient ops themselves pass none."""

from __future__ import annotations

import numpy as np

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.image_ops import reverse
from zmtf.ops.selection_ops import strided_slice_spec

not_differentiable("RandomCrop", "ResizeBilinearGrad", "ResizeNearestNeighborGrad")


@gradient("ReverseV2")
def _reverse_grad(op: Operation, grad: Tensor) -> list:
    return [reverse(grad, op.inputs[1]), None]


def _resize_attrs(op: Operation) -> dict:
    return {"align_corners": op.get_attr("align_corners"),
            "half_pixel_centers": op.get_attr("half_pixel_centers")}


def _height_width(image: Tensor) -> Tensor:
    """[height, width] of a 4-D image as int32: a Const when static (keeps the static shape)."""
    dims = image.shape.as_list() if image.shape.ndims is not None else [None] * 4
    if dims[1] is not None and dims[2] is not None:
        return constant(np.asarray(dims[1:3], np.int32), name="size")
    return strided_slice_spec(array_ops.shape(image), [["s", 1, 3, None]])


@gradient("ResizeBilinear")
def _resize_bilinear_grad(op: Operation, grad: Tensor) -> list:
    image = op.inputs[0]
    if not image.dtype.is_floating:
        return [None, None]
    dx = apply_op("ResizeBilinearGrad", [grad, image], _resize_attrs(op)).outputs[0]
    return [dx, None]


@gradient("ResizeNearestNeighbor")
def _resize_nearest_grad(op: Operation, grad: Tensor) -> list:
    image = op.inputs[0]
    if not image.dtype.is_floating:
        return [None, None]
    in_size = _height_width(image)
    dx = apply_op("ResizeNearestNeighborGrad", [grad, in_size], _resize_attrs(op)).outputs[0]
    return [dx, None]

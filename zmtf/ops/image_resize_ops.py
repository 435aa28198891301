"""ResizeBicubic (with its gradient, ResizeBicubicGrad) and ResizeArea, under TF1's names
``tf.image.resize_bicubic`` / ``resize_area``, with TF1's legacy coordinate mapping by
default (see image_ops.py). ResizeArea has no gradient, as in TF."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.image_ops import _resize, _resize_output_shape

@op_def("ResizeBicubic")
def _resize_bicubic_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.float32, _resize_output_shape(inputs[0], inputs[1], "ResizeBicubic"))]


@op_def("ResizeArea")
def _resize_area_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.float32, _resize_output_shape(inputs[0], inputs[1], "ResizeArea"))]


@op_def("ResizeBicubicGrad")
def _resize_bicubic_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[1].dtype, inputs[1].shape)]


def resize_bicubic(images: Any, size: Any, align_corners: bool = False, name: str | None = None,
                   half_pixel_centers: bool = False) -> Tensor:
    """Bicubic resize of 4-D ``images`` to ``size`` = [new_height, new_width]; float32 out
    (Keys' cubic with a = -0.75, or -0.5 with half_pixel_centers, as TF)."""
    return _resize("ResizeBicubic", images, size, align_corners, half_pixel_centers, name)


def resize_area(images: Any, size: Any, align_corners: bool = False,
                name: str | None = None) -> Tensor:
    """Area (box-average) resize of 4-D ``images`` to ``size``; float32 out."""
    return _resize("ResizeArea", images, size, align_corners, False, name)


@gradient("ResizeBicubic")
def _resize_bicubic_grad(op: Operation, grad: Tensor) -> list:
    image = op.inputs[0]
    if not image.dtype.is_floating:
        return [None, None]
    attrs = {"align_corners": op.get_attr("align_corners"),
             "half_pixel_centers": op.get_attr("half_pixel_centers")}
    return [apply_op("ResizeBicubicGrad", [grad, image], attrs).outputs[0], None]

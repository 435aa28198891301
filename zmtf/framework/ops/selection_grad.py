"""Gradients of the selection ops: Select routes the gradient, slices and gathers scatter it.

Select's gradient is Select(cond, grad, 0) / Select(cond, 0, grad): exactly zero on the side
not taken (a mask multiply would give NaN where the gradient is inf). Slice, StridedSlice
and GatherV2 send the gradient back dense, into zeros of the input's shape.
"""

from __future__ import annotations

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.framework.ops import array_ops
from zmtf.framework.ops.math_grad import shape_of
from zmtf.framework.ops.selection_ops import strided_slice_spec, where

Grads = list[Tensor | None]

not_differentiable("Where")


def _static(x: Tensor) -> list | None:
    return x.shape.as_list() if x.shape.ndims is not None else None


@gradient("Select")
def _select_grad(op: Operation, grad: Tensor) -> Grads:
    cond = op.inputs[0]
    zeros = array_ops.zeros_like(grad)
    return [None, where(cond, grad, zeros), where(cond, zeros, grad)]


@gradient("Slice")
def _slice_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    attrs = {"begin": op.attrs["begin"], "_static_shape": _static(x)}
    return [apply_op("SliceGrad", [grad, shape_of(x)], attrs).outputs[0]]


@gradient("StridedSlice")
def _strided_slice_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    attrs = {"spec": op.attrs["spec"], "_static_shape": _static(x)}
    return [apply_op("StridedSliceGrad", [grad, shape_of(x)], attrs).outputs[0]]


@gradient("GatherV2")
def _gather_grad(op: Operation, grad: Tensor) -> Grads:
    params, indices = op.inputs
    attrs = {"axis": op.attrs["axis"], "_static_shape": _static(params)}
    return [apply_op("GatherGrad", [grad, indices, shape_of(params)], attrs).outputs[0], None]


@gradient("Tile")
def _tile_grad(op: Operation, grad: Tensor) -> Grads:
    x = op.inputs[0]
    attrs = {"multiples": op.attrs["multiples"], "_static_shape": _static(x)}
    return [apply_op("TileGrad", [grad, shape_of(x)], attrs).outputs[0]]


@gradient("Pad")
def _pad_grad(op: Operation, grad: Tensor) -> Grads:
    if op.attrs["mode"] != "CONSTANT":
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: Pad) in mode "
                          f"{op.attrs['mode']}: only CONSTANT padding is differentiable in zmtf")
    spec = [["s", a, -b if b else None, None] for a, b in op.attrs["paddings"]]
    return [strided_slice_spec(grad, spec)]

"""Gradients of the array ops: reshapes, transpose, broadcasts, fill, concat and stack.

The gradients of ConcatV2 and Pack cut the incoming gradient with StridedSlice (ConcatV2
needs the sizes along its axis at graph time).
"""

from __future__ import annotations

import numpy as np

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops, math_ops
from zmtf.ops.selection_ops import strided_slice_spec
from zmtf.ops.math_grad import shape_of, sum_to

Grads = list[Tensor | None]

not_differentiable(
    "Const", "Placeholder", "Shape", "Size", "Rank", "ZerosLike", "OnesLike", "OneHot", "Range",
    "StopGradient", "NoOp", "RandomStandardNormal", "RandomUniform", "TruncatedNormal",
    "RandomUniformInt",
    # state: a variable is a leaf, and assignments are not functions of their inputs
    "Variable", "VariableV2", "IsVariableInitialized", "Assign", "AssignAdd", "AssignSub",
    "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "ApplyAdagrad", "ApplyRMSProp",
    "ApplyCenteredRMSProp", "SparseApplyMomentum", "SparseApplyAdagrad", "ApplyAdadelta", "SparseApplyAdadelta", "ApplyFtrl",
    "ApplyFtrlV2", "SparseApplyFtrl", "SparseApplyFtrlV2", "ApplyProximalGradientDescent",
    "ApplyProximalAdagrad", "SparseApplyProximalGradientDescent", "SparseApplyProximalAdagrad",
    "SparseApplyRMSProp", "SparseApplyCenteredRMSProp", "ApplyAdagradDA", "SparseApplyAdagradDA",
)


@gradient("Print")
def _print_grad(op: Operation, grad: Tensor) -> Grads:
    return [grad] + [None] * (len(op.inputs) - 1)


@gradient("CheckNumerics")
def _check_numerics_grad(op: Operation, grad: Tensor) -> Grads:
    """The gradient is checked too, as TF does."""
    return [apply_op("CheckNumerics", [grad], {
        "message": "Not a number (NaN) or infinity (Inf) values detected in gradient. "
                   + op.attrs["message"]}).outputs[0]]


@gradient("Reshape")
def _reshape_grad(op: Operation, grad: Tensor) -> Grads:
    return [array_ops.reshape(grad, shape_of(op.inputs[0])), None]


@gradient("ExpandDims", "Squeeze")
def _reshape_like_input_grad(op: Operation, grad: Tensor) -> Grads:
    return [array_ops.reshape(grad, shape_of(op.inputs[0]))]


@gradient("Transpose")
def _transpose_grad(op: Operation, grad: Tensor) -> Grads:
    perm = op.get_attr("perm")
    if perm is None:  # reversed axes: reversing again undoes it
        return [array_ops.transpose(grad)]
    return [array_ops.transpose(grad, [int(i) for i in np.argsort(perm)])]


@gradient("BroadcastTo")
def _broadcast_to_grad(op: Operation, grad: Tensor) -> Grads:
    return [sum_to(grad, op.inputs[0]), None]


@gradient("SumToShape")
def _sum_to_shape_grad(op: Operation, grad: Tensor) -> Grads:
    return [array_ops.broadcast_to(grad, shape_of(op.inputs[0])), None]


@gradient("Fill")
def _fill_grad(op: Operation, grad: Tensor) -> Grads:
    return [None, math_ops.reduce_sum(grad)]


# ---- concat and stack ---------------------------------------------------------------
def _normalize_axis(op: Operation, axis: int, rank: int | None) -> int:
    """axis in [0, rank); -1 stays -1 when the rank is unknown (then it means 'last')."""
    if rank is not None:
        return axis % rank
    if axis in (0, -1):
        return axis
    raise ValueError(
        f"The gradient of '{op.name}' ({op.type}, axis {axis}) needs inputs of known rank; "
        f"give them static shapes (placeholder(..., shape=[None, 3]) or set_shape)."
    )


def _along(op: Operation, axis: int, item: list) -> list[list]:
    """A StridedSlice spec that applies ``item`` to ``axis`` (counted from the end if < 0)."""
    full = ["s", None, None, None]
    if axis >= 0:
        return [full] * axis + [item]
    return [["e"], item] + [full] * (-axis - 1)


def _static_sizes(op: Operation, axis: int) -> list[int]:
    sizes = [x.shape[axis] if x.shape.ndims is not None else None for x in op.inputs]
    if any(s is None for s in sizes):
        raise ValueError(
            f"The gradient of '{op.name}' (ConcatV2 along axis {axis}) needs every input's size "
            f"along that axis at graph time, got {sizes}; give the inputs static shapes there."
        )
    return [int(s) for s in sizes]


@gradient("ConcatV2")
def _concat_grad(op: Operation, grad: Tensor) -> Grads:
    rank = op.outputs[0].shape.ndims  # grad's rank, even when grad_ys had no static shape
    axis = _normalize_axis(op, int(op.get_attr("axis")), rank)
    sizes = _static_sizes(op, axis)
    offsets = np.cumsum([0] + sizes[:-1]).tolist()
    return [strided_slice_spec(grad, _along(op, axis, ["s", o, o + n, None]))
            for o, n in zip(offsets, sizes)]


@gradient("Pack")
def _pack_grad(op: Operation, grad: Tensor) -> Grads:
    rank = op.outputs[0].shape.ndims
    axis = _normalize_axis(op, int(op.get_attr("axis")), rank)
    return [strided_slice_spec(grad, _along(op, axis, ["i", i])) for i in range(len(op.inputs))]

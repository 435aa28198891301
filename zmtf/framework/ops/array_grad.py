"""Gradients of the array ops: reshapes, transpose, broadcasts, fill, concat and stack.

zmtf has no Slice/Split op yet, so the gradients of ConcatV2 and Pack cut the incoming
gradient with a MatMul against constant 0/1 selection matrices. This is exact (each output
element is one input element times 1, plus zeros) but costs O(rows * total * size) per
piece, and needs the sizes along the concat axis to be known at graph time.
"""

from __future__ import annotations

import numpy as np

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.ops import array_ops, math_ops
from zmtf.framework.ops.constant_op import constant
from zmtf.framework.ops.math_grad import shape_of, sum_to

Grads = list[Tensor | None]

not_differentiable(
    "Const", "Placeholder", "Shape", "Size", "Rank", "ZerosLike", "OnesLike", "OneHot",
    "StopGradient", "NoOp", "RandomStandardNormal", "RandomUniform", "TruncatedNormal",
    # state: a variable is a leaf, and assignments are not functions of their inputs
    "Variable", "VariableV2", "IsVariableInitialized", "Assign", "AssignAdd", "AssignSub",
    "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam",
)


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


def _selection(total: int, offset: int, size: int, dtype: np.dtype) -> Tensor:
    """The [total, size] 0/1 matrix that picks columns offset..offset+size-1."""
    matrix = np.zeros((total, size), dtype)
    matrix[np.arange(offset, offset + size), np.arange(size)] = 1
    return constant(matrix, name="select")


def _cut(op: Operation, grad: Tensor, axis: int,
         sizes: list[int]) -> tuple[list[Tensor], list[int] | None]:
    """``grad`` cut along ``axis`` into pieces of ``sizes``.

    Returns the pieces, each a matrix: [size, rest] when axis is 0, else [rest, size] with
    ``axis`` moved last by the returned permutation (None when no transpose was needed).
    """
    total, offsets = sum(sizes), np.cumsum([0] + sizes[:-1]).tolist()
    rank = op.outputs[0].shape.ndims  # grad's rank, even when grad_ys had no static shape
    axis = _normalize_axis(op, axis, rank)
    select = [_selection(total, o, s, grad.dtype.np) for o, s in zip(offsets, sizes)]
    if axis == 0:
        rows = array_ops.reshape(grad, [total, -1])
        return [math_ops.matmul(m, rows, transpose_a=True) for m in select], None
    perm = None
    if axis != -1 and rank is not None and axis != rank - 1:
        perm = [d for d in range(rank) if d != axis] + [axis]
        grad = array_ops.transpose(grad, perm)
    columns = array_ops.reshape(grad, [-1, total])
    return [math_ops.matmul(columns, m) for m in select], perm


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
    axis = int(op.get_attr("axis"))
    pieces, perm = _cut(op, grad, axis, _static_sizes(op, axis))
    if perm is None:
        return [array_ops.reshape(p, shape_of(x)) for p, x in zip(pieces, op.inputs)]
    inverse = [int(i) for i in np.argsort(perm)]
    out: Grads = []
    for piece, x in zip(pieces, op.inputs):
        if x.shape.is_fully_defined():
            moved_shape: Tensor | list[int | None] = [x.shape.as_list()[p] for p in perm]
        else:
            moved_shape = array_ops.shape(array_ops.transpose(x, perm))
        out.append(array_ops.transpose(array_ops.reshape(piece, moved_shape), inverse))
    return out


@gradient("Pack")
def _pack_grad(op: Operation, grad: Tensor) -> Grads:
    # Each piece holds one input's elements in their own order (the stacked axis had size 1).
    pieces, _ = _cut(op, grad, int(op.get_attr("axis")), [1] * len(op.inputs))
    return [array_ops.reshape(p, shape_of(x)) for p, x in zip(pieces, op.inputs)]


"""Diagonals and bands: ``tf.diag``/``diag_part`` (a rank-k tensor as the diagonal of a
rank-2k one), the batched ``tf.matrix_diag``/``matrix_diag_part``/``matrix_set_diag``/
``matrix_band_part`` over the last two axes, and ``tf.trace``; with their gradients, which
are each other (the diagonal of a gradient, or a gradient placed on the diagonal).

Only the main diagonal (TF's ``k=0``) is built; shape errors with static shapes are
InvalidArgumentErrors when the graph is built.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

Grads = list[Tensor | None]


def _matrix_dims(x: Tensor, function: str) -> list[int | None] | None:
    """x's dims after checking it is a (batch of) matrix, or None for an unknown rank."""
    if x.shape.ndims is None:
        return None
    if x.shape.ndims < 2:
        raise InvalidArgumentError(f"{function}: input must have rank >= 2 (a batch of matrices), "
                                   f"got shape {x.shape} ({x.name})")
    return x.shape.as_list()


def _diag_len(rows: int | None, cols: int | None) -> int | None:
    return None if rows is None or cols is None else min(rows, cols)


@op_def("MatrixDiag")
def _matrix_diag_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    d = inputs[0]
    if d.shape.ndims == 0:
        raise InvalidArgumentError(f"tf.matrix_diag: diagonal must have rank >= 1, got a scalar "
                                   f"({d.name})")
    dims = None if d.shape.ndims is None else d.shape.as_list() + d.shape.as_list()[-1:]
    return [(d.dtype, TensorShape(dims))]


@op_def("MatrixDiagPart")
def _matrix_diag_part_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    dims = _matrix_dims(inputs[0], "tf.matrix_diag_part")
    out = None if dims is None else dims[:-2] + [_diag_len(dims[-2], dims[-1])]
    return [(inputs[0].dtype, TensorShape(out))]


@op_def("MatrixSetDiag")
def _matrix_set_diag_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, d = inputs
    dims = _matrix_dims(x, "tf.matrix_set_diag")
    if x.dtype != d.dtype:
        raise TypeError(f"tf.matrix_set_diag: diagonal is {d.dtype.name}, input is {x.dtype.name}")
    if dims is not None:
        wanted = TensorShape(dims[:-2] + [_diag_len(dims[-2], dims[-1])])
        if not wanted.is_compatible_with(d.shape):
            raise InvalidArgumentError(f"tf.matrix_set_diag: diagonal must have shape {wanted} for "
                                       f"input of shape {x.shape}, got {d.shape}")
    return [(x.dtype, x.shape)]


@op_def("MatrixBandPart")
def _matrix_band_part_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, lower, upper = inputs
    _matrix_dims(x, "tf.matrix_band_part")
    for what, t in (("num_lower", lower), ("num_upper", upper)):
        if t.shape.ndims not in (None, 0) or not t.dtype.is_integer:
            raise InvalidArgumentError(f"tf.matrix_band_part: {what} must be an integer scalar, "
                                       f"got {t.dtype.name} of shape {t.shape}")
    return [(x.dtype, x.shape)]


@op_def("Diag")
def _diag_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    d = inputs[0]
    if d.shape.ndims == 0:
        raise InvalidArgumentError(f"tf.diag: diagonal must have rank >= 1, got a scalar ({d.name})")
    dims = None if d.shape.ndims is None else d.shape.as_list() * 2
    return [(d.dtype, TensorShape(dims))]


@op_def("DiagPart")
def _diag_part_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    half = x.shape.ndims // 2
    head, tail = TensorShape(x.shape.as_list()[:half]), TensorShape(x.shape.as_list()[half:])
    if x.shape.ndims == 0 or x.shape.ndims % 2 or not head.is_compatible_with(tail):
        raise InvalidArgumentError(f"tf.diag_part: input must have an even rank >= 2 with shape "
                                   f"[d1..dk, d1..dk], got {x.shape} ({x.name})")
    return [(x.dtype, head.merge_with(tail))]


def matrix_diag(diagonal: Any, name: str | None = None) -> Tensor:
    """A batch of square matrices with ``diagonal`` ([..., N]) on their diagonals: [..., N, N]."""
    return apply_op("MatrixDiag", [convert_to_tensor(diagonal)], name=name).outputs[0]


def matrix_diag_part(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The diagonals of a batch of matrices: [..., M, N] -> [..., min(M, N)]."""
    return apply_op("MatrixDiagPart", [convert_to_tensor(input)], name=name).outputs[0]


def matrix_set_diag(input: Any, diagonal: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """``input`` with its matrices' diagonals replaced by ``diagonal``."""
    x = convert_to_tensor(input)
    d = convert_to_tensor(diagonal, dtype=x.dtype)
    return apply_op("MatrixSetDiag", [x, d], name=name).outputs[0]


def matrix_band_part(input: Any, num_lower: Any, num_upper: Any,  # noqa: A002
                     name: str | None = None) -> Tensor:
    """Keep ``num_lower`` subdiagonals and ``num_upper`` superdiagonals (negative: all of
    them), zero the rest: ``matrix_band_part(x, -1, 0)`` is the lower triangle."""
    x = convert_to_tensor(input)
    lower = convert_to_tensor(num_lower, dtype=dtypes.int64)
    upper = convert_to_tensor(num_upper, dtype=dtypes.int64)
    return apply_op("MatrixBandPart", [x, lower, upper], name=name).outputs[0]


def diag(diagonal: Any, name: str | None = None) -> Tensor:
    """``out[i1..ik, i1..ik] = diagonal[i1..ik]``, zeros elsewhere: rank k -> rank 2k."""
    return apply_op("Diag", [convert_to_tensor(diagonal)], name=name).outputs[0]


def diag_part(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of ``tf.diag``: rank 2k [d1..dk, d1..dk] -> rank k."""
    return apply_op("DiagPart", [convert_to_tensor(input)], name=name).outputs[0]


def trace(x: Any, name: str | None = None) -> Tensor:
    """The sum of each matrix's diagonal: [..., M, N] -> [...]."""
    with get_default_graph().name_scope(name or "Trace"):
        return math_ops.reduce_sum(matrix_diag_part(x), axis=-1)


# ---- gradients -------------------------------------------------------------------------------
@gradient("MatrixDiag")
def _matrix_diag_grad(op: Operation, grad: Tensor) -> Grads:
    return [matrix_diag_part(grad)]


@gradient("MatrixDiagPart")
def _matrix_diag_part_grad(op: Operation, grad: Tensor) -> Grads:
    return [matrix_set_diag(array_ops.zeros_like(op.inputs[0]), grad)]


@gradient("MatrixSetDiag")
def _matrix_set_diag_grad(op: Operation, grad: Tensor) -> Grads:
    return [matrix_set_diag(grad, array_ops.zeros_like(op.inputs[1])), matrix_diag_part(grad)]


@gradient("MatrixBandPart")
def _matrix_band_part_grad(op: Operation, grad: Tensor) -> Grads:
    return [matrix_band_part(grad, op.inputs[1], op.inputs[2]), None, None]


@gradient("Diag")
def _diag_grad(op: Operation, grad: Tensor) -> Grads:
    return [diag_part(grad)]


@gradient("DiagPart")
def _diag_part_grad(op: Operation, grad: Tensor) -> Grads:
    return [diag(grad)]

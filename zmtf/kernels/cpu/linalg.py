"""Dense linear-algebra kernels over batches of matrices: numpy.linalg (LAPACK) for inverse,
determinants, Cholesky and solve; a row-by-row substitution for the triangular solve, which
numpy lacks without scipy (and which must give inf/nan, not an error, on a zero pivot).

LAPACK has no float16: a float16 inverse runs in float32 and is rounded back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import quiet_fp, shape_str
from zmtf.kernels.registry import register

_F32_F64 = ("float32", "float64")


def _square(x: np.ndarray, node: str) -> np.ndarray:
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise InvalidArgumentError(f"input must be a batch of square matrices, got shape "
                                   f"{shape_str(x.shape)} (node '{node}')")
    return x


def _transposed(x: np.ndarray) -> np.ndarray:
    return np.swapaxes(x, -1, -2)


@register("MatrixInverse", dtypes=("float16",) + _F32_F64)
def matrix_inverse(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    x = _square(inputs[0], node)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    if attrs["adjoint"]:
        work = _transposed(work)
    try:
        if not np.isfinite(work).all():
            raise np.linalg.LinAlgError("non-finite input")
        inverse = np.linalg.inv(work)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(f"Input is not invertible. (node '{node}': a matrix of shape "
                                   f"{shape_str(x.shape)} is singular or not finite)") from None
    return [np.ascontiguousarray(inverse, dtype=x.dtype)]


@register("MatrixDeterminant", dtypes=_F32_F64)
def matrix_determinant(ctx: Any, inputs: list, attrs: dict) -> list:
    x = _square(inputs[0], attrs["_node_name"])
    with quiet_fp():
        return [np.asarray(np.linalg.det(x), dtype=x.dtype)]


@register("LogMatrixDeterminant", dtypes=_F32_F64)
def log_matrix_determinant(ctx: Any, inputs: list, attrs: dict) -> list:
    x = _square(inputs[0], attrs["_node_name"])
    with quiet_fp():
        sign, log_abs = np.linalg.slogdet(x)
    return [np.asarray(sign, dtype=x.dtype), np.asarray(log_abs, dtype=x.dtype)]


@register("Qr", dtypes=_F32_F64)
def qr(ctx: Any, inputs: list, attrs: dict) -> list:
    """Householder QR (LAPACK geqrf) of each matrix."""
    q, r = np.linalg.qr(inputs[0], mode="complete" if attrs["full_matrices"] else "reduced")
    return [q, r]


@register("Cholesky", dtypes=_F32_F64)
def cholesky(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    x = _square(inputs[0], node)
    try:
        return [np.linalg.cholesky(x)]    # LAPACK potrf('L') reads the lower triangle only
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(f"Cholesky decomposition was not successful. The input might "
                                   f"not be valid. (node '{node}': a matrix is not symmetric "
                                   f"positive definite)") from None


def _rhs(matrix: np.ndarray, rhs: np.ndarray, node: str) -> None:
    if rhs.ndim < 2 or rhs.shape[-2] != matrix.shape[-1]:
        raise InvalidArgumentError(f"rhs must have shape [..., {matrix.shape[-1]}, K] for matrix "
                                   f"of shape {shape_str(matrix.shape)}, got "
                                   f"{shape_str(rhs.shape)} (node '{node}')")


@register("MatrixSolve", dtypes=_F32_F64)
def matrix_solve(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    matrix, rhs = inputs
    _square(matrix, node)
    _rhs(matrix, rhs, node)
    if matrix.shape[:-2] != rhs.shape[:-2]:
        raise InvalidArgumentError(f"matrix {shape_str(matrix.shape)} and rhs "
                                   f"{shape_str(rhs.shape)} must have the same batch dimensions "
                                   f"(node '{node}')")
    left = _transposed(matrix) if attrs["adjoint"] else matrix
    try:
        if not np.isfinite(left).all():
            raise np.linalg.LinAlgError("non-finite input")
        return [np.linalg.solve(left, rhs).astype(rhs.dtype, copy=False)]
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(f"Input matrix is not invertible. (node '{node}')") from None


@register("MatrixTriangularSolve", dtypes=_F32_F64)
def matrix_triangular_solve(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    matrix, rhs = inputs
    _square(matrix, node)
    _rhs(matrix, rhs, node)
    lower = attrs["lower"]
    if attrs["adjoint"]:   # solve with A^T, whose triangle is the other one
        matrix, lower = _transposed(matrix), not lower
    triangle = np.tril(matrix) if lower else np.triu(matrix)
    n = matrix.shape[-1]
    batch = np.broadcast_shapes(matrix.shape[:-2], rhs.shape[:-2])
    solution = np.zeros(batch + rhs.shape[-2:], rhs.dtype)
    with quiet_fp():   # a zero pivot gives inf/nan, as TF's
        for i in (range(n) if lower else range(n - 1, -1, -1)):
            # rows not solved yet are still 0, so the whole row of the triangle can be used
            known = np.matmul(triangle[..., i:i + 1, :], solution)[..., 0, :]
            pivot = triangle[..., i, i][..., None]
            solution[..., i, :] = (rhs[..., i, :] - known) / pivot
    return [solution]

"""``tf.linalg`` functions TF builds in Python from other ops, and so does zmtf (their
gradients come with them): ``matvec``, ``cholesky_solve``, ``matrix_solve_ls`` (``lstsq``;
its fast path through the Cholesky factor of the regularized Gramian), ``pinv`` and
``matrix_rank`` (through the SVD).

``matrix_solve_ls(fast=False)`` is the one op here (MatrixSolveLs, minimum-norm least
squares); like TF's it has no gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.diag_ops import matrix_diag, matrix_diag_part
from zmtf.ops.linalg_decomp_ops import svd
from zmtf.ops.linalg_ops import matrix_transpose
from zmtf.ops.linalg_solve_ops import _matrix_dims, cholesky, matrix_triangular_solve
from zmtf.ops.selection_ops import where_v2
from zmtf.framework.tensor_shape import TensorShape

mm = math_ops.batch_matmul


def matvec(a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False,
           a_is_sparse: bool = False, b_is_sparse: bool = False, name: str | None = None) -> Tensor:
    """a [..., M, N] times the vectors b [..., N]: [..., M] (a matmul with b as a column)."""
    with get_default_graph().name_scope(name or "MatVec"):
        a = convert_to_tensor(a, name="a")
        b = convert_to_tensor(b, dtype=a.dtype, name="b")
        product = math_ops.matmul(a, array_ops.expand_dims(b, -1), transpose_a=transpose_a,
                                  adjoint_a=adjoint_a)
        return array_ops.squeeze(product, axis=[-1])


def cholesky_solve(chol: Any, rhs: Any, name: str | None = None) -> Tensor:
    """X with (chol chol^T) X = rhs, for chol the Cholesky factor ``tf.cholesky`` gives."""
    with get_default_graph().name_scope(name or "cholesky_solve"):
        y = matrix_triangular_solve(chol, rhs, lower=True, adjoint=False)
        return matrix_triangular_solve(chol, y, lower=True, adjoint=True)


def _regularized_gramian_cholesky(matrix: Tensor, l2_regularizer: Any, first_kind: bool) -> Tensor:
    """The Cholesky factor of A^T A + l2 I (first kind) or of A A^T + l2 I."""
    gramian = mm(matrix, matrix, adjoint_a=first_kind, adjoint_b=not first_kind)
    if isinstance(l2_regularizer, Tensor) or l2_regularizer != 0:
        l2 = (math_ops.cast(l2_regularizer, matrix.dtype) if isinstance(l2_regularizer, Tensor)
              else convert_to_tensor(l2_regularizer, dtype=matrix.dtype))
        gramian += l2 * matrix_diag(array_ops.ones_like(matrix_diag_part(gramian)))
    return cholesky(gramian)


@op_def("MatrixSolveLs")
def _solve_ls_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    matrix, rhs, _ = inputs
    dims = _matrix_dims("MatrixSolveLs", matrix, square=False)
    rhs_dims = _matrix_dims("MatrixSolveLs", rhs, square=False)
    if dims is None or rhs_dims is None:
        return [(rhs.dtype, TensorShape(None))]
    if None not in (dims[-2], rhs_dims[-2]) and dims[-2] != rhs_dims[-2]:
        raise ValueError(f"Dimensions must be equal, but are {dims[-2]} and {rhs_dims[-2]} for "
                         f"'MatrixSolveLs' with input shapes: {matrix.shape}, {rhs.shape}")
    batch = TensorShape(dims[:-2]).merge_with(TensorShape(rhs_dims[:-2]))
    return [(rhs.dtype, TensorShape(batch.as_list() + [dims[-1], rhs_dims[-1]]))]


@gradient("MatrixSolveLs")
def _solve_ls_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    raise ValueError("Gradient not defined for fast=False: build tf.matrix_solve_ls with "
                     "fast=True (the default) to differentiate it")


def matrix_solve_ls(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0, fast: bool = True,
                    name: str | None = None) -> Tensor:
    """X [..., N, K] solving matrix [..., M, N] X = rhs [..., M, K] in the least-squares sense:
    fast, (A^T A + l2 I)^-1 A^T B when M >= N and A^T (A A^T + l2 I)^-1 B when M < N (a
    rank-deficient A with l2 = 0 fails in the Cholesky factorization); with ``fast=False``
    the minimum-norm solution, ignoring ``l2_regularizer``."""
    matrix = convert_to_tensor(matrix, name="matrix")
    if not fast:
        rhs = convert_to_tensor(rhs, dtype=matrix.dtype, name="rhs")
        l2 = convert_to_tensor(l2_regularizer, dtype=dtypes.float64, name="l2_regularizer")
        return apply_op("MatrixSolveLs", [matrix, rhs, l2], {"fast": False}, name=name).outputs[0]
    with get_default_graph().name_scope(name or "matrix_solve_ls"):
        rhs = convert_to_tensor(rhs, dtype=matrix.dtype, name="rhs")
        dims = _matrix_dims("MatrixSolveLs", matrix, square=False)
        if dims is None or None in dims[-2:]:
            raise ValueError(f"matrix_solve_ls needs the matrix dimensions known when the graph "
                             f"is built in zmtf, got {matrix.shape}; set the shape or use "
                             f"fast=False")
        if dims[-2] >= dims[-1]:
            chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=True)
            return cholesky_solve(chol, mm(matrix, rhs, adjoint_a=True))
        chol = _regularized_gramian_cholesky(matrix, l2_regularizer, first_kind=False)
        return mm(matrix, cholesky_solve(chol, rhs), adjoint_a=True)


def lstsq(matrix: Any, rhs: Any, l2_regularizer: Any = 0.0, fast: bool = True,
          name: str | None = None) -> Tensor:
    """``tf.linalg.lstsq``: tf.matrix_solve_ls under its TF2 name."""
    return matrix_solve_ls(matrix, rhs, l2_regularizer=l2_regularizer, fast=fast, name=name)


def _float_dtype(x: Tensor, function: str) -> np.dtype:
    if x.dtype.name not in ("float32", "float64"):
        raise TypeError(f"{function}: input must be float32 or float64, got {x.dtype.name}; cast "
                        f"it with tf.cast()")
    return np.dtype(x.dtype.as_numpy_dtype)


def pinv(a: Any, rcond: Any = None, validate_args: bool = False, name: str | None = None) -> Tensor:
    """The Moore-Penrose pseudo-inverse of each matrix, v diag(1/s) u^T, with the singular
    values at or under rcond * max(s) taken as infinite (so 1/s = 0, and no nan gradient).
    The default rcond is 10 * max(M, N) * eps, as TF's."""
    with get_default_graph().name_scope(name or "pinv"):
        a = convert_to_tensor(a, name="a")
        dtype = _float_dtype(a, "pinv")
        if rcond is None:
            rows, cols = (a.shape.as_list()[-2:] if a.shape.ndims else (None, None))
            if rows is not None and cols is not None:
                largest: Any = float(max(rows, cols))
            else:
                dims = array_ops.shape(a)
                largest = math_ops.cast(math_ops.maximum(dims[-2], dims[-1]), a.dtype)
            rcond = 10.0 * largest * np.finfo(dtype).eps
        rcond = convert_to_tensor(rcond, dtype=a.dtype, name="rcond")
        s, u, v = svd(a, full_matrices=False, compute_uv=True)
        cutoff = rcond * math_ops.reduce_max(s, axis=-1)
        s = where_v2(s > array_ops.expand_dims(cutoff, -1), s, constant(np.inf, dtype=a.dtype))
        return math_ops.matmul(v / array_ops.expand_dims(s, -2), u, adjoint_b=True)


def matrix_rank(a: Any, tol: Any = None, validate_args: bool = False,
                name: str | None = None) -> Tensor:
    """The number of singular values above tol (default eps * max(M, N) * max(s)), int32."""
    with get_default_graph().name_scope(name or "matrix_rank"):
        a = convert_to_tensor(a, name="a")
        dtype = _float_dtype(a, "matrix_rank")
        s = svd(a, compute_uv=False)
        if tol is None:
            dims = a.shape.as_list()[-2:] if a.shape.ndims else [None, None]
            if None not in dims:
                largest: Any = constant(float(max(dims)), dtype=a.dtype)
            else:
                largest = math_ops.cast(math_ops.reduce_max(array_ops.shape(a)[-2:]), a.dtype)
            tol = np.finfo(dtype).eps * largest * math_ops.reduce_max(s, axis=-1, keepdims=True)
        else:
            tol = convert_to_tensor(tol, dtype=a.dtype, name="tol")
        return math_ops.reduce_sum(math_ops.cast(s > tol, dtypes.int32), axis=-1)


def adjoint(matrix, name="adjoint"):  # type: ignore[no-untyped-def]
    """The conjugate transpose of each matrix; for zmtf's real dtypes, the transpose."""
    return matrix_transpose(matrix, name=name)


def logdet(matrix, name=None):  # type: ignore[no-untyped-def]
    """log(det(matrix)) of Hermitian positive-definite matrices, through their Cholesky
    factor (2 * sum(log(diag(L)))), as TF builds it."""
    with get_default_graph().name_scope(name or "logdet"):
        return 2.0 * math_ops.reduce_sum(math_ops.log(matrix_diag_part(cholesky(matrix))), axis=-1)

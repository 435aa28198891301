"""Dense linear algebra over batches of matrices (the last two axes): ``tf.matrix_inverse``,
``tf.matrix_determinant``, ``tf.log_matrix_determinant``, ``tf.cholesky``,
``tf.matrix_solve`` and ``tf.matrix_triangular_solve``, with TF's gradients (linalg_grad.py),
built from these ops, batched matmuls and the band/diagonal ops.

Static shapes are checked when the graph is built (square matrices, matching rows), with
TF's ValueError wording; singular inputs are InvalidArgumentErrors at run time, as TF's.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.diag_ops import matrix_band_part, matrix_diag_part, matrix_set_diag
from zmtf.ops.math_grad import sum_to
from zmtf.framework.tensor_shape import TensorShape, broadcast_shape

Grads = list[Tensor | None]

#: op type -> the dtypes TF has CPU kernels for
_DTYPES = {"MatrixInverse": ("float16", "float32", "float64")}
_F32_F64 = ("float32", "float64")


def _matrix_dims(op_type: str, x: Tensor, square: bool = True) -> list[int | None] | None:
    """x's dims after TF's checks (allowed dtype, rank >= 2, square); None for unknown rank."""
    allowed = _DTYPES.get(op_type, _F32_F64)
    if x.dtype.name not in allowed:
        raise TypeError(f"Value passed to '{op_type}' has DataType {x.dtype.name} not in list of "
                        f"allowed values: {', '.join(allowed)} ({x.name}); cast it with tf.cast()")
    if x.shape.ndims is None:
        return None
    if x.shape.ndims < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {x.shape.ndims} for "
                         f"'{op_type}' input {x.name}")
    dims = x.shape.as_list()
    if square and None not in dims[-2:] and dims[-1] != dims[-2]:
        raise ValueError(f"Dimensions must be equal, but are {dims[-2]} and {dims[-1]} for "
                         f"'{op_type}' with input shape {x.shape}: it takes square matrices")
    return dims


@op_def("MatrixInverse", "Cholesky")
def _same_shape_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    _matrix_dims(attrs["_op_type"], inputs[0])
    return [(inputs[0].dtype, inputs[0].shape)]


@op_def("MatrixDeterminant", "LogMatrixDeterminant")
def _determinant_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    dims = _matrix_dims(attrs["_op_type"], inputs[0])
    spec = (inputs[0].dtype, TensorShape(None if dims is None else dims[:-2]))
    return [spec] * (2 if attrs["_op_type"] == "LogMatrixDeterminant" else 1)


@op_def("MatrixSolve", "MatrixTriangularSolve")
def _solve_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    op_type = attrs["_op_type"]
    matrix, rhs = inputs
    if matrix.dtype != rhs.dtype:
        raise TypeError(f"{op_type}: matrix is {matrix.dtype.name}, rhs is {rhs.dtype.name}")
    dims = _matrix_dims(op_type, matrix)
    rhs_dims = _matrix_dims(op_type, rhs, square=False)
    if dims is None or rhs_dims is None:
        return [(rhs.dtype, TensorShape(None))]
    if None not in (dims[-1], rhs_dims[-2]) and dims[-1] != rhs_dims[-2]:
        raise ValueError(f"Dimensions must be equal, but are {dims[-1]} and {rhs_dims[-2]} for "
                         f"'{op_type}' with input shapes: {matrix.shape}, {rhs.shape}")
    if op_type == "MatrixTriangularSolve":   # batch dims broadcast, as TF 2's
        batch = broadcast_shape(TensorShape(dims[:-2]), TensorShape(rhs_dims[:-2]))
    else:
        batch = TensorShape(dims[:-2]).merge_with(TensorShape(rhs_dims[:-2]))
    return [(rhs.dtype, TensorShape(batch.as_list() + rhs_dims[-2:]))]


@op_def("Qr")
def _qr_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    dims = _matrix_dims("Qr", inputs[0], square=False)
    if dims is None:
        return [(inputs[0].dtype, TensorShape(None))] * 2
    rows, cols = dims[-2:]
    k = None if rows is None or cols is None else min(rows, cols)
    if attrs["full_matrices"]:
        q_cols, r_rows = rows, rows
    else:
        q_cols, r_rows = k, k
    return [(inputs[0].dtype, TensorShape(dims[:-2] + [rows, q_cols])),
            (inputs[0].dtype, TensorShape(dims[:-2] + [r_rows, cols]))]


def qr(input: Any, full_matrices: bool = False, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """(q, r) with q orthonormal columns and r upper triangular, q @ r == input (the reduced
    factorization unless ``full_matrices``). No gradient in zmtf yet."""
    op = _apply("Qr", [input], {"full_matrices": bool(full_matrices)}, name)
    return op.outputs[0], op.outputs[1]


def _apply(op_type: str, inputs: list[Any], attrs: dict[str, Any], name: str | None) -> Operation:
    tensors = [convert_to_tensor(inputs[0])]
    tensors += [convert_to_tensor(x, dtype=tensors[0].dtype) for x in inputs[1:]]
    return apply_op(op_type, tensors, {"_op_type": op_type, **attrs}, name=name)


def matrix_inverse(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """The inverse of each matrix (of its transpose with ``adjoint``); InvalidArgumentError
    "Input is not invertible." for a singular one."""
    return _apply("MatrixInverse", [input], {"adjoint": bool(adjoint)}, name).outputs[0]


def matrix_determinant(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The determinant of each matrix: [..., M, M] -> [...]."""
    return _apply("MatrixDeterminant", [input], {}, name).outputs[0]


def log_matrix_determinant(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """(sign, log|det|) of each matrix, finite where the determinant would overflow; a
    singular matrix gives (0, -inf)."""
    op = _apply("LogMatrixDeterminant", [input], {}, name)
    return op.outputs[0], op.outputs[1]


def cholesky(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """L, lower triangular, with L L^T = input, for symmetric positive-definite matrices
    (only the lower triangle of input is read)."""
    return _apply("Cholesky", [input], {}, name).outputs[0]


def matrix_solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """X with matrix X = rhs (matrix^T X = rhs with ``adjoint``): [..., M, M], [..., M, K]."""
    return _apply("MatrixSolve", [matrix, rhs], {"adjoint": bool(adjoint)}, name).outputs[0]


def matrix_triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                            name: str | None = None) -> Tensor:
    """X with matrix X = rhs, reading only matrix's lower (or upper) triangle; a zero on the
    diagonal gives inf/nan, not an error, as TF's."""
    attrs = {"lower": bool(lower), "adjoint": bool(adjoint)}
    return _apply("MatrixTriangularSolve", [matrix, rhs], attrs, name).outputs[0]


# ---- gradients (TF's linalg_grad.py) ---------------------------------------------------------
def _adjoint(x: Tensor) -> Tensor:
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"the gradient of a matrix op needs a known rank, got {x.name} of "
                         f"unknown rank; give the input a shape")
    return array_ops.transpose(x, list(range(rank - 2)) + [rank - 1, rank - 2])


def _times_each_matrix(scalars: Tensor, matrices: Tensor) -> Tensor:
    """scalars [...] times matrices [..., M, M], one scalar per matrix."""
    return array_ops.expand_dims(array_ops.expand_dims(scalars, -1), -1) * matrices


@gradient("MatrixInverse")
def _matrix_inverse_grad(op: Operation, grad: Tensor) -> Grads:
    inverse, adjoint = op.outputs[0], op.get_attr("adjoint")
    mm = math_ops.batch_matmul
    return [-mm(inverse, mm(grad, inverse, adjoint_a=adjoint, adjoint_b=not adjoint),
                adjoint_a=not adjoint)]


@gradient("MatrixDeterminant")
def _matrix_determinant_grad(op: Operation, grad: Tensor) -> Grads:
    """d det(A) / dA = det(A) A^-T."""
    inverse_t = matrix_inverse(op.inputs[0], adjoint=True)
    return [_times_each_matrix(grad * op.outputs[0], inverse_t)]


@gradient("LogMatrixDeterminant")
def _log_matrix_determinant_grad(op: Operation, _sign_grad: Tensor, grad: Tensor) -> Grads:
    """d log|det(A)| / dA = A^-T; the sign has no gradient."""
    return [_times_each_matrix(grad, matrix_inverse(op.inputs[0], adjoint=True))]


@gradient("Cholesky")
def _cholesky_grad(op: Operation, grad: Tensor) -> Grads:
    """A symmetric gradient, Phi(L^T grad) sandwiched between L^-1 (Murray 2016, as TF)."""
    with get_default_graph().name_scope("CholeskyGrad"):
        lower = op.outputs[0]
        identity = matrix_set_diag(array_ops.zeros_like(lower),
                                   array_ops.ones_like(matrix_diag_part(lower)))
        lower_inverse = matrix_triangular_solve(lower, identity)
        middle = math_ops.batch_matmul(lower, grad, adjoint_a=True)
        middle = matrix_set_diag(middle, 0.5 * matrix_diag_part(middle))
        middle = matrix_band_part(middle, -1, 0)
        grad_a = math_ops.batch_matmul(
            math_ops.batch_matmul(lower_inverse, middle, adjoint_a=True), lower_inverse)
        return [(grad_a + _adjoint(grad_a)) * 0.5]


@gradient("MatrixSolve")
def _matrix_solve_grad(op: Operation, grad: Tensor) -> Grads:
    a, solution = op.inputs[0], op.outputs[0]
    adjoint = op.get_attr("adjoint")
    grad_b = matrix_solve(a, grad, adjoint=not adjoint)
    if adjoint:
        grad_a = -math_ops.batch_matmul(solution, grad_b, adjoint_b=True)
    else:
        grad_a = -math_ops.batch_matmul(grad_b, solution, adjoint_b=True)
    return [grad_a, grad_b]


@gradient("MatrixTriangularSolve")
def _matrix_triangular_solve_grad(op: Operation, grad: Tensor) -> Grads:
    a, b = op.inputs
    solution = op.outputs[0]
    lower, adjoint = op.get_attr("lower"), op.get_attr("adjoint")
    grad_b = matrix_triangular_solve(a, grad, lower=lower, adjoint=not adjoint)
    if adjoint:
        grad_a = -math_ops.batch_matmul(solution, grad_b, adjoint_b=True)
    else:
        grad_a = -math_ops.batch_matmul(grad_b, solution, adjoint_b=True)
    grad_a = matrix_band_part(grad_a, -1, 0) if lower else matrix_band_part(grad_a, 0, -1)
    return [sum_to(grad_a, a), sum_to(grad_b, b)]

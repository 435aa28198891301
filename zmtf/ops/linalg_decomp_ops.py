"""Matrix decompositions and the cross product: ``tf.self_adjoint_eig`` (``tf.linalg.eigh``),
``tf.self_adjoint_eigvals``, ``tf.svd`` and ``tf.cross``, with TF's gradients
(linalg_grad.py and math_grad.py).

The eigenvectors and singular vectors are those LAPACK gives: each is unique up to its sign,
and the sign may differ from TF's (Eigen's). Values, shapes and everything built from them
(the gradients, pinv, matrix_rank) do not depend on it.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_pair, convert_to_tensor
from zmtf.ops.diag_ops import (
    matrix_band_part, matrix_diag, matrix_diag_part, matrix_set_diag,
)
from zmtf.ops.linalg_solve_ops import _adjoint, _matrix_dims
from zmtf.framework.tensor_shape import TensorShape

Grads = list[Tensor | None]

#: what TF's Cross kernels take (its real number types)
_CROSS_DTYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "uint16")


@op_def("SelfAdjointEigV2")
def _eig_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    dims = _matrix_dims("SelfAdjointEigV2", x)
    if dims is None:
        return [(x.dtype, TensorShape(None))] * 2
    vectors = TensorShape(dims) if attrs["compute_v"] else TensorShape([0])
    return [(x.dtype, TensorShape(dims[:-1])), (x.dtype, vectors)]


@op_def("Svd")
def _svd_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    dims = _matrix_dims("Svd", x, square=False)
    if dims is None:
        return [(x.dtype, TensorShape(None))] * 3
    batch, (rows, cols) = dims[:-2], dims[-2:]
    k = None if rows is None or cols is None else min(rows, cols)
    if not attrs["compute_uv"]:
        return [(x.dtype, TensorShape(batch + [k]))] + [(x.dtype, TensorShape([0]))] * 2
    u_cols, v_cols = (rows, cols) if attrs["full_matrices"] else (k, k)
    return [(x.dtype, TensorShape(batch + [k])), (x.dtype, TensorShape(batch + [rows, u_cols])),
            (x.dtype, TensorShape(batch + [cols, v_cols]))]


@op_def("Cross")
def _cross_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = inputs
    if a.dtype.name not in _CROSS_DTYPES:
        raise TypeError(f"Value passed to 'Cross' has DataType {a.dtype.name} not in list of "
                        f"allowed values: {', '.join(_CROSS_DTYPES)} ({a.name})")
    if a.dtype != b.dtype:
        raise TypeError(f"Cross: both inputs must have one dtype, got {a.dtype.name} and "
                        f"{b.dtype.name}; cast one with tf.cast()")
    try:
        shape = a.shape.merge_with(b.shape)
    except ValueError as error:
        raise ValueError(f"{error} for 'Cross' with input shapes: {a.shape}, {b.shape}: both "
                         f"inputs must have one shape") from None
    if shape.ndims is not None:
        last = shape.as_list()[-1] if shape.ndims else None
        if shape.ndims == 0 or (last is not None and last != 3):
            raise ValueError(f"Dimension must be 3 but is {last} for 'Cross' with input shapes: "
                             f"{a.shape}, {b.shape}: the cross product takes vectors of 3")
    return [(a.dtype, shape)]


def self_adjoint_eig(tensor: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """(e, v): the eigenvalues of each symmetric matrix, ascending, and the eigenvectors as
    v's columns, with tensor = v diag(e) v^T. Only the lower triangle is read."""
    x = convert_to_tensor(tensor)
    op = apply_op("SelfAdjointEigV2", [x], {"compute_v": True}, name=name)
    return op.outputs[0], op.outputs[1]


def self_adjoint_eigvals(tensor: Any, name: str | None = None) -> Tensor:
    """The eigenvalues of each symmetric matrix, ascending (no eigenvectors computed)."""
    x = convert_to_tensor(tensor)
    return apply_op("SelfAdjointEigV2", [x], {"compute_v": False}, name=name).outputs[0]


def svd(tensor: Any, full_matrices: bool = False, compute_uv: bool = True,
        name: str | None = None) -> Any:
    """(s, u, v) with tensor = u diag(s) v^T, s descending (note: v, not v^T, and s first);
    only s with ``compute_uv=False``. ``full_matrices`` gives square u and v."""
    x = convert_to_tensor(tensor)
    attrs = {"full_matrices": bool(full_matrices), "compute_uv": bool(compute_uv)}
    op = apply_op("Svd", [x], attrs, name=name)
    return tuple(op.outputs) if compute_uv else op.outputs[0]


def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The cross product of the 3-vectors along the last axis of a and b (one shape)."""
    a, b = convert_pair(a, b)
    return apply_op("Cross", [a, b], {}, name=name).outputs[0]


# ---- gradients -------------------------------------------------------------------------------
def _safe_reciprocal(x: Tensor, epsilon: float = 1e-20) -> Tensor:
    """x / (x^2 + eps): 1/x away from 0, and 0 (not inf) at a repeated value."""
    return x * math_ops.reciprocal(x * x + epsilon)


def _pairwise_reciprocal(values: Tensor) -> Tensor:
    """F[i, j] = 1 / (values[j] - values[i]) off the diagonal, 0 on it."""
    differences = array_ops.expand_dims(values, -2) - array_ops.expand_dims(values, -1)
    return matrix_set_diag(_safe_reciprocal(differences), array_ops.zeros_like(values))


mm = math_ops.batch_matmul


@gradient("SelfAdjointEigV2")
def _eig_grad(op: Operation, grad_e: Tensor, grad_v: Tensor) -> Grads:
    """v (diag(grad_e) + F o v^T grad_v) v^T, folded onto the lower triangle the op reads."""
    with get_default_graph().name_scope("SelfAdjointEigGrad"):
        e = op.outputs[0]
        if op.get_attr("compute_v"):
            v = op.outputs[1]
            middle = matrix_diag(grad_e) + _pairwise_reciprocal(e) * mm(v, grad_v, adjoint_a=True)
        else:
            v = self_adjoint_eig(op.inputs[0])[1]
            middle = matrix_diag(grad_e)
        grad_a = mm(v, mm(middle, v, adjoint_b=True))
        grad_a = matrix_band_part(grad_a + _adjoint(grad_a), -1, 0)
        return [matrix_set_diag(grad_a, 0.5 * matrix_diag_part(grad_a))]


@gradient("Svd")
def _svd_grad(op: Operation, grad_s: Tensor, grad_u: Tensor, grad_v: Tensor) -> Grads:
    """Giles (2008) for s alone; Townsend's thin-SVD derivation otherwise, on the wide
    orientation (a tall input is handled through its transpose), as TF."""
    a = op.inputs[0]
    with get_default_graph().name_scope("SvdGrad"):
        if not op.get_attr("compute_uv"):
            _, u, v = svd(a, compute_uv=True)
            return [mm(u, mm(matrix_diag(grad_s), v, adjoint_b=True))]
        rows, cols = a.shape.as_list()[-2:] if a.shape.ndims is not None else (None, None)
        if rows is None or cols is None:
            raise NotImplementedError("SVD gradient has not been implemented for input with "
                                      f"unknown inner matrix shape ({a.name}: {a.shape}); "
                                      "give the input a static shape")
        s, u, v = op.outputs
        tall = rows > cols
        if tall:
            rows, cols, u, v, grad_u, grad_v = cols, rows, v, u, grad_v, grad_u
        full = op.get_attr("full_matrices")
        if full and cols - rows > 1:
            raise NotImplementedError(f"svd gradient is not implemented for abs(m - n) > 1 when "
                                      f"full_matrices is True. Received: m={rows} and n={cols} "
                                      f"from op input {a.name} with shape={a.shape}")
        grad_a = _wide_svd_grad(s, u, v, grad_s, grad_u, grad_v, rows, cols, full)
        return [_adjoint(grad_a) if tall else grad_a]


def _wide_svd_grad(s: Tensor, u: Tensor, v: Tensor, grad_s: Tensor, grad_u: Tensor,
                   grad_v: Tensor, m: int, n: int, full: bool) -> Tensor:
    """The gradient for an m x n input with m <= n (v1 = v's first m columns)."""
    s_mat = matrix_diag(s)
    f = _pairwise_reciprocal(math_ops.square(s))
    v1, grad_v1 = v[..., :, :m], grad_v[..., :, :m]
    f_u = f * mm(u, grad_u, adjoint_a=True)
    f_v = f * mm(v1, grad_v1, adjoint_a=True)
    middle = (matrix_diag(grad_s) + mm(f_u + _adjoint(f_u), s_mat)
              + mm(s_mat, f_v + _adjoint(f_v)))
    grad_a = mm(u, mm(middle, v1, adjoint_b=True))
    if m == n:
        return grad_a
    gv1t = _adjoint(grad_v1)
    projected = gv1t - mm(mm(gv1t, v1), v1, adjoint_b=True)
    if full:
        v2, grad_v2 = v[..., :, m:n], grad_v[..., :, m:n]
        projected -= mm(mm(v1, grad_v2, adjoint_a=True), v2, adjoint_b=True)
    return grad_a + mm(mm(u, matrix_diag(_safe_reciprocal(s))), projected)


@gradient("Cross")
def _cross_grad(op: Operation, grad: Tensor) -> Grads:
    u, v = op.inputs
    return [cross(v, grad), cross(grad, u)]

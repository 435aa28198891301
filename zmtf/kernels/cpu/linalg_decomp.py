"""Kernels of the matrix decompositions (numpy.linalg, i.e. LAPACK: syevd for the symmetric
eigenproblem, gesdd for the SVD), the cross product, and the minimum-norm least squares of
``tf.matrix_solve_ls(fast=False)`` (gelsd, where TF uses a complete orthogonal decomposition:
the same solution).

A non-finite input gives nan outputs, as TF's Eigen solvers do, rather than LAPACK's error.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.cpu.linalg import _square
from zmtf.kernels.registry import register

_F32_F64 = ("float32", "float64")
_CROSS = ("float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16")


def _finite_or_nan(x: np.ndarray, outputs: list[np.ndarray]) -> list[np.ndarray] | None:
    """nan-filled outputs (of the given templates) for the batch if any entry is not finite."""
    if np.isfinite(x).all():
        return None
    return [np.full_like(o, np.nan) for o in outputs]


@register("SelfAdjointEigV2", dtypes=_F32_F64)
def self_adjoint_eig(ctx: Any, inputs: list, attrs: dict) -> list:
    x = _square(inputs[0], attrs["_node_name"])
    if attrs["compute_v"]:
        template = [np.empty(x.shape[:-1], x.dtype), np.empty(x.shape, x.dtype)]
        if (bad := _finite_or_nan(x, template)) is not None:
            return bad
        e, v = np.linalg.eigh(x, UPLO="L")
        return [e.astype(x.dtype, copy=False), v.astype(x.dtype, copy=False)]
    if not np.isfinite(x).all():
        return [np.full(x.shape[:-1], np.nan, x.dtype), np.zeros(0, x.dtype)]
    return [np.linalg.eigvalsh(x, UPLO="L").astype(x.dtype, copy=False), np.zeros(0, x.dtype)]


@register("Svd", dtypes=_F32_F64)
def svd(ctx: Any, inputs: list, attrs: dict) -> list:
    x = inputs[0]
    if x.ndim < 2:
        raise InvalidArgumentError(f"input must have rank >= 2, got shape {shape_str(x.shape)} "
                                   f"(node '{attrs['_node_name']}')")
    rows, cols = x.shape[-2:]
    k, full = min(rows, cols), attrs["full_matrices"]
    s_shape = x.shape[:-2] + (k,)
    if not attrs["compute_uv"]:
        if not np.isfinite(x).all():
            return [np.full(s_shape, np.nan, x.dtype), np.zeros(0, x.dtype), np.zeros(0, x.dtype)]
        s = np.linalg.svd(x, compute_uv=False) if x.size else np.zeros(s_shape, x.dtype)
        return [s.astype(x.dtype, copy=False), np.zeros(0, x.dtype), np.zeros(0, x.dtype)]
    u_cols, v_cols = (rows, cols) if full else (k, k)
    template = [np.empty(s_shape, x.dtype), np.empty(x.shape[:-2] + (rows, u_cols), x.dtype),
                np.empty(x.shape[:-2] + (cols, v_cols), x.dtype)]
    if (bad := _finite_or_nan(x, template)) is not None:
        return bad
    if x.size == 0:   # LAPACK refuses empty matrices; u and v are then identities
        return [template[0], _eye_like(template[1]), _eye_like(template[2])]
    u, s, vh = np.linalg.svd(x, full_matrices=full)
    return [s.astype(x.dtype, copy=False), u.astype(x.dtype, copy=False),
            np.ascontiguousarray(np.swapaxes(vh, -1, -2), dtype=x.dtype)]


def _eye_like(template: np.ndarray) -> np.ndarray:
    out = np.zeros_like(template)
    rows, cols = template.shape[-2:]
    out[..., np.arange(min(rows, cols)), np.arange(min(rows, cols))] = 1
    return out


@register("Cross", dtypes=_CROSS)
def cross(ctx: Any, inputs: list, attrs: dict) -> list:
    a, b = inputs
    node = attrs["_node_name"]
    if a.shape != b.shape:
        raise InvalidArgumentError(f"Both inputs must be of same shape: {shape_str(a.shape)} vs. "
                                   f"{shape_str(b.shape)} (node '{node}')")
    if a.ndim == 0 or a.shape[-1] != 3:
        raise InvalidArgumentError(f"Trailing dimension must be 3, got shape "
                                   f"{shape_str(a.shape)} (node '{node}'): the cross product "
                                   f"takes vectors of 3")
    with np.errstate(over="ignore"):   # integer wrap-around, as TF's
        return [np.cross(a, b).astype(a.dtype, copy=False)]


@register("MatrixSolveLs", dtypes=_F32_F64)
def matrix_solve_ls(ctx: Any, inputs: list, attrs: dict) -> list:
    """The minimum-norm least-squares solution of each system (the fast=False path)."""
    matrix, rhs, _l2 = inputs
    node = attrs["_node_name"]
    if matrix.ndim < 2:
        raise InvalidArgumentError(f"matrix must have rank >= 2, got shape "
                                   f"{shape_str(matrix.shape)} (node '{node}')")
    if rhs.ndim < 2 or rhs.shape[-2] != matrix.shape[-2] or rhs.shape[:-2] != matrix.shape[:-2]:
        raise InvalidArgumentError(f"rhs must have shape {shape_str(matrix.shape[:-1])} + [K] "
                                   f"for matrix of shape {shape_str(matrix.shape)}, got "
                                   f"{shape_str(rhs.shape)} (node '{node}')")
    cols, k = matrix.shape[-1], rhs.shape[-1]
    out = np.zeros(matrix.shape[:-2] + (cols, k), rhs.dtype)
    if out.size == 0 or matrix.shape[-2] == 0:
        return [out]
    for index in np.ndindex(matrix.shape[:-2]):
        a, b = matrix[index], rhs[index]
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            out[index] = np.nan
            continue
        out[index] = np.linalg.lstsq(a, b, rcond=None)[0]
    return [out]


"""Optimizer updates of the rows an IndexedSlices gradient names: SparseApplyMomentum and
SparseApplyAdagrad, TF's formulas row by row (one numba pass over the rows where the dtypes
allow, sparse_rows.py; numpy's vectorized passes otherwise).

Rows that repeat an index are summed first (TF's optimizers deduplicate in the graph before
the update), so a row is updated once per step whatever the batch held. Only those rows are
read and written: on a ps holding a big embedding, a step touches k rows, not the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import quiet_fp, shape_str
from zmtf.kernels.cpu.sparse_rows import adagrad_rows, as_rows, fits, momentum_rows
from zmtf.kernels.cpu.state import _locked, _read_writable, _ref
from zmtf.kernels.registry import register


def _checked_ids(var: np.ndarray, values: np.ndarray, indices: np.ndarray,
                 attrs: dict) -> np.ndarray:
    """The flat row ids, after checking them against the variable and the gradient's shape."""
    node = attrs["_node_name"]
    ids = np.asarray(indices).reshape(-1)
    if ids.dtype.kind not in "iu":
        raise InvalidArgumentError(f"indices of '{node}' must be integers, got {ids.dtype.name}")
    if values.shape != (ids.size,) + var.shape[1:]:
        raise InvalidArgumentError(
            f"grad of '{node}' must have shape {shape_str((ids.size,) + var.shape[1:])} (one row per "
            f"index of a variable of shape {shape_str(var.shape)}), got {shape_str(values.shape)}")
    bad = np.flatnonzero((ids < 0) | (ids >= var.shape[0]))
    if bad.size:
        i = int(bad[0])
        raise InvalidArgumentError(f"indices[{i}] = {int(ids[i])} is not in [0, {var.shape[0]}) "
                                   f"(node '{node}')")
    return ids


def _summed_rows(var: np.ndarray, values: np.ndarray, indices: np.ndarray,
                 attrs: dict) -> tuple[np.ndarray, np.ndarray]:
    """(unique row ids, their summed gradient rows), after checking ids and shapes."""
    ids = _checked_ids(var, values, indices, attrs)
    rows, inverse = np.unique(ids, return_inverse=True)
    if rows.size == ids.size:
        order = np.argsort(inverse)
        return rows, values[order].astype(var.dtype, copy=False)
    summed = np.zeros((rows.size,) + var.shape[1:], var.dtype)
    np.add.at(summed, inverse, values)
    return rows, summed


def _one_pass(var: np.ndarray, accum: np.ndarray, values: np.ndarray, indices: np.ndarray) -> bool:
    """Whether the update can run as one numba loop over the rows (sparse_rows): float
    variables of one dtype, stored contiguously, with a non-empty gradient of that dtype."""
    return (var.dtype.kind == "f" and var.ndim >= 1 and var.flags.c_contiguous
            and accum.flags.c_contiguous and accum.shape == var.shape and indices.size > 0
            and fits(var, accum, values, np.asarray(indices)))


@register("SparseApplyMomentum")
def sparse_apply_momentum(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyMomentum(ref, accum, lr, grad, indices, momentum): for each named row,
    accum = accum * momentum + grad; var -= lr * accum (Nesterov: lr * grad + lr * momentum * accum)."""
    node = attrs["_node_name"]
    ref, accum_ref = _ref(inputs[0], node), _ref(inputs[1], node, 1)
    lr, values, indices, momentum = inputs[2], inputs[3], inputs[4], inputs[5]
    with _locked([ref, accum_ref]), quiet_fp():
        var, accum = _read_writable(ref), _read_writable(accum_ref)
        lr, momentum = lr.astype(var.dtype)[()], momentum.astype(var.dtype)[()]
        if _one_pass(var, accum, values, indices):
            ids = _checked_ids(var, values, indices, attrs)
            momentum_rows(as_rows(var), as_rows(accum), lr,
                          as_rows(values), ids, momentum,
                          bool(attrs.get("use_nesterov", False)))
            return [var]
        rows, grad = _summed_rows(var, values, indices, attrs)
        a = accum[rows] * momentum + grad
        accum[rows] = a
        if attrs.get("use_nesterov", False):
            var[rows] -= grad * lr + a * (momentum * lr)
        else:
            var[rows] -= a * lr
        return [var]


@register("SparseApplyAdagrad")
def sparse_apply_adagrad(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyAdagrad(ref, accum, lr, grad, indices): for each named row,
    accum += grad^2; var -= lr * grad / sqrt(accum)."""
    node = attrs["_node_name"]
    ref, accum_ref = _ref(inputs[0], node), _ref(inputs[1], node, 1)
    lr, values, indices = inputs[2], inputs[3], inputs[4]
    with _locked([ref, accum_ref]), quiet_fp():
        var, accum = _read_writable(ref), _read_writable(accum_ref)
        lr = lr.astype(var.dtype)[()]
        if _one_pass(var, accum, values, indices):
            ids = _checked_ids(var, values, indices, attrs)
            adagrad_rows(as_rows(var), as_rows(accum), lr,
                         as_rows(values), ids)
            return [var]
        rows, grad = _summed_rows(var, values, indices, attrs)
        a = accum[rows] + grad * grad
        accum[rows] = a
        var[rows] -= lr * grad / np.sqrt(a)
        return [var]


@register("SparseApplyRMSProp")
def sparse_apply_rmsprop(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyRMSProp(ref, ms, mom, lr, rho, momentum, epsilon, grad, indices): for each
    named row, ms = ms * rho + grad^2 * (1 - rho); mom = mom * momentum +
    rsqrt(ms + epsilon) * lr * grad; var -= mom (TF's kernel, in its order of operations)."""
    node = attrs["_node_name"]
    ref, ms_ref, mom_ref = (_ref(inputs[i], node, i) for i in range(3))
    with _locked([ref, ms_ref, mom_ref]), quiet_fp():
        var, ms, mom = (_read_writable(r) for r in (ref, ms_ref, mom_ref))
        lr, rho, momentum, epsilon = (x.astype(var.dtype)[()] for x in inputs[3:7])
        rows, grad = _summed_rows(var, inputs[7], inputs[8], attrs)
        ms_rows = ms[rows] * rho + np.square(grad) * (1 - rho)
        ms[rows] = ms_rows
        mom_rows = mom[rows] * momentum + (1 / np.sqrt(ms_rows + epsilon)) * lr * grad
        mom[rows] = mom_rows
        var[rows] -= mom_rows
        return [var]


@register("SparseApplyCenteredRMSProp")
def sparse_apply_centered_rmsprop(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyCenteredRMSProp(ref, mg, ms, mom, lr, rho, momentum, epsilon, grad, indices):
    RMSProp on the named rows whose denominator is the variance estimate ms - mg^2."""
    node = attrs["_node_name"]
    ref, mg_ref, ms_ref, mom_ref = (_ref(inputs[i], node, i) for i in range(4))
    with _locked([ref, mg_ref, ms_ref, mom_ref]), quiet_fp():
        var, mg, ms, mom = (_read_writable(r) for r in (ref, mg_ref, ms_ref, mom_ref))
        lr, rho, momentum, epsilon = (x.astype(var.dtype)[()] for x in inputs[4:8])
        rows, grad = _summed_rows(var, inputs[8], inputs[9], attrs)
        ms_rows = ms[rows] * rho + np.square(grad) * (1 - rho)
        ms[rows] = ms_rows
        mg_rows = mg[rows] * rho + grad * (1 - rho)
        mg[rows] = mg_rows
        denom = ms_rows + epsilon - np.square(mg_rows)
        mom_rows = mom[rows] * momentum + (1 / np.sqrt(denom)) * lr * grad
        mom[rows] = mom_rows
        var[rows] -= mom_rows
        return [var]

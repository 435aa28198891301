"""Adadelta and FTRL-Proximal updates, dense and on the rows of an IndexedSlices gradient.

ApplyAdadelta, SparseApplyAdadelta, ApplyFtrl, ApplyFtrlV2, SparseApplyFtrl and
SparseApplyFtrlV2 with TF's formulas (training_ops.cc). float32/float64 variables take one
fused numba pass per update; other dtypes use numpy with the same formulas. A sparse update
gathers the named rows (repeated ids summed first, see sparse_apply.py), runs the dense update
on them and writes them back: only those rows of the variable and its slots change.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.kernels.cpu.common import quiet_fp
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.cpu.sparse_apply import _summed_rows
from zmtf.kernels.cpu.state import _check_same_shape, _fusable, _locked, _read_writable, _ref
from zmtf.kernels.registry import register

_Array = np.ndarray


# ---- formulas ----------------------------------------------------------------------------
@jit()
def _adadelta_fused(var, accum, accum_update, grad, lr, rho, epsilon):  # type: ignore[no-untyped-def]
    for i in range(var.size):
        g = grad[i]
        a = accum[i] * rho + g * g * (1 - rho)
        accum[i] = a
        update = np.sqrt(accum_update[i] + epsilon) / np.sqrt(a + epsilon) * g
        accum_update[i] = accum_update[i] * rho + update * update * (1 - rho)
        var[i] -= update * lr


def _adadelta_numpy(var: _Array, accum: _Array, accum_update: _Array, grad: _Array,
                    lr: Any, rho: Any, epsilon: Any) -> None:
    accum[...] = accum * rho + np.square(grad) * (1 - rho)
    update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * grad
    accum_update[...] = accum_update * rho + np.square(update) * (1 - rho)
    var -= update * lr


@jit()
def _ftrl_fused(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power):  # type: ignore[no-untyped-def]
    for i in range(var.size):
        g, a, w = grad[i], accum[i], var[i]
        new_a = a + g * g
        shrunk = g + 2 * l2_shrinkage * w if l2_shrinkage > 0 else g
        if lr_power == -0.5:
            sigma = (np.sqrt(new_a) - np.sqrt(a)) / lr
            y = np.sqrt(new_a) / lr + 2 * l2
        else:
            sigma = (new_a ** -lr_power - a ** -lr_power) / lr
            y = new_a ** -lr_power / lr + 2 * l2
        lin = linear[i] + shrunk - sigma * w
        linear[i] = lin
        if np.abs(lin) > l1:
            var[i] = ((l1 if lin > 0 else -l1) - lin) / y
        else:
            var[i] = 0
        accum[i] = new_a


def _ftrl_numpy(var: _Array, accum: _Array, linear: _Array, grad: _Array, lr: Any, l1: Any,
                l2: Any, l2_shrinkage: Any, lr_power: Any) -> None:
    new_accum = accum + np.square(grad)
    shrunk = grad + 2 * l2_shrinkage * var if l2_shrinkage > 0 else grad
    if lr_power == -0.5:
        sigma = (np.sqrt(new_accum) - np.sqrt(accum)) / lr
        y = np.sqrt(new_accum) / lr + 2 * l2
    else:
        sigma = (new_accum ** -lr_power - accum ** -lr_power) / lr
        y = new_accum ** -lr_power / lr + 2 * l2
    linear += shrunk - sigma * var
    var[...] = np.where(np.abs(linear) > l1, (l1 * np.sign(linear) - linear) / y, 0)
    accum[...] = new_accum


# ---- dense and row-wise drivers ----------------------------------------------------------
def _update(fused: Callable[..., None], numpy_fn: Callable[..., None], arrays: list[_Array],
            grad: _Array, scalars: list[Any]) -> None:
    """Update ``arrays`` (variable, then slots) in place from ``grad`` (all the same shape)."""
    if _fusable(arrays[0], *arrays[1:], grad):
        fused(*(a.reshape(-1) for a in arrays), grad.reshape(-1), *scalars)
    else:
        numpy_fn(*arrays, grad.astype(arrays[0].dtype, copy=False), *scalars)


def _update_rows(fused: Callable[..., None], numpy_fn: Callable[..., None], arrays: list[_Array],
                 values: _Array, indices: _Array, scalars: list[Any], attrs: dict) -> None:
    rows, grad = _summed_rows(arrays[0], values, indices, attrs)
    gathered = [np.ascontiguousarray(a[rows]) for a in arrays]
    _update(fused, numpy_fn, gathered, np.ascontiguousarray(grad), scalars)
    for array, part in zip(arrays, gathered):
        array[rows] = part


def _run(inputs: list, attrs: dict, n_refs: int, dense: Callable[[list[_Array]], None]) -> list:
    """Lock and read the first ``n_refs`` inputs (variable and slots), check the slots' shapes,
    and hand the arrays to ``dense``; the output is the variable."""
    node = attrs["_node_name"]
    refs = [_ref(inputs[i], node, i) for i in range(n_refs)]
    with _locked(refs), quiet_fp():
        arrays = [_read_writable(r) for r in refs]
        for i, slot in enumerate(arrays[1:], start=1):
            _check_same_shape(arrays[0], slot, f"input {i}", attrs)
        dense(arrays)
        return [arrays[0]]


def _scalars(values: list[Any], dtype: np.dtype) -> list[Any]:
    return [np.asarray(v).astype(dtype)[()] for v in values]


# ---- Adadelta ----------------------------------------------------------------------------
@register("ApplyAdadelta")
def apply_adadelta(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyAdadelta(var, accum, accum_update, lr, rho, epsilon, grad):
    accum = rho * accum + (1 - rho) * grad^2;
    update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * grad;
    accum_update = rho * accum_update + (1 - rho) * update^2; var -= lr * update."""
    grad = np.asarray(inputs[6])

    def dense(arrays: list[_Array]) -> None:
        _check_same_shape(arrays[0], grad, "grad", attrs)
        _update(_adadelta_fused, _adadelta_numpy, arrays, grad,
                _scalars(inputs[3:6], arrays[0].dtype))

    return _run(inputs, attrs, 3, dense)


@register("SparseApplyAdadelta")
def sparse_apply_adadelta(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyAdadelta(var, accum, accum_update, lr, rho, epsilon, grad, indices): the
    Adadelta update of the named rows only."""
    def rows(arrays: list[_Array]) -> None:
        _update_rows(_adadelta_fused, _adadelta_numpy, arrays, np.asarray(inputs[6]), inputs[7],
                     _scalars(inputs[3:6], arrays[0].dtype), attrs)

    return _run(inputs, attrs, 3, rows)


# ---- FTRL --------------------------------------------------------------------------------
def _ftrl_scalars(hypers: list[Any], dtype: np.dtype) -> list[Any]:
    """[lr, l1, l2, l2_shrinkage, lr_power] from TF's (lr, l1, l2[, l2_shrinkage], lr_power)."""
    if len(hypers) == 4:
        hypers = [*hypers[:3], 0, hypers[3]]
    return _scalars(hypers, dtype)


def _ftrl_dense(inputs: list, attrs: dict, hypers: list[Any]) -> list:
    grad = np.asarray(inputs[3])

    def dense(arrays: list[_Array]) -> None:
        _check_same_shape(arrays[0], grad, "grad", attrs)
        _update(_ftrl_fused, _ftrl_numpy, arrays, grad, _ftrl_scalars(hypers, arrays[0].dtype))

    return _run(inputs, attrs, 3, dense)


def _ftrl_sparse(inputs: list, attrs: dict, hypers: list[Any]) -> list:
    def rows(arrays: list[_Array]) -> None:
        _update_rows(_ftrl_fused, _ftrl_numpy, arrays, np.asarray(inputs[3]), inputs[4],
                     _ftrl_scalars(hypers, arrays[0].dtype), attrs)

    return _run(inputs, attrs, 3, rows)


@register("ApplyFtrl")
def apply_ftrl(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyFtrl(var, accum, linear, grad, lr, l1, l2, lr_power), TF's FTRL-Proximal:
    new_accum = accum + grad^2;
    linear += grad - (new_accum^-lr_power - accum^-lr_power) / lr * var;
    var = (l1 * sign(linear) - linear) / (new_accum^-lr_power / lr + 2 * l2) if |linear| > l1
    else 0; accum = new_accum."""
    return _ftrl_dense(inputs, attrs, inputs[4:8])


@register("ApplyFtrlV2")
def apply_ftrl_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyFtrlV2(var, accum, linear, grad, lr, l1, l2, l2_shrinkage, lr_power): ApplyFtrl
    with linear += (grad + 2 * l2_shrinkage * var) - ... (accum still grows by grad^2)."""
    return _ftrl_dense(inputs, attrs, inputs[4:9])


@register("SparseApplyFtrl")
def sparse_apply_ftrl(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyFtrl(var, accum, linear, grad, indices, lr, l1, l2, lr_power): ApplyFtrl on
    the named rows (repeated rows summed first)."""
    return _ftrl_sparse(inputs, attrs, inputs[5:9])


@register("SparseApplyFtrlV2")
def sparse_apply_ftrl_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyFtrlV2(var, accum, linear, grad, indices, lr, l1, l2, l2_shrinkage, lr_power)."""
    return _ftrl_sparse(inputs, attrs, inputs[5:10])

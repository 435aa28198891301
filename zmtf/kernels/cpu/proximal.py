"""Proximal updates (TF's ApplyProximalGradientDescent, ApplyProximalAdagrad and their
sparse forms): a gradient step, then the proximal operator of l1 * |w| + l2 / 2 * w^2,
which sets small weights exactly to zero (sparse models). TF's formulas:

    prox = var - rate * grad
    var  = sign(prox) * max(|prox| - rate * l1, 0) / (1 + rate * l2)

with rate = alpha for gradient descent, and rate = lr / sqrt(accum) after accum += grad^2
for Adagrad. The sparse forms update only the named rows (repeats summed first).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.kernels.cpu.common import quiet_fp
from zmtf.kernels.cpu.sparse_apply import _summed_rows
from zmtf.kernels.cpu.state import _check_same_shape, _locked, _read_writable, _ref
from zmtf.kernels.registry import register


def _shrink(prox: np.ndarray, rate: Any, l1: Any, l2: Any) -> np.ndarray:
    if l1 > 0:
        return np.sign(prox) * np.maximum(np.abs(prox) - rate * l1, 0) / (1 + rate * l2)
    return prox / (1 + rate * l2)


def _scalars(var: np.ndarray, *values: Any) -> list[Any]:
    return [np.asarray(v).astype(var.dtype)[()] for v in values]


def _descend(var: np.ndarray, rows: Any, grad: np.ndarray, alpha: Any, l1: Any, l2: Any) -> None:
    var[rows] = _shrink(var[rows] - alpha * grad, alpha, l1, l2)


def _adagrad(var: np.ndarray, accum: np.ndarray, rows: Any, grad: np.ndarray, lr: Any, l1: Any,
             l2: Any) -> None:
    """The update of ``rows`` (a slice(None) for every row) in place."""
    a = accum[rows] + np.square(grad, dtype=var.dtype)
    accum[rows] = a
    rate = lr / np.sqrt(a)
    var[rows] = _shrink(var[rows] - rate * grad, rate, l1, l2)


@register("ApplyProximalGradientDescent")
def apply_proximal_gradient_descent(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyProximalGradientDescent(ref, alpha, l1, l2, delta)."""
    ref = _ref(inputs[0], attrs["_node_name"])
    with _locked([ref]), quiet_fp():
        var = _read_writable(ref)
        _check_same_shape(var, inputs[4], "delta", attrs)
        _descend(var, slice(None), inputs[4], *_scalars(var, *inputs[1:4]))
        return [var]


@register("SparseApplyProximalGradientDescent")
def sparse_apply_proximal_gradient_descent(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyProximalGradientDescent(ref, alpha, l1, l2, grad, indices): named rows only."""
    ref = _ref(inputs[0], attrs["_node_name"])
    with _locked([ref]), quiet_fp():
        var = _read_writable(ref)
        rows, grad = _summed_rows(var, inputs[4], inputs[5], attrs)
        _descend(var, rows, grad, *_scalars(var, *inputs[1:4]))
        return [var]


def _adagrad_kernel(inputs: list, attrs: dict, sparse: bool) -> list:
    node = attrs["_node_name"]
    ref, accum_ref = _ref(inputs[0], node), _ref(inputs[1], node, 1)
    with _locked([ref, accum_ref]), quiet_fp():
        var, accum = _read_writable(ref), _read_writable(accum_ref)
        _check_same_shape(var, accum, "accum", attrs)
        if sparse:
            rows, grad = _summed_rows(var, inputs[5], inputs[6], attrs)
        else:
            rows, grad = slice(None), inputs[5]
            _check_same_shape(var, grad, "grad", attrs)
        _adagrad(var, accum, rows, grad, *_scalars(var, *inputs[2:5]))
        return [var]


@register("ApplyProximalAdagrad")
def apply_proximal_adagrad(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyProximalAdagrad(ref, accum, lr, l1, l2, grad)."""
    return _adagrad_kernel(inputs, attrs, sparse=False)


@register("SparseApplyProximalAdagrad")
def sparse_apply_proximal_adagrad(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyProximalAdagrad(ref, accum, lr, l1, l2, grad, indices): named rows only."""
    return _adagrad_kernel(inputs, attrs, sparse=True)

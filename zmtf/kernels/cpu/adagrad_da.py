"""ApplyAdagradDA and SparseApplyAdagradDA: Adagrad dual averaging (Duchi et al. 2011), TF's
formulas. The variable is not stepped but recomputed from the gradient sums each time:

    g += grad; gg += grad^2
    var = -sign(g) * lr * max(|g| - l1 * t, 0) / (l2 * t * lr + sqrt(gg))

with t the global step (TF's optimizer passes global_step + 1). The sparse kernel does the
same on the gradient's rows only (repeated rows summed first), dividing through by t * lr
in TF's sparse order, so that both match TF to the last bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import quiet_fp
from zmtf.kernels.cpu.sparse_apply import _summed_rows
from zmtf.kernels.cpu.state import _check_same_shape, _locked, _read_writable, _ref
from zmtf.kernels.registry import register


def _dual_average(accum: np.ndarray, squared: np.ndarray, lr: Any, l1: Any, l2: Any,
                  step: Any) -> np.ndarray:
    """The weights the accumulated gradients give, in TF's order of operations."""
    denominator = l2 * step * lr + np.sqrt(squared)
    if l1 > 0:
        shrunk = np.maximum(np.abs(accum) - l1 * step, 0)
        return lr * np.sign(-accum) * shrunk / denominator
    return lr * accum * -1 / denominator


def _dual_average_rows(accum: np.ndarray, squared: np.ndarray, lr: Any, l1: Any, l2: Any,
                       step: Any) -> np.ndarray:
    """The same weights in the sparse kernel's (different) order of operations."""
    denominator = l2 + np.sqrt(squared) / (step * lr)
    if l1 > 0:
        return -1 * np.sign(accum) * np.maximum(np.abs(accum) / step - l1, 0) / denominator
    return -1 * (accum / step) / denominator


def _scalars(inputs: list, var: np.ndarray, attrs: dict) -> tuple[Any, Any, Any, Any]:
    """(lr, l1, l2, global_step) in var's dtype; global_step must be an integer scalar."""
    lr, l1, l2, step = inputs
    step = np.asarray(step)
    if step.shape != () or step.dtype.kind not in "iu":
        raise InvalidArgumentError(f"global_step of '{attrs['_node_name']}' must be an integer "
                                   f"scalar, got {step.dtype.name} of shape {list(step.shape)}")
    return tuple(np.asarray(x).astype(var.dtype)[()] for x in (lr, l1, l2, step))  # type: ignore[return-value]


@register("ApplyAdagradDA")
def apply_adagrad_da(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyAdagradDA(ref, gradient_accumulator, gradient_squared_accumulator, grad, lr, l1, l2,
    global_step)."""
    node = attrs["_node_name"]
    ref, g_ref, gg_ref = (_ref(inputs[i], node, i) for i in range(3))
    grad = inputs[3]
    with _locked([ref, g_ref, gg_ref]), quiet_fp():
        var, accum, squared = (_read_writable(r) for r in (ref, g_ref, gg_ref))
        for what, other in (("gradient_accumulator", accum),
                            ("gradient_squared_accumulator", squared), ("grad", grad)):
            _check_same_shape(var, other, what, attrs)
        lr, l1, l2, step = _scalars(inputs[4:8], var, attrs)
        accum += grad
        squared += np.square(grad)
        var[...] = _dual_average(accum, squared, lr, l1, l2, step)
        return [var]


@register("SparseApplyAdagradDA")
def sparse_apply_adagrad_da(ctx: Any, inputs: list, attrs: dict) -> list:
    """SparseApplyAdagradDA(ref, gradient_accumulator, gradient_squared_accumulator, grad,
    indices, lr, l1, l2, global_step): only the named rows."""
    node = attrs["_node_name"]
    ref, g_ref, gg_ref = (_ref(inputs[i], node, i) for i in range(3))
    with _locked([ref, g_ref, gg_ref]), quiet_fp():
        var, accum, squared = (_read_writable(r) for r in (ref, g_ref, gg_ref))
        rows, grad = _summed_rows(var, inputs[3], inputs[4], attrs)
        lr, l1, l2, step = _scalars(inputs[5:9], var, attrs)
        a = accum[rows] + grad
        accum[rows] = a
        s = squared[rows] + np.square(grad)
        squared[rows] = s
        var[rows] = _dual_average_rows(a, s, lr, l1, l2, step)
        return [var]

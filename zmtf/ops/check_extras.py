"""The rest of tf.debugging: assert_near, assert_rank_in, assert_same_float_dtype,
assert_proper_iterable, is_non_decreasing, is_strictly_increasing and is_numeric_tensor,
with check_ops' rules (what is known at build time is checked then)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Operation, Tensor
from zmtf.ops import array_ops, math_ops
from zmtf.ops.check_ops import _check, _scope
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import no_op


def assert_near(x: Any, y: Any, rtol: Any = None, atol: Any = None, data: Any = None,
                summarize: int | None = None, message: str | None = None,
                name: str | None = None) -> Operation:
    """Fails unless ``|x - y| <= atol + rtol * |y|`` everywhere; rtol and atol default to
    10 * the dtype's machine epsilon, as in TF."""
    with _scope(name, "assert_near"):
        x = convert_to_tensor(x, name="x")
        y = convert_to_tensor(y, dtype=x.dtype, name="y")
        if not x.dtype.is_floating:
            raise TypeError(f"assert_near takes float tensors, got {x.dtype.name} ({x.name})")
        eps = float(np.finfo(x.dtype.np).eps)
        rtol_t = convert_to_tensor(10 * eps if rtol is None else rtol, dtype=x.dtype, name="rtol")
        atol_t = convert_to_tensor(10 * eps if atol is None else atol, dtype=x.dtype, name="atol")
        if data is None:
            data = ["x and y not equal to tolerance rtol = ", rtol_t, ", atol = ", atol_t,
                    f"x ({x.name}) = ", x, f"y ({y.name}) = ", y]
        tolerance = atol_t + rtol_t * math_ops.abs(y)
        held = math_ops.less_equal(math_ops.abs(x - y), tolerance)
        return _check(held, None, data, summarize, message)


def assert_rank_in(x: Any, ranks: Sequence[Any], data: Any = None, summarize: int | None = None,
                   message: str | None = None, name: str | None = None) -> Operation:
    """x's rank is one of ``ranks``: a ValueError now when its rank is known."""
    with _scope(name, "assert_rank_in"):
        x = convert_to_tensor(x, name="x")
        wanted = [int(r) for r in ranks]
        if x.shape.ndims is not None:
            if x.shape.ndims not in wanted:
                prefix = f"{message}: " if message else ""
                raise ValueError(f"{prefix}Tensor {x.name} must have rank in {tuple(wanted)}.  "
                                 f"Received rank {x.shape.ndims}, shape {x.shape}")
            return no_op(name="static_checks_determined_all_ok")
        rank = array_ops.rank(x)
        held = math_ops.reduce_any(math_ops.equal(rank, convert_to_tensor(wanted)))
        if data is None:
            data = [f"Tensor {x.name} must have rank in", convert_to_tensor(wanted),
                    "Received shape: ", array_ops.shape(x)]
        return _check(held, None, data, summarize, message)


def assert_same_float_dtype(tensors: Sequence[Any] | None = None, dtype: Any = None) -> dtypes.DType:
    """The one float dtype of ``tensors`` (and ``dtype``), float32 when there is none;
    ValueError when they differ or are not floats."""
    wanted = dtypes.as_dtype(dtype) if dtype is not None else None
    for t in tensors or []:
        if wanted is None:
            wanted = t.dtype
        elif t.dtype != wanted:
            raise ValueError(f"{t.name}, type={t.dtype.name}: expected type {wanted.name}.")
    wanted = wanted or dtypes.float32
    if not wanted.is_floating:
        raise ValueError(f"Expected floating point type, got {wanted!r}.")
    return wanted


def assert_proper_iterable(values: Any) -> None:
    """TypeError unless ``values`` is an iterable of values (not a Tensor, array or string)."""
    unintentional = (Tensor, np.ndarray, str, bytes)
    if isinstance(values, unintentional) or hasattr(values, "_ref_tensor"):
        raise TypeError(f"Expected argument \"values\" to be a \"proper\" iterable.  Found: "
                        f"{type(values)}")
    if not hasattr(values, "__iter__"):
        raise TypeError(f"Expected argument \"values\" to be iterable.  Found: {type(values)}")


def is_numeric_tensor(tensor: Any) -> bool:
    """True for a Tensor of a number dtype (not bool, not string)."""
    return isinstance(tensor, Tensor) and (tensor.dtype.is_floating or tensor.dtype.is_integer)


def _is_increasing(x: Any, strict: bool, name: str | None, default: str) -> Tensor:
    with _scope(name, default):
        flat = array_ops.reshape(convert_to_tensor(x, name="x"), [-1])
        if not is_numeric_tensor(flat):
            raise TypeError(f"Expected x to be a numeric tensor, got {flat.dtype.name}")
        compare = math_ops.less if strict else math_ops.less_equal
        return math_ops.reduce_all(compare(flat[:-1], flat[1:]))


def is_non_decreasing(x: Any, name: str | None = None) -> Tensor:
    """A bool scalar: x[i] <= x[i+1] for its elements in row-major order (True if < 2)."""
    return _is_increasing(x, False, name, "is_non_decreasing")


def is_strictly_increasing(x: Any, name: str | None = None) -> Tensor:
    """A bool scalar: x[i] < x[i+1] for its elements in row-major order (True if < 2)."""
    return _is_increasing(x, True, name, "is_strictly_increasing")

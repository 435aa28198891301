"""Small helpers shared by the CPU kernels: dtype groups, error wording, attribute parsing."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError, ResourceExhaustedError
from zmtf.framework.memory_budget import CHARGE_MIN_BYTES, charge
from zmtf.kernels.fp import in_quiet_section, quiet_fp, quietly  # noqa: F401 - the kernels' import site

FLOATS: tuple[str, ...] = ("float16", "float32", "float64")
SIGNED_INTS: tuple[str, ...] = ("int8", "int16", "int32", "int64")
UNSIGNED_INTS: tuple[str, ...] = ("uint8", "uint16", "uint32", "uint64")
INTS: tuple[str, ...] = SIGNED_INTS + UNSIGNED_INTS
NUMERIC: tuple[str, ...] = FLOATS + INTS
#: complex64/complex128: numpy kernels only (numba's paths take the real dtypes)
COMPLEX: tuple[str, ...] = ("complex64", "complex128")
ALL: tuple[str, ...] = NUMERIC + ("bool",)

#: The most bytes one kernel output may take when its size comes from data (a shape input,
#: a size attr, a header): the wire's own per-tensor limit (zmtf.wire.tensors.Limits), so a
#: graph from the network cannot make a worker fault in terabytes before anything checks.
#: Raise it with the ZMTF_MAX_OUTPUT_BYTES environment variable for bigger local tensors.
MAX_OUTPUT_BYTES: int = int(os.environ.get("ZMTF_MAX_OUTPUT_BYTES", 4 << 30))


def shape_str(shape: Iterable[int]) -> str:
    """TF's shape wording: ``[2,3]``."""
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def int_list(value: Any, what: str, node_name: str) -> list[int]:
    """A shape-like input (1-D int array, list, or scalar) as a list of ints."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "iu" and arr.size:
        raise InvalidArgumentError(
            f"{what} of node '{node_name}' must be integers, got dtype {arr.dtype.name}"
        )
    return [int(v) for v in arr.reshape(-1)]


def check_output_size(shape: Sequence[int], dtype: Any, node_name: str,
                      what: str = "output") -> None:
    """ResourceExhaustedError, before allocating, if an array of ``shape`` and ``dtype``
    would take more than MAX_OUTPUT_BYTES (numpy would fault the pages in, or fail late)."""
    itemsize = np.dtype(dtype).itemsize if dtype is not None else 1
    size = max(itemsize, 1)
    for d in shape:   # a loop: a generator's every item is a call of its own
        size *= int(d)
    if size > MAX_OUTPUT_BYTES:
        raise ResourceExhaustedError(
            None, None,
            f"{what} of node '{node_name}' would be {np.dtype(dtype).name if dtype else 'shape '}"
            f"{shape_str(shape)}, {size} bytes{'' if dtype else ' at one byte an element'}, past "
            f"the limit of {MAX_OUTPUT_BYTES} bytes for "
            f"one tensor; check the shape it was given (or raise ZMTF_MAX_OUTPUT_BYTES)")
    if size >= CHARGE_MIN_BYTES:   # a server's step: its bytes in flight are bounded too
        charge(size, f"{what} of node '{node_name}'")


def shape_input(value: Any, node_name: str, dtype: Any = None) -> tuple[int, ...]:
    """A 1-D int32/int64 shape input, validated to have no negative dimension and to name
    an array of ``dtype`` (1-byte items when None) no larger than MAX_OUTPUT_BYTES."""
    dims = int_list(value, "shape", node_name)
    if np.ndim(value) > 1:
        raise InvalidArgumentError(
            f"shape of node '{node_name}' must be a vector, got shape {shape_str(np.shape(value))}"
        )
    if dims and min(dims) < 0:
        raise InvalidArgumentError(
            f"shape {shape_str(dims)} of node '{node_name}' has a negative dimension"
        )
    check_output_size(dims, dtype, node_name)
    return tuple(dims)


def str_attr(attrs: dict[str, Any], key: str, node_name: str) -> str:
    """A str attr (a separator, a delimiter, a mode): graphs from the network may hold
    anything there, and ``.encode()`` on an int would be an InternalError."""
    value = attrs.get(key)
    if not isinstance(value, str):
        raise InvalidArgumentError(
            f"attr '{key}' of node '{node_name}' must be a string, got {type(value).__name__} "
            f"{value!r:.40}")
    return value


def dtype_attr(attrs: dict[str, Any], key: str, node_name: str,
               allowed: Sequence[str] = ALL, default: str | None = None) -> np.dtype:
    """A dtype attr as a numpy dtype, from zmtf's own names only: ``np.dtype()`` on a string
    from the network would also make "O", "V8" or "i4,i4" (and parses some strings with
    ast.literal_eval)."""
    value = attrs.get(key, default)
    try:
        name = as_dtype(value).name
    except TypeError:
        name = None
    if name not in allowed:
        raise InvalidArgumentError(
            f"attr '{key}' of node '{node_name}' must be one of {', '.join(allowed)}, "
            f"got {value!r:.40}")
    return np.dtype(name)


def normalize_axis(axis: int, ndim: int, node_name: str, what: str = "axis") -> int:
    """``axis`` in [-ndim, ndim) -> [0, ndim); InvalidArgumentError otherwise."""
    if not -ndim <= axis < ndim:
        raise InvalidArgumentError(
            f"{what} {axis} of node '{node_name}' is out of range: must be in "
            f"[{-ndim}, {ndim}) for an input of rank {ndim}"
        )
    return axis % ndim if ndim else 0


def first_input_or_attr(
    inputs: Sequence[Any], index: int, attrs: dict[str, Any], name: str, default: Any = None
) -> Any:
    """TF passes some arguments (axis, perm, depth) as inputs; zmtf graphs may use attrs."""
    if len(inputs) > index:
        return inputs[index]
    return attrs.get(name, default)


def empty(ctx: Any, shape: Any, dtype: Any) -> np.ndarray:
    """An output buffer: from the runtime's buffer pool when the context has one (big outputs
    then reuse memory instead of faulting in fresh pages), else ``np.empty``."""
    allocate = getattr(ctx, "empty", None)
    return allocate(shape, dtype) if allocate is not None else np.empty(shape, dtype)

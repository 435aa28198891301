"""PyFunc / PyFuncStateless: call the Python function filed under the node's token, then check
its results against Tout with TF's wording. Exceptions map to TF's codes (py_func.cc):
ValueError/TypeError -> InvalidArgument, StopIteration -> OutOfRange, MemoryError ->
ResourceExhausted, NotImplementedError -> Unimplemented, a tf.errors.* keeps its own, the
rest -> Unknown; the message carries the Python traceback."""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

import zmtf.framework.errors as errors
from zmtf.framework.py_funcs import registered_function
from zmtf.kernels.registry import register

#: numpy dtype name -> TF's DataTypeString, for "is double, but expects float" messages
_TF_NAMES = {"float32": "float", "float64": "double", "float16": "half", "object": "string",
             "bytes": "string", "str": "string"}
_RAISED_AS: list[tuple[type[BaseException], type[errors.OpError]]] = [
    (ValueError, errors.InvalidArgumentError), (TypeError, errors.InvalidArgumentError),
    (StopIteration, errors.OutOfRangeError), (MemoryError, errors.ResourceExhaustedError),
    (NotImplementedError, errors.UnimplementedError),
]


@register("PyFunc")
@register("PyFuncStateless")
def py_func(ctx: Any, inputs: list, attrs: dict) -> list:
    token, node = attrs["token"], attrs["_node_name"]
    entry = registered_function(token)
    if entry is None:
        raise errors.InvalidArgumentError(   # TF: "ValueError: callback pyfunc_0 is not found"
            f"callback {token} is not found: py_func node '{node}' cannot run in this process, "
            f"as its Python function "
            f"lives only in the process that built the graph. Pin it with tf.device(...) to the "
            f"client's own task (a tf.train.Server started in that process with "
            f"allow_ops=('PyFunc',), and tf.Session(server.target)), or run it in a local "
            f"tf.Session")
    try:
        result = entry.func(*[np.asarray(x) for x in inputs])
    except errors.OpError:
        raise
    except BaseException as exc:  # noqa: BLE001 - the function's failure is the step's error
        raise _as_step_error(exc) from exc
    return _checked(result, entry.tout, token)


def _as_step_error(exc: BaseException) -> errors.OpError:
    cls: type[errors.OpError] = errors.UnknownError
    for python_type, error_type in _RAISED_AS:
        if isinstance(exc, python_type):
            cls = error_type
            break
    trace = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return cls(f"{type(exc).__name__}: {exc}\n{trace}")


def _checked(result: Any, tout: list[str], token: str) -> list:
    if result is None and not tout:
        return []
    if isinstance(result, bytes):
        result = [result]
    values = list(result) if isinstance(result, (list, tuple)) else [result]
    if len(values) != len(tout):
        raise errors.InvalidArgumentError(
            f"{token} returns {len(values)} values, but expects to see {len(tout)} values.")
    return [_converted(value, dtype, i, token) for i, (value, dtype) in enumerate(zip(values, tout))]


def _converted(value: Any, dtype: str, i: int, token: str) -> np.ndarray:
    array = np.asarray(value, order="C")
    if dtype == "string" and array.dtype.kind in "SUO":
        strings = [x.encode("utf-8") if isinstance(x, str) else x for x in array.reshape(-1)]
        if all(isinstance(x, bytes) for x in strings):
            out = np.empty(len(strings), dtype=object)
            out[:] = strings
            return out.reshape(array.shape)
    if array.dtype.name != dtype or array.dtype == object:
        have = _TF_NAMES.get(array.dtype.name, array.dtype.name)
        if array.dtype.kind in "SU":
            have = "string"
        raise errors.InvalidArgumentError(
            f"{i}-th value returned by {token} is {have}, but expects {_TF_NAMES.get(dtype, dtype)}")
    return array

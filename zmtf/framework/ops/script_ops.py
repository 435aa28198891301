"""``tf.py_func`` and ``tf.numpy_function``: a Python function on numpy values, run as a node.

A callable cannot cross the wire (no pickle), so, as TF does, ``py_func`` files the function
in this process's registry under a unique token and puts only the token, the output dtypes
and the op type (``PyFunc`` when stateful, ``PyFuncStateless`` when not) in the graph. The CPU
kernel (kernels/cpu/script.py) looks the token up, so the node runs only in the process that
built it: locally, on the in-process ``tf.train.Server``, or on any server of the same
process; another process finds no such token and fails the step, saying to pin the node.

The registry holds its entries weakly; the graph that uses a function keeps it alive (TF's
``_py_funcs_used_in_graph``), so a dropped graph frees its functions.
"""

from __future__ import annotations

import itertools
import os
import uuid
import weakref
from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.framework.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

PY_FUNC_OPS = ("PyFunc", "PyFuncStateless")
STRING_INPUT_OPS.update(PY_FUNC_OPS)


class PyFunction:
    """A registered function and the dtypes its outputs must have."""

    __slots__ = ("func", "tout", "token", "__weakref__")

    def __init__(self, func: Callable[..., Any], tout: list[str], token: str) -> None:
        self.func = func
        self.tout = tout
        self.token = token


#: token -> PyFunction, for the functions of graphs still alive in this process. The suffix
#: names the process so that a token never matches another process's function.
_REGISTRY: weakref.WeakValueDictionary[str, PyFunction] = weakref.WeakValueDictionary()
_COUNTER = itertools.count()
_PROCESS = f"{os.getpid()}.{uuid.uuid4().hex[:8]}"


def registered_function(token: str) -> PyFunction | None:
    """The function filed under ``token`` in this process, or None (another process's)."""
    return _REGISTRY.get(token)


# No gradient is registered (as in TF): tf.gradients through one raises LookupError unless
# the graph's gradient_override_map names a gradient for it.
@op_def("PyFunc", stateful=True)
@op_def("PyFuncStateless")
def _py_func_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.as_dtype(t), TensorShape(None)) for t in attrs["Tout"]]


def py_func(func: Callable[..., Any], inp: Any, Tout: Any, stateful: bool = True,  # noqa: N803
            name: str | None = None) -> Any:
    """Wrap ``func(*numpy_inputs) -> numpy value(s)`` as an op: one output Tensor when
    ``Tout`` is one dtype, a list when it is a list. Runs only in this process."""
    single = not isinstance(Tout, (list, tuple))
    tout = [dtypes.as_dtype(t).name for t in ([Tout] if single else Tout)]
    if not callable(func):
        raise TypeError(f"py_func expects a callable, got {type(func).__name__}")
    inputs = [convert_to_tensor(x) for x in (inp if isinstance(inp, (list, tuple)) else [inp])]
    token = f"pyfunc_{next(_COUNTER)}@{_PROCESS}"
    entry = PyFunction(func, tout, token)
    graph = inputs[0].graph if inputs else get_default_graph()
    keep = graph.__dict__.setdefault("_py_funcs_used_in_graph", [])
    keep.append(entry)
    _REGISTRY[token] = entry
    op = apply_op(PY_FUNC_OPS[0] if stateful else PY_FUNC_OPS[1], inputs,
                  {"token": token, "Tout": tout}, name=name or "PyFunc")
    if single:
        return op.outputs[0]
    return list(op.outputs)


def numpy_function(func: Callable[..., Any], inp: Any, Tout: Any, stateful: bool = True,  # noqa: N803
                   name: str | None = None) -> Any:
    """TF2's name for ``py_func`` (same semantics: numpy in, numpy out, not differentiable)."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)


__all__ = ["numpy_function", "py_func"]

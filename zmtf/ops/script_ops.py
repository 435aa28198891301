"""``tf.py_func`` and ``tf.numpy_function``: a Python function on numpy values, run as a node.

``py_func`` files the function in this process's table (framework/py_funcs.py) and puts only
its token, the output dtypes and the op type (``PyFunc`` when stateful, ``PyFuncStateless``
when not) in the graph. The CPU kernel (kernels/cpu/script.py) looks the token up, so the
node runs only in the process that built it: locally, on the in-process ``tf.train.Server``,
or on any server of the same process; another process fails the step, saying to pin it.
The graph keeps its functions alive (TF's ``_py_funcs_used_in_graph``).
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes, py_funcs
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

PY_FUNC_OPS = ("PyFunc", "PyFuncStateless")
STRING_INPUT_OPS.update(PY_FUNC_OPS)


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
    entry = py_funcs.register(func, tout)
    graph = inputs[0].graph if inputs else get_default_graph()
    graph.__dict__.setdefault("_py_funcs_used_in_graph", []).append(entry)
    op = apply_op(PY_FUNC_OPS[0] if stateful else PY_FUNC_OPS[1], inputs,
                  {"token": entry.token, "Tout": tout}, name=name or "PyFunc")
    if single:
        return op.outputs[0]
    return list(op.outputs)


def numpy_function(func: Callable[..., Any], inp: Any, Tout: Any, stateful: bool = True,  # noqa: N803
                   name: str | None = None) -> Any:
    """TF2's name for ``py_func`` (same semantics: numpy in, numpy out, not differentiable)."""
    return py_func(func, inp, Tout, stateful=stateful, name=name)


__all__ = ["numpy_function", "py_func"]

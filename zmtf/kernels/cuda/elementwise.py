"""Elementwise GPU kernels: binary ops with numpy broadcasting, unary math, grad helpers, AddN.

Every op is a device function in a table; a factory closes a grid-stride kernel over it.
Binary ops have two kernels: a flat one for same-shape or scalar operands (no index
arithmetic) and a strided one for general broadcasting, where the host passes the
coalesced output dims and each input's strides (``_plan.broadcast_plan``) as small int64
device arrays.

NOTE (simulator): device functions run as Python there, so ``math.log(0)``,
``math.sqrt(-1)`` and ``math.exp(1000)`` raise instead of giving -inf / nan / inf as a GPU
does. Sigmoid is written so that it never overflows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import cuda

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.cuda import _device
from zmtf.kernels.cuda._plan import broadcast_plan
from zmtf.kernels.registry import register

#: dtypes of the math kernels (float16 arithmetic needs compute capability >= 5.3; later)
MATH: tuple[str, ...] = ("float32", "float64")

# ---------------------------------------------------------------------------------------
# device functions


@cuda.jit(device=True)
def _add(a, b):  # type: ignore[no-untyped-def]
    return a + b


@cuda.jit(device=True)
def _sub(a, b):  # type: ignore[no-untyped-def]
    return a - b


@cuda.jit(device=True)
def _mul(a, b):  # type: ignore[no-untyped-def]
    return a * b


@cuda.jit(device=True)
def _real_div(a, b):  # type: ignore[no-untyped-def]
    return a / b


@cuda.jit(device=True)
def _maximum(a, b):  # type: ignore[no-untyped-def]
    return a if (a > b) or (a != a) else b  # NaN wins, as in np.maximum


@cuda.jit(device=True)
def _minimum(a, b):  # type: ignore[no-untyped-def]
    return a if (a < b) or (a != a) else b


@cuda.jit(device=True)
def _squared_difference(a, b):  # type: ignore[no-untyped-def]
    d = a - b
    return d * d


@cuda.jit(device=True)
def _equal(a, b):  # type: ignore[no-untyped-def]
    return a == b


@cuda.jit(device=True)
def _less(a, b):  # type: ignore[no-untyped-def]
    return a < b


@cuda.jit(device=True)
def _greater(a, b):  # type: ignore[no-untyped-def]
    return a > b


@cuda.jit(device=True)
def _relu_grad(gradient, feature):  # type: ignore[no-untyped-def]
    return gradient if feature > 0 else gradient * 0


@cuda.jit(device=True)
def _sigmoid_grad(y, dy):  # type: ignore[no-untyped-def]
    return dy * y * (1 - y)


@cuda.jit(device=True)
def _tanh_grad(y, dy):  # type: ignore[no-untyped-def]
    return dy * (1 - y * y)


@cuda.jit(device=True)
def _neg(v):  # type: ignore[no-untyped-def]
    return -v


@cuda.jit(device=True)
def _abs(v):  # type: ignore[no-untyped-def]
    return abs(v)


@cuda.jit(device=True)
def _relu(v):  # type: ignore[no-untyped-def]
    return v * 0 if v < 0 else v  # NaN stays NaN


@cuda.jit(device=True)
def _sigmoid(v):  # type: ignore[no-untyped-def]
    if v >= 0:
        return 1 / (1 + math.exp(-v))
    e = math.exp(v)  # v < 0 or NaN: never overflows
    return e / (1 + e)


@cuda.jit(device=True)
def _tanh(v):  # type: ignore[no-untyped-def]
    return math.tanh(v)


@cuda.jit(device=True)
def _exp(v):  # type: ignore[no-untyped-def]
    return math.exp(v)


@cuda.jit(device=True)
def _log(v):  # type: ignore[no-untyped-def]
    return math.log(v)


@cuda.jit(device=True)
def _square(v):  # type: ignore[no-untyped-def]
    return v * v


@cuda.jit(device=True)
def _sqrt(v):  # type: ignore[no-untyped-def]
    return math.sqrt(v)


# ---------------------------------------------------------------------------------------
# kernel factories (the closed-over device function is a compile-time constant)


def _flat_binary_kernel(op: Any) -> Any:
    @cuda.jit
    def kernel(x, y, out):  # type: ignore[no-untyped-def]
        n = out.size
        x_step = 1 if x.size == n else 0  # the whole output, or a scalar
        y_step = 1 if y.size == n else 0
        for i in range(cuda.grid(1), n, cuda.gridsize(1)):
            out[i] = op(x[i * x_step], y[i * y_step])

    return kernel


def _strided_binary_kernel(op: Any) -> Any:
    @cuda.jit
    def kernel(x, y, out, dims, x_strides, y_strides):  # type: ignore[no-untyped-def]
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            rest = i
            xi = 0
            yi = 0
            for d in range(dims.size - 1, -1, -1):
                q = rest // dims[d]
                c = rest - q * dims[d]
                rest = q
                xi += c * x_strides[d]
                yi += c * y_strides[d]
            out[i] = op(x[xi], y[yi])

    return kernel


def _unary_kernel(op: Any) -> Any:
    @cuda.jit
    def kernel(x, out):  # type: ignore[no-untyped-def]
        for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
            out[i] = op(x[i])

    return kernel


# ---------------------------------------------------------------------------------------
# op tables


@dataclass(frozen=True, slots=True)
class Binary:
    """One binary op: its flat and strided kernels, and whether it outputs bool."""

    op_type: str
    flat: Any
    strided: Any
    bool_out: bool = False


def _binary(op_type: str, op: Any, bool_out: bool = False) -> Binary:
    return Binary(op_type, _flat_binary_kernel(op), _strided_binary_kernel(op), bool_out)


_add_spec = _binary("Add", _add)

BINARY_OPS: dict[str, Binary] = {
    spec.op_type: spec
    for spec in (
        _add_spec,
        Binary("AddV2", _add_spec.flat, _add_spec.strided),
        _binary("Sub", _sub),
        _binary("Mul", _mul),
        _binary("RealDiv", _real_div),
        _binary("Maximum", _maximum),
        _binary("Minimum", _minimum),
        _binary("SquaredDifference", _squared_difference),
        _binary("Equal", _equal, bool_out=True),
        _binary("Less", _less, bool_out=True),
        _binary("Greater", _greater, bool_out=True),
        _binary("ReluGrad", _relu_grad),
        _binary("SigmoidGrad", _sigmoid_grad),
        _binary("TanhGrad", _tanh_grad),
    )
}

UNARY_OPS: dict[str, Any] = {
    "Neg": _unary_kernel(_neg),
    "Abs": _unary_kernel(_abs),
    "Relu": _unary_kernel(_relu),
    "Sigmoid": _unary_kernel(_sigmoid),
    "Tanh": _unary_kernel(_tanh),
    "Exp": _unary_kernel(_exp),
    "Log": _unary_kernel(_log),
    "Square": _unary_kernel(_square),
    "Sqrt": _unary_kernel(_sqrt),
}


# ---------------------------------------------------------------------------------------
# host side


def binary(spec: Binary, ctx: Any, x: Any, y: Any, out: Any = None) -> Any:
    """out = op(x, y) with numpy broadcasting; ``out`` (if given) must have the result's
    shape and may be ``x`` itself (in-place updates: each element is read, then written)."""
    try:
        plan = broadcast_plan([x.shape, y.shape], None if out is None else out.shape)
    except ValueError:
        raise InvalidArgumentError(
            f"Incompatible shapes: {shape_str(x.shape)} vs. {shape_str(y.shape)} "
            f"({spec.op_type})"
        ) from None
    if out is None:
        out = _device.empty(ctx, plan.shape, np.bool_ if spec.bool_out else x.dtype)
    n = out.size
    if n == 0:
        return out
    xf, yf, of = _device.flat(x), _device.flat(y), _device.flat(out)
    if plan.is_flat:
        _device.launch(ctx, spec.flat, n, xf, yf, of)
    else:
        dims = _device.index_array(ctx, plan.dims)
        x_strides, y_strides = (_device.index_array(ctx, s) for s in plan.strides)
        _device.launch(ctx, spec.strided, n, xf, yf, of, dims, x_strides, y_strides)
    return out


def unary(kernel: Any, ctx: Any, x: Any) -> Any:
    """out = op(x) elementwise."""
    out = _device.empty(ctx, x.shape, x.dtype)
    _device.launch(ctx, kernel, out.size, _device.flat(x), _device.flat(out))
    return out


def _make_binary_kernel(spec: Binary) -> Callable[[Any, list, dict], list]:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        x, y = inputs
        return [binary(spec, ctx, x, y)]

    kernel.__name__ = kernel.__qualname__ = f"{spec.op_type}_gpu_kernel"
    kernel.__doc__ = f"{spec.op_type}(x, y) on the GPU, with numpy broadcasting."
    return kernel


def _make_unary_kernel(op_type: str, device_kernel: Any) -> Callable[[Any, list, dict], list]:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        (x,) = inputs
        return [unary(device_kernel, ctx, x)]

    kernel.__name__ = kernel.__qualname__ = f"{op_type}_gpu_kernel"
    kernel.__doc__ = f"{op_type}(x) on the GPU, elementwise."
    return kernel


for _spec in BINARY_OPS.values():
    register(_spec.op_type, "GPU", MATH)(_make_binary_kernel(_spec))
for _op_type, _kernel in UNARY_OPS.items():
    register(_op_type, "GPU", MATH)(_make_unary_kernel(_op_type, _kernel))


@register("AddN", "GPU", MATH)
def add_n(ctx: Any, inputs: list, attrs: dict) -> list:
    """AddN(x0, ..., xn): the sum of same-shaped tensors (one accumulating pass per input)."""
    first = inputs[0]
    for i, x in enumerate(inputs[1:], start=1):
        if tuple(x.shape) != tuple(first.shape):
            raise InvalidArgumentError(
                f"AddN (node '{attrs['_node_name']}') needs inputs of the same shape: "
                f"inputs[0] is {shape_str(first.shape)}, inputs[{i}] is {shape_str(x.shape)}"
            )
    if len(inputs) == 1:
        return [first]
    out = binary(_add_spec, ctx, first, inputs[1])
    for x in inputs[2:]:
        binary(_add_spec, ctx, out, x, out=out)
    return [out]

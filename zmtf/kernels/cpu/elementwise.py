"""Elementwise kernels: binary ops with numpy broadcasting, unary math, gradient helpers, AddN.

Every op is one row of a table (``_BINARY``, ``_UNARY``): its numpy implementation, its
dtypes, and, where it measurably beats numpy on big inputs, a parallel numba kernel.

Two paths per call:
* small inputs (below ``PARALLEL_MIN_ELEMENTS``), float16/small ints/bool, general
  broadcasting, non-contiguous views: the numpy ufunc, called directly (~1 us, no numba);
* big, contiguous float32/float64/int32/int64 inputs of the same shape, or one of them a
  scalar: a ``prange`` numba kernel over the flattened data.

Transcendentals that numpy already runs as AVX-512 SIMD (log, tanh, softplus, float64 exp)
stay on numpy: numba calls scalar libm there and loses 2-20x. float32 Exp and Sigmoid use a
vectorizable exp written here (< 1 ulp, computed in float64).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import prange
from numba.core import types
from numba.extending import intrinsic

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import (COMPLEX, FLOATS, NUMERIC, SIGNED_INTS, empty, in_quiet_section,
                                      quiet_fp, quietly, shape_str)
from zmtf.kernels.cpu._jit import NUMBA_NP_DTYPES, PARALLEL_MIN_ELEMENTS, jit, scalar
from zmtf.kernels.cpu._jit import takes_numba_path, thread_count, use_threads
from zmtf.kernels.registry import register

# ---------------------------------------------------------------------------------------
# numba scalar functions (inlined into the loops below)


@scalar
def _add(a, b):  # type: ignore[no-untyped-def]
    return a + b


@scalar
def _sub(a, b):  # type: ignore[no-untyped-def]
    return a - b


@scalar
def _mul(a, b):  # type: ignore[no-untyped-def]
    return a * b


@scalar
def _real_div(a, b):  # type: ignore[no-untyped-def]
    return a / b


@scalar
def _maximum(a, b):  # type: ignore[no-untyped-def]
    # NOTE: NaN wins, as in np.maximum; `a != a` folds away for ints.
    return a if (a > b) | (a != a) else b


@scalar
def _minimum(a, b):  # type: ignore[no-untyped-def]
    return a if (a < b) | (a != a) else b


@scalar
def _squared_difference(a, b):  # type: ignore[no-untyped-def]
    d = a - b
    return d * d


@scalar
def _equal(a, b):  # type: ignore[no-untyped-def]
    return a == b


@scalar
def _not_equal(a, b):  # type: ignore[no-untyped-def]
    return a != b


@scalar
def _less(a, b):  # type: ignore[no-untyped-def]
    return a < b


@scalar
def _less_equal(a, b):  # type: ignore[no-untyped-def]
    return a <= b


@scalar
def _greater(a, b):  # type: ignore[no-untyped-def]
    return a > b


@scalar
def _greater_equal(a, b):  # type: ignore[no-untyped-def]
    return a >= b


@scalar
def _relu_grad(gradient, feature):  # type: ignore[no-untyped-def]
    return gradient if feature > 0 else gradient * 0


@scalar
def _sigmoid_grad(y, dy):  # type: ignore[no-untyped-def]
    return dy * y * (1 - y)


@scalar
def _tanh_grad(y, dy):  # type: ignore[no-untyped-def]
    return dy * (1 - y * y)


@scalar
def _broadcast_loop(op, x, y, out):  # type: ignore[no-untyped-def]
    """out = op(x, y) over flat arrays: same size, or x or y of size 1 (scalar broadcast)."""
    n = out.size
    if x.size == n and y.size == n:
        for i in prange(n):
            out[i] = op(x[i], y[i])
    elif x.size == 1:
        left = x[0]
        for i in prange(n):
            out[i] = op(left, y[i])
    else:
        right = y[0]
        for i in prange(n):
            out[i] = op(x[i], right)


# One module-level kernel per op: only these are cacheable (see _jit.py).


@jit(parallel=True)
def add_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_add, x, y, out)


@jit(parallel=True)
def sub_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_sub, x, y, out)


@jit(parallel=True)
def mul_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_mul, x, y, out)


@jit(parallel=True)
def real_div_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_real_div, x, y, out)


@jit(parallel=True)
def maximum_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_maximum, x, y, out)


@jit(parallel=True)
def minimum_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_minimum, x, y, out)


@jit(parallel=True)
def squared_difference_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_squared_difference, x, y, out)


@jit(parallel=True)
def equal_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_equal, x, y, out)


@jit(parallel=True)
def not_equal_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_not_equal, x, y, out)


@jit(parallel=True)
def less_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_less, x, y, out)


@jit(parallel=True)
def less_equal_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_less_equal, x, y, out)


@jit(parallel=True)
def greater_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_greater, x, y, out)


@jit(parallel=True)
def greater_equal_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_greater_equal, x, y, out)


@jit(parallel=True)
def relu_grad_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_relu_grad, x, y, out)


@jit(parallel=True)
def sigmoid_grad_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_sigmoid_grad, x, y, out)


@jit(parallel=True)
def tanh_grad_kernel(x, y, out):  # type: ignore[no-untyped-def]
    _broadcast_loop(_tanh_grad, x, y, out)


# ---------------------------------------------------------------------------------------
# unary numba kernels


# float32 exp, sigmoid and tanh that LLVM vectorizes: pure arithmetic, no libm calls. numba
# here has no SVML, so np.exp/np.tanh inside a numba loop are scalar libm calls, 6-20x slower
# than numpy's SIMD ufuncs. These compute in float64 from a polynomial and a bit-level 2**k;
# rounded to float32 they are within 2 (exp), 3 (sigmoid) and 1 (tanh) float32 ulps of
# numpy's results (tests/kernels/test_fast_math.py). Used by the float32 Exp and Sigmoid
# kernels' large path and by fused elementwise loops (runtime.fused_kernels), which hash this
# file's source into theirs: they live here, beside the cached kernels that inline them,
# because numba's cache is invalidated by the changes of the caller's file only.


@intrinsic
def _int64_bits_as_float64(typingctx, bits):  # type: ignore[no-untyped-def]
    """Reinterpret the bits of an int64 as a float64 (LLVM bitcast; vectorizes)."""

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


_LOG2E = 1.4426950408889634
_LN2_HI = 0.6931471803691238  # ln 2 split in two so k * _LN2_HI is exact
_LN2_LO = 1.9082149292705877e-10
#: below this |x|, tanh(x) = x - x**3/3 + 2x**5/15 to far under a float32 ulp (the exp
#: form loses digits to cancellation there)
_TANH_SERIES_MAX = 0.004


@scalar
def exp_for_float32(v):  # type: ignore[no-untyped-def]
    """exp(v) in float64, relative error < 1e-11; vectorizable (no libm).

    exp(x) = 2**k * exp(r), k = round(x / ln2), |r| <= ln2/2, exp(r) by its degree-9 Taylor
    polynomial (error < 7e-12). The clamp keeps 2**k a normal float64 (and the result far
    outside float32's range, so 1 / (1 + exp(-x)) stays right); the float32 store turns
    too-large results into inf and too-small ones into 0, as expf does. NaN passes through
    the polynomial.
    """
    x = np.float64(v)
    if x > 700.0:
        x = 700.0
    if x < -700.0:
        x = -700.0
    k = np.floor(x * _LOG2E + 0.5)
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 + r * (1.0 + r * (0.5 + r * (1 / 6 + r * (1 / 24 + r * (
        1 / 120 + r * (1 / 720 + r * (1 / 5040 + r * (1 / 40320 + r * (1 / 362880)))))))))
    return p * _int64_bits_as_float64((np.int64(k) + 1023) << 52)


@scalar
def sigmoid_for_float32(v):  # type: ignore[no-untyped-def]
    """1 / (1 + exp(-v)) in float64 (the caller rounds it to float32): within one ulp of the
    true value, where numpy's float32 passes are within three. For v in [-103.97, -88.72]
    this gives the true (subnormal) value where those passes, whose exp(-v) overflows to inf,
    give 0."""
    return 1.0 / (1.0 + exp_for_float32(-v))


@scalar
def tanh_for_float32(v):  # type: ignore[no-untyped-def]
    """tanh(v) in float64 (the caller rounds it to float32): 1 - 2 / (exp(2|v|) + 1) with
    v's sign, its odd series near 0 (where -0.0 stays -0.0). NaN stays NaN, +-inf gives +-1."""
    x = np.float64(v)
    a = abs(x)
    big = 1.0 - 2.0 / (exp_for_float32(a + a) + 1.0)
    if x < 0.0:
        big = -big
    x2 = x * x
    small = x * (1.0 + x2 * (-1.0 / 3.0 + x2 * (2.0 / 15.0)))
    return small if a < _TANH_SERIES_MAX else big


@scalar
def _neg(v):  # type: ignore[no-untyped-def]
    return -v


@scalar
def _abs(v):  # type: ignore[no-untyped-def]
    return abs(v)


@scalar
def _relu(v):  # type: ignore[no-untyped-def]
    return max(v, 0)  # NaN stays NaN (the first argument wins a failed comparison); -inf gives 0


@scalar
def _relu6(v):  # type: ignore[no-untyped-def]
    if v < 0:
        return v * 0
    return v * 0 + 6 if v > 6 else v


@scalar
def _square(v):  # type: ignore[no-untyped-def]
    return v * v


@scalar
def _sqrt(v):  # type: ignore[no-untyped-def]
    return np.sqrt(v)


@scalar
def _rsqrt(v):  # type: ignore[no-untyped-def]
    return 1.0 / np.sqrt(v)


@scalar
def _reciprocal(v):  # type: ignore[no-untyped-def]
    return 1.0 / v


@scalar
def _sign(v):  # type: ignore[no-untyped-def]
    if v > 0:
        return v * 0 + 1
    return v * 0 - 1 if v < 0 else v  # 0 and NaN map to themselves


@scalar
def _map_loop(op, x, out):  # type: ignore[no-untyped-def]
    for i in prange(out.size):
        out[i] = op(x[i])


@jit(parallel=True)
def neg_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_neg, x, out)


@jit(parallel=True)
def abs_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_abs, x, out)


@jit(parallel=True)
def relu_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_relu, x, out)


@jit(parallel=True)
def relu6_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_relu6, x, out)


@jit(parallel=True)
def square_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_square, x, out)


@jit(parallel=True)
def sqrt_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_sqrt, x, out)


@jit(parallel=True)
def rsqrt_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_rsqrt, x, out)


@jit(parallel=True)
def reciprocal_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_reciprocal, x, out)


@jit(parallel=True)
def sign_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(_sign, x, out)


@jit(parallel=True)
def exp_f32_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(exp_for_float32, x, out)


@jit(parallel=True)
def sigmoid_f32_kernel(x, out):  # type: ignore[no-untyped-def]
    _map_loop(sigmoid_for_float32, x, out)


# ---------------------------------------------------------------------------------------
# numpy implementations (the small path, and the reference semantics)

_Array = np.ndarray


def _check_int_divisor(y: _Array) -> None:
    if y.dtype.kind in "iu" and not np.all(y):
        raise InvalidArgumentError("Integer division by zero")


def _floor_div(x: _Array, y: _Array) -> _Array:
    _check_int_divisor(y)
    return np.floor_divide(x, y, out=...)


def _floor_mod(x: _Array, y: _Array) -> _Array:
    _check_int_divisor(y)
    return np.remainder(x, y, out=...)


def _truncate_div(x: _Array, y: _Array) -> _Array:
    """x / y rounded toward zero (C's division), where FloorDiv rounds down."""
    _check_int_divisor(y)
    if x.dtype.kind == "f":
        return np.trunc(np.true_divide(x, y))
    quotient = np.floor_divide(x, y)
    # floor and truncation differ by one where the quotient is negative and inexact
    return quotient + ((quotient < 0) & (quotient * y != x)).astype(x.dtype)


def _truncate_mod(x: _Array, y: _Array) -> _Array:
    """The remainder of TruncateDiv: it takes the sign of x (C's %), where FloorMod takes y's."""
    _check_int_divisor(y)
    return np.fmod(x, y)


def _div_no_nan(x: _Array, y: _Array) -> _Array:
    """x / y, and 0 where y is 0 (never inf or NaN from a zero divisor)."""
    out = np.zeros(np.broadcast_shapes(x.shape, y.shape), x.dtype)
    return np.divide(x, y, out=out, where=y != 0)


def _pow(x: _Array, y: _Array) -> _Array:
    if y.dtype.kind == "i" and np.any(y < 0):
        raise InvalidArgumentError("Integers to negative integer powers are not allowed")
    return np.power(x, y, out=...)


def _np_squared_difference(x: _Array, y: _Array) -> _Array:
    d = np.subtract(x, y, out=...)
    return np.multiply(d, d, out=d)


#: From this many elements ReluGrad runs ``_serial_relu_grad`` (Relu ``_serial_relu``, a
#: bias Add ``_serial_bias_add``):
#: numpy's form builds a bool array and multiplies through a cast (a CNN's 64x26x26x16
#: gradient: 236 vs 107 us; 7 vs 2 us at 16K elements). Serial: the parallel kernels take
#: over at PARALLEL_MIN_ELEMENTS.
SERIAL_RELU_GRAD_MIN_ELEMENTS = 1 << 14
_RELU_GRAD_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


def _np_add(x: _Array, y: _Array) -> _Array:
    """x + y; a bias over the last axis of a big activation (x[..., C] + b[C], either order)
    in one serial pass: numpy's broadcasting loop takes 4x as long there (64x26x26x16 float32:
    288 vs 74 us)."""
    if x.size >= SERIAL_RELU_GRAD_MIN_ELEMENTS or y.size >= SERIAL_RELU_GRAD_MIN_ELEMENTS:
        big, bias = (x, y) if x.size >= y.size else (y, x)
        if (bias.ndim == 1 and big.ndim >= 2 and big.shape[-1] == bias.shape[0]
                and big.dtype in _RELU_GRAD_DTYPES and bias.dtype == big.dtype
                and big.flags.c_contiguous and bias.flags.c_contiguous):
            out = np.empty(big.shape, big.dtype)
            _serial_bias_add(big.reshape(-1, bias.shape[0]), bias, out.reshape(-1, bias.shape[0]))
            return out
    return np.add(x, y, out=...)


@jit()
def _serial_bias_add(rows, bias, out):  # type: ignore[no-untyped-def]
    """out[r, c] = rows[r, c] + bias[c]."""
    for r in range(rows.shape[0]):
        for c in range(rows.shape[1]):
            out[r, c] = rows[r, c] + bias[c]


def _np_relu_grad(gradients: _Array, features: _Array) -> _Array:
    if (gradients.size >= SERIAL_RELU_GRAD_MIN_ELEMENTS and gradients.shape == features.shape
            and gradients.dtype in _RELU_GRAD_DTYPES and features.dtype == gradients.dtype
            and gradients.flags.c_contiguous and features.flags.c_contiguous):
        out = np.empty(gradients.shape, gradients.dtype)
        _serial_relu_grad(gradients.reshape(-1), features.reshape(-1), out.reshape(-1))
        return out
    return np.multiply(gradients, features > 0, out=..., dtype=gradients.dtype)


@jit()
def _serial_relu_grad(gradients, features, out):  # type: ignore[no-untyped-def]
    """out = gradients * (features > 0), one pass; a NaN or inf gradient times 0 is NaN, as
    in numpy's form and TF's."""
    for i in range(out.shape[0]):
        out[i] = gradients[i] * np.float32(features[i] > 0)


def _np_sigmoid_grad(y: _Array, dy: _Array) -> _Array:
    one_minus_y = np.subtract(1, y, out=...)
    return np.multiply(np.multiply(dy, y, out=...), one_minus_y, out=one_minus_y)


def _np_tanh_grad(y: _Array, dy: _Array) -> _Array:
    one_minus_y2 = np.subtract(1, np.square(y, out=...), out=...)
    return np.multiply(dy, one_minus_y2, out=one_minus_y2)


def _zero(x: _Array) -> Any:
    return x.dtype.type(0)


def _np_relu(x: _Array) -> _Array:
    if (x.size >= SERIAL_RELU_GRAD_MIN_ELEMENTS and x.dtype in _RELU_GRAD_DTYPES
            and x.flags.c_contiguous):
        out = np.empty(x.shape, x.dtype)
        _serial_relu(x.reshape(-1), out.reshape(-1))
        return out
    return np.maximum(x, _zero(x), out=...)


@jit()
def _serial_relu(x, out):  # type: ignore[no-untyped-def]
    """out = np.maximum(x, 0) bit for bit (NaN kept, -0.0 -> 0.0), one pass: 4x numpy's
    time on a CNN's 64x26x26x16 float32 activation (262 vs 62 us), below the parallel path."""
    for i in range(out.shape[0]):
        value = x[i]
        out[i] = value if (value > 0) | (value != value) else 0


def _np_relu6(x: _Array) -> _Array:
    out = np.maximum(x, _zero(x), out=...)
    return np.minimum(out, x.dtype.type(6), out=out)


def _np_sigmoid(x: _Array) -> _Array:
    out = np.negative(x, out=...)
    np.exp(out, out=out)
    np.add(out, 1, out=out)
    return np.reciprocal(out, out=out)


def _np_rsqrt(x: _Array) -> _Array:
    out = np.sqrt(x, out=...)
    return np.reciprocal(out, out=out)


def _np_softplus(x: _Array) -> _Array:
    return np.logaddexp(x, _zero(x), out=...)


def _ufunc1(ufunc: np.ufunc) -> Callable[[_Array], _Array]:
    return lambda x: ufunc(x, out=...)


def _ufunc2(ufunc: np.ufunc) -> Callable[[_Array, _Array], _Array]:
    """``ufunc(x, y)`` as an array even for 0-d operands; a partial, so the ufunc is called
    straight from C (small ops run this on every step)."""
    return functools.partial(ufunc, out=...)


# ---------------------------------------------------------------------------------------
# op tables


@dataclass(frozen=True, slots=True)
class _Binary:
    op_type: str
    compute: Callable[[_Array, _Array], _Array]
    dtypes: tuple[str, ...]
    large: Any = None  #: numba kernel(x_flat, y_flat, out_flat), or None for numpy only
    bool_out: bool = False
    quiet: bool = True  #: may raise numpy float warnings (overflow, 0/0): silence them


@dataclass(frozen=True, slots=True)
class _Unary:
    op_type: str
    compute: Callable[[_Array], _Array]
    dtypes: tuple[str, ...]
    large: Any = None  #: numba kernel(x_flat, out_flat), or None
    large_dtypes: frozenset[np.dtype] = NUMBA_NP_DTYPES
    quiet: bool = True
    #: numba only beats numpy's SIMD exp with 2+ threads (16M f32, 1 thread: 15.5 vs 10.9 ms)
    min_threads: int = 1


_COMPARABLE = NUMERIC
_EQUATABLE = NUMERIC + ("bool",)


def _comparison(op_type: str, ufunc: np.ufunc, dtypes: tuple[str, ...], large: Any) -> _Binary:
    """A comparison: bool output; never warns (NaN compares false silently)."""
    return _Binary(op_type, _ufunc2(ufunc), dtypes, large, bool_out=True, quiet=False)


_BINARY: tuple[_Binary, ...] = (
    _Binary("Add", _np_add, NUMERIC + COMPLEX, add_kernel),
    _Binary("AddV2", _np_add, NUMERIC, add_kernel),
    _Binary("Sub", _ufunc2(np.subtract), NUMERIC + COMPLEX, sub_kernel),
    _Binary("Mul", _ufunc2(np.multiply), NUMERIC + COMPLEX, mul_kernel),
    _Binary("RealDiv", _ufunc2(np.true_divide), FLOATS + COMPLEX, real_div_kernel),
    _Binary("FloorDiv", _floor_div, NUMERIC),
    _Binary("FloorMod", _floor_mod, NUMERIC),
    _Binary("TruncateDiv", _truncate_div, NUMERIC),
    _Binary("TruncateMod", _truncate_mod, NUMERIC),
    _Binary("DivNoNan", _div_no_nan, FLOATS),
    _Binary("Maximum", _ufunc2(np.maximum), NUMERIC, maximum_kernel, quiet=False),
    _Binary("Minimum", _ufunc2(np.minimum), NUMERIC, minimum_kernel, quiet=False),
    _Binary("Pow", _pow, NUMERIC),
    _Binary("Atan2", _ufunc2(np.arctan2), FLOATS),
    _Binary("SquaredDifference", _np_squared_difference, NUMERIC, squared_difference_kernel),
    _comparison("Equal", np.equal, _EQUATABLE, equal_kernel),
    _comparison("NotEqual", np.not_equal, _EQUATABLE, not_equal_kernel),
    _comparison("Less", np.less, _COMPARABLE, less_kernel),
    _comparison("LessEqual", np.less_equal, _COMPARABLE, less_equal_kernel),
    _comparison("Greater", np.greater, _COMPARABLE, greater_kernel),
    _comparison("GreaterEqual", np.greater_equal, _COMPARABLE, greater_equal_kernel),
    _Binary("LogicalAnd", _ufunc2(np.logical_and), ("bool",), bool_out=True),
    _Binary("LogicalOr", _ufunc2(np.logical_or), ("bool",), bool_out=True),
    _Binary("ReluGrad", _np_relu_grad, FLOATS, relu_grad_kernel),
    _Binary("SigmoidGrad", _np_sigmoid_grad, FLOATS, sigmoid_grad_kernel),
    _Binary("TanhGrad", _np_tanh_grad, FLOATS, tanh_grad_kernel),
)

_SIGNED = FLOATS + SIGNED_INTS
_F32 = frozenset({np.dtype("float32")})

_UNARY: tuple[_Unary, ...] = (
    _Unary("Neg", _ufunc1(np.negative), _SIGNED + COMPLEX, neg_kernel, quiet=False),
    _Unary("Abs", _ufunc1(np.absolute), _SIGNED, abs_kernel, quiet=False),
    _Unary("Relu", _np_relu, _SIGNED, relu_kernel, quiet=False),
    _Unary("Relu6", _np_relu6, _SIGNED, relu6_kernel, quiet=False),
    _Unary("Sigmoid", _np_sigmoid, FLOATS, sigmoid_f32_kernel, _F32, min_threads=2),
    _Unary("Tanh", _ufunc1(np.tanh), FLOATS),
    _Unary("Exp", _ufunc1(np.exp), FLOATS, exp_f32_kernel, _F32, min_threads=2),
    _Unary("Log", _ufunc1(np.log), FLOATS),
    _Unary("Log1p", _ufunc1(np.log1p), FLOATS),
    _Unary("Expm1", _ufunc1(np.expm1), FLOATS),
    _Unary("Sin", _ufunc1(np.sin), FLOATS),
    _Unary("Cos", _ufunc1(np.cos), FLOATS),
    _Unary("Tan", _ufunc1(np.tan), FLOATS),
    _Unary("Asin", _ufunc1(np.arcsin), FLOATS),
    _Unary("Acos", _ufunc1(np.arccos), FLOATS),
    _Unary("Atan", _ufunc1(np.arctan), FLOATS),
    _Unary("Sinh", _ufunc1(np.sinh), FLOATS),
    _Unary("Cosh", _ufunc1(np.cosh), FLOATS),
    _Unary("Asinh", _ufunc1(np.arcsinh), FLOATS),
    _Unary("Acosh", _ufunc1(np.arccosh), FLOATS),
    _Unary("Atanh", _ufunc1(np.arctanh), FLOATS),
    _Unary("Square", _ufunc1(np.square), _SIGNED + COMPLEX, square_kernel),
    _Unary("Sqrt", _ufunc1(np.sqrt), FLOATS, sqrt_kernel),
    _Unary("Rsqrt", _np_rsqrt, FLOATS, rsqrt_kernel),
    _Unary("Reciprocal", _ufunc1(np.reciprocal), FLOATS, reciprocal_kernel),
    _Unary("Sign", _ufunc1(np.sign), _SIGNED, sign_kernel, quiet=False),
    _Unary("Softplus", _np_softplus, FLOATS),
    _Unary("LogicalNot", _ufunc1(np.logical_not), ("bool",)),
    _Unary("Floor", _ufunc1(np.floor), FLOATS),
    _Unary("Ceil", _ufunc1(np.ceil), FLOATS),
    _Unary("Round", _ufunc1(np.rint), _SIGNED),       # half to even, as TF's Round
    _Unary("Rint", _ufunc1(np.rint), FLOATS),
)


# ---------------------------------------------------------------------------------------
# kernels


def _large_binary(spec: _Binary, ctx: Any, x: _Array, y: _Array) -> _Array | None:
    """The numba path for same-shape or scalar-broadcast operands of at least
    PARALLEL_MIN_ELEMENTS (``binary`` asks only then); None if it doesn't apply."""
    if spec.large is None:
        return None
    if not takes_numba_path(x, y):
        return None
    if x.shape == y.shape:
        shape = x.shape
    elif x.size == 1 or y.size == 1:
        shape = np.broadcast_shapes(x.shape, y.shape)
    else:
        return None  # general broadcasting: numpy does it well
    out = empty(ctx, shape, np.bool_ if spec.bool_out else x.dtype)
    use_threads(ctx)
    spec.large(x.reshape(-1), y.reshape(-1), out.reshape(-1))
    return out


def binary(spec: _Binary, ctx: Any, x: _Array, y: _Array) -> _Array:
    """Run one binary op on two arrays (also used by AddN and the optimizer kernels)."""
    if y.dtype != x.dtype:
        y = y.astype(x.dtype)
    if x.size >= PARALLEL_MIN_ELEMENTS or y.size >= PARALLEL_MIN_ELEMENTS:
        out = _large_binary(spec, ctx, x, y)   # small operands (most) never need numba
        if out is not None:
            return out
    try:
        if spec.quiet and x.dtype.kind == "f" and not in_quiet_section():
            return quietly(spec.compute, x, y)
        return spec.compute(x, y)   # in the executor's quiet section, or nothing to silence
    except ValueError:
        if x.shape == y.shape:
            raise
        raise InvalidArgumentError(
            f"Incompatible shapes: {shape_str(x.shape)} vs. {shape_str(y.shape)} ({spec.op_type})"
        ) from None


def _make_binary_kernel(spec: _Binary) -> Callable[[Any, list, dict], list]:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        x, y = inputs
        return [binary(spec, ctx, x, y)]

    kernel.__name__ = kernel.__qualname__ = f"{spec.op_type}_kernel"
    kernel.__doc__ = f"{spec.op_type}(x, y) with numpy broadcasting."
    return kernel


def _make_unary_kernel(spec: _Unary) -> Callable[[Any, list, dict], list]:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        (x,) = inputs
        if (
            x.size >= PARALLEL_MIN_ELEMENTS
            and spec.large is not None
            and x.dtype in spec.large_dtypes
            and takes_numba_path(x)
            and (spec.min_threads == 1 or thread_count(ctx) >= spec.min_threads)
        ):
            out = empty(ctx, x.shape, x.dtype)
            use_threads(ctx)
            spec.large(x.reshape(-1), out.reshape(-1))
            return [out]
        if spec.quiet and x.dtype.kind == "f":
            with quiet_fp():
                return [spec.compute(x)]
        return [spec.compute(x)]

    kernel.__name__ = kernel.__qualname__ = f"{spec.op_type}_kernel"
    kernel.__doc__ = f"{spec.op_type}(x), elementwise."
    return kernel


BINARY_OPS: dict[str, _Binary] = {spec.op_type: spec for spec in _BINARY}
for _spec in _BINARY:
    register(_spec.op_type, dtypes=_spec.dtypes)(_make_binary_kernel(_spec))
for _unary in _UNARY:
    register(_unary.op_type, dtypes=_unary.dtypes)(_make_unary_kernel(_unary))


@register("AddN", dtypes=NUMERIC + COMPLEX)
def add_n(ctx: Any, inputs: list, attrs: dict) -> list:
    """AddN(x0, ..., xn): the sum of same-shaped tensors."""
    first = inputs[0]
    for i, x in enumerate(inputs[1:], start=1):
        if x.shape != first.shape:
            raise InvalidArgumentError(
                f"AddN (node '{attrs['_node_name']}') needs inputs of the same shape: "
                f"inputs[0] is {shape_str(first.shape)}, inputs[{i}] is {shape_str(x.shape)}"
            )
    if len(inputs) == 1:
        return [first]
    out = binary(BINARY_OPS["Add"], ctx, first, inputs[1])
    with quiet_fp():
        for x in inputs[2:]:
            np.add(out, x, out=out, casting="unsafe")
    return [out]


@register("IsNan", dtypes=FLOATS)
def is_nan(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.isnan(inputs[0])]


@register("IsInf", dtypes=FLOATS)
def is_inf(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.isinf(inputs[0])]


@register("IsFinite", dtypes=FLOATS)
def is_finite(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.isfinite(inputs[0])]

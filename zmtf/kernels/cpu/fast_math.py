"""float32 exp, sigmoid and tanh that LLVM vectorizes: pure arithmetic, no libm calls.

numba here has no SVML, so ``np.exp``/``np.tanh`` inside a numba loop are scalar libm calls,
6-20x slower than numpy's SIMD ufuncs. These compute in float64 from a polynomial and a
bit-level 2**k, so a loop over them vectorizes; rounded to float32 they are within one
float32 ulp of numpy's results (tests/kernels/test_fast_math.py checks every class of input:
normals, subnormals, +-0, +-inf, NaN, overflow and underflow). Used by the float32 Exp and
Sigmoid kernels' large path and by fused elementwise loops (runtime.fused_kernels).
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import intrinsic

from zmtf.kernels.cpu._jit import scalar


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
#: the smallest float64 that rounds to float32 inf (FLT_MAX plus half an ulp)
_FLOAT32_OVERFLOW = 3.4028235677973366e38


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
    """1 / (1 + exp(-v)) in float64 (the caller rounds it to float32: within one ulp of the
    true value, where numpy's float32 passes are within three); 0 where exp(-v) overflows
    float32 (v < -88.72), as those passes give, not the subnormal the true value is."""
    e = exp_for_float32(-v)
    return 0.0 if e >= _FLOAT32_OVERFLOW else 1.0 / (1.0 + e)


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

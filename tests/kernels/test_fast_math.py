"""kernels.cpu.elementwise: the vectorizable float32 exp, sigmoid and tanh that fused loops
and the large Exp/Sigmoid kernels use, against numpy's float32 results in ulps, over a
sample of every float32 bit pattern (normals, subnormals, +-0, +-inf, NaNs) and the edges."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from zmtf.kernels.cpu.elementwise import exp_for_float32, sigmoid_for_float32, tanh_for_float32


@njit(error_model="numpy")
def _apply(which, x, out):  # type: ignore[no-untyped-def]
    for i in range(x.size):
        v = x[i]
        if which == 0:
            out[i] = np.float32(exp_for_float32(v))
        elif which == 1:
            out[i] = np.float32(sigmoid_for_float32(v))
        else:
            out[i] = np.float32(tanh_for_float32(v))


def _numpy_sigmoid(x):
    """The Sigmoid kernel's numpy passes (kernels.cpu.elementwise._np_sigmoid)."""
    with np.errstate(all="ignore"):
        return np.reciprocal(np.add(np.exp(np.negative(x)), np.float32(1)))


def _ulps(a, b):
    """Distance in float32 ulps (bit patterns mapped to a monotonic integer line); NaN
    against NaN is 0, NaN against a number is huge."""
    def line(v):
        bits = v.view(np.int32).astype(np.int64)
        return np.where(bits < 0, -(bits & 0x7FFFFFFF), bits)
    d = np.abs(line(a) - line(b))
    d[np.isnan(a) & np.isnan(b)] = 0
    return d


def _inputs():
    bits = np.arange(0, 1 << 32, 4093, dtype=np.uint64).astype(np.uint32)   # every sign/exponent
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.17549435e-38,
                      88.72283, 88.72284, -87.33654, -103.97208, -103.97209, -88.72283,
                      -88.72284, 3.4028235e38, -3.4028235e38, 0.004, -0.004, 1e-4, 20.0, -20.0,
                      9.0, -9.0], np.float32)
    return np.concatenate([bits.view(np.float32), edges])


@pytest.mark.parametrize("which, reference, bound", [
    (0, np.exp, 2), (1, _numpy_sigmoid, 3), (2, np.tanh, 1)], ids=["exp", "sigmoid", "tanh"])
def test_within_a_few_ulps_of_numpy_over_the_float32_range(which, reference, bound):
    x = _inputs()
    got = np.empty_like(x)
    _apply(which, x, got)
    with np.errstate(all="ignore"):
        want = reference(x).astype(np.float32)
    worst = _ulps(got, want)
    # where numpy's exp(-x) overflows, its sigmoid passes give 0 and this the true subnormal
    tiny = (x < -88.72283) & (x > -104) if which == 1 else np.zeros(x.shape, bool)
    assert np.all(np.abs(got[tiny]) < np.finfo(np.float32).tiny) and not np.any(want[tiny])
    worst[tiny] = 0
    assert worst.max() <= bound, (x[worst.argmax()], got[worst.argmax()], want[worst.argmax()])
    # the special values exactly as numpy gives them: NaN, the infinities, signed zeros,
    # overflow to inf and underflow to 0
    special = (~np.isfinite(x) | (x == 0) | (np.abs(want) == np.inf) | (want == 0)) & ~tiny
    np.testing.assert_array_equal(got[special], want[special])
    signed = special & ~np.isnan(want)   # a NaN's sign bit is not part of its value
    np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(want[signed]))

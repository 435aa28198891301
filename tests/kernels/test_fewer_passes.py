"""Relu, ReluGrad, SigmoidGrad and TanhGrad on mid-sized inputs (2K elements up to numba's
parallel threshold) run the one-pass numba loop on one thread: numpy's values, special
values included."""

from __future__ import annotations

import numpy as np
import pytest

from zmtf.kernels.cpu import elementwise
from zmtf.kernels.cpu._jit import PARALLEL_MIN_ELEMENTS
from zmtf.kernels.registry import lookup

SIZES = [2048, 5000, PARALLEL_MIN_ELEMENTS - 1]
rng = np.random.default_rng(3)


def _run(op_type, dtype, *inputs):
    kernel = lookup(op_type, "CPU", dtype)
    return kernel(None, list(inputs), {"_node_name": op_type})[0]


def _specials(x):
    x[:4] = [-np.inf, np.inf, np.nan, -0.0]
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", SIZES)
def test_relu_matches_numpy_and_tf_on_special_values(dtype, size):
    x = _specials(rng.standard_normal(size).astype(dtype))
    got = _run("Relu", dtype, x)
    assert got.dtype == x.dtype
    np.testing.assert_array_equal(got[4:], np.maximum(x[4:], 0))
    assert got[0] == 0 and got[1] == np.inf and np.isnan(got[2])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op_type, reference", [
    ("ReluGrad", lambda a, b: a * (b > 0)),
    ("SigmoidGrad", lambda y, dy: dy * y * (1 - y)),
    ("TanhGrad", lambda y, dy: dy * (1 - y * y)),
])
def test_gradient_helpers_match_their_formulas(dtype, size, op_type, reference):
    a = rng.standard_normal(size).astype(dtype)
    b = rng.standard_normal(size).astype(dtype)
    got = _run(op_type, dtype, a, b)
    assert got.dtype == a.dtype and got.shape == a.shape
    np.testing.assert_allclose(got, reference(a, b).astype(dtype), rtol=1e-6, atol=1e-7)


def test_mid_sizes_take_the_numba_loop():
    x = rng.standard_normal(4096).astype(np.float32)
    _run("ReluGrad", "float32", x, x)
    assert elementwise.relu_grad_kernel.signatures
    _run("Relu", "float32", x)
    assert elementwise.relu_kernel.signatures

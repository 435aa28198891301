"""Large inputs: the parallel numba path, compared with numpy.

Every numba kernel is exercised once, on one dtype each (each new op x dtype costs a
0.3-0.8 s compile, cached on disk afterwards); the dtype matrix is covered on the numpy
path in test_cpu_kernels.py. Each test also checks the numba kernel really compiled, so a
silent fallback to numpy cannot make it pass.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

from zmtf.kernels.cpu import _jit, elementwise, reduce

N = _jit.PARALLEL_MIN_ELEMENTS + 17  # an odd tail after the SIMD lanes and blocks


def big(dtype: str, seed: int = 0, n: int = N) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        data = (rng.standard_normal(n) * 4).astype(dtype)
        data[::1009] = 0
        return data
    return rng.integers(-50, 50, n).astype(dtype)


def with_nans(x: np.ndarray) -> np.ndarray:
    x = x.copy()
    x[5::7919] = np.nan
    return x


def assert_compiled(kernel) -> None:
    assert kernel.signatures, f"{kernel.__name__} never ran: the numba path was not taken"


BINARY_LARGE = [
    ("Add", "float32"),
    ("Sub", "int64"),
    ("Mul", "float64"),
    ("RealDiv", "float32"),
    ("Maximum", "float32"),
    ("Minimum", "float64"),
    ("SquaredDifference", "int32"),
    ("Equal", "int32"),
    ("NotEqual", "float64"),
    ("Less", "float32"),
    ("LessEqual", "int64"),
    ("Greater", "float32"),
    ("GreaterEqual", "int32"),
]
BINARY_NUMPY = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "RealDiv": np.true_divide,
    "Maximum": np.maximum, "Minimum": np.minimum,
    "SquaredDifference": lambda x, y: np.square(np.subtract(x, y)),
    "Equal": np.equal, "NotEqual": np.not_equal, "Less": np.less, "LessEqual": np.less_equal,
    "Greater": np.greater, "GreaterEqual": np.greater_equal,
}


@pytest.mark.parametrize("op_type,dtype", BINARY_LARGE)
def test_binary_same_shape_and_scalar_broadcast(run, op_type, dtype):
    x, y = big(dtype, 0), big(dtype, 1)
    if dtype.startswith("float"):
        x = with_nans(x)
    scalar = np.asarray(3, dtype)
    reference = BINARY_NUMPY[op_type]
    cases = [(x, y), (x, scalar), (scalar, y)]
    with np.errstate(all="ignore"):
        for left, right in cases:
            (out,) = run(op_type, [left, right])
            np.testing.assert_array_equal(out, reference(left, right))
            assert out.dtype == reference(left, right).dtype
    assert_compiled(elementwise.BINARY_OPS[op_type].large)


@pytest.mark.parametrize("op_type", ["ReluGrad", "SigmoidGrad", "TanhGrad"])
def test_activation_gradients_large(run, op_type):
    a, b = big("float32", 0) / 4, big("float32", 1)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    expected = {
        "ReluGrad": a64 * (b64 > 0),
        "SigmoidGrad": b64 * a64 * (1 - a64),
        "TanhGrad": b64 * (1 - a64 * a64),
    }[op_type]
    (out,) = run(op_type, [a, b])
    np.testing.assert_allclose(out, expected.astype(np.float32), rtol=1e-6, atol=1e-6)
    assert_compiled(elementwise.BINARY_OPS[op_type].large)


def test_shapes_numba_does_not_take_fall_back_to_numpy(run):
    column, row = big("float32", 0, 1024).reshape(-1, 1), big("float32", 1, 1030)
    (out,) = run("Add", [column, row])  # general broadcasting
    np.testing.assert_array_equal(out, column + row)
    strided = big("float32", 2, 2 * N)[::2]  # not contiguous
    (out,) = run("Mul", [strided, strided])
    np.testing.assert_array_equal(out, strided * strided)


def test_read_only_inputs_take_the_numba_path(run):
    x = big("float32", 3)
    x.flags.writeable = False
    (out,) = run("Add", [x, x])
    np.testing.assert_array_equal(out, x + x)


UNARY_LARGE = [
    ("Neg", "int32", np.negative),
    ("Abs", "float32", np.abs),
    ("Relu", "float32", lambda x: np.maximum(x, np.float32(0))),
    ("Relu6", "float64", lambda x: np.minimum(np.maximum(x, 0.0), 6.0)),
    ("Square", "int64", np.square),
    ("Sqrt", "float32", np.sqrt),
    ("Rsqrt", "float64", lambda x: 1 / np.sqrt(x)),
    ("Reciprocal", "float32", lambda x: (1 / x.astype(np.float64)).astype(np.float32)),
    ("Sign", "float32", np.sign),
]


@pytest.mark.parametrize("op_type,dtype,reference", UNARY_LARGE)
def test_unary_large(run, op_type, dtype, reference):
    x = big(dtype)
    if dtype.startswith("float"):
        x = with_nans(x)
    if op_type in ("Sqrt", "Rsqrt"):
        x = np.abs(x)
    (out,) = run(op_type, [x])
    with np.errstate(all="ignore"):
        expected = reference(x)
    assert out.dtype == x.dtype
    np.testing.assert_allclose(out, expected, rtol=1e-7 if dtype == "float32" else 0)
    assert_compiled(dict((s.op_type, s.large) for s in elementwise._UNARY)[op_type])


def _ulp_error(actual: np.ndarray, exact: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        exact32 = exact.astype(np.float32)
    finite = np.isfinite(exact32) & (np.abs(exact32) > np.finfo(np.float32).tiny)
    spacing = np.spacing(np.abs(exact32[finite])).astype(np.float64)
    return np.abs(actual[finite].astype(np.float64) - exact[finite]) / spacing


def test_exp_float32_is_accurate_across_its_range(run):
    x = np.linspace(-104, 89, N, dtype=np.float32)
    x[:6] = [np.nan, np.inf, -np.inf, 0.0, 88.8, -200.0]
    (out,) = run("Exp", [x])
    with np.errstate(all="ignore"):
        exact = np.exp(x.astype(np.float64))
    assert _ulp_error(out, exact).max() < 1.0
    assert np.isnan(out[0]) and out[1] == np.inf and out[2] == 0 and out[3] == 1
    assert out[4] == np.inf and out[5] == 0
    assert_compiled(elementwise.exp_f32_kernel)


def test_sigmoid_float32_large(run):
    x = np.linspace(-120, 120, N, dtype=np.float32)
    (out,) = run("Sigmoid", [x])
    exact = 1 / (1 + np.exp(-x.astype(np.float64)))
    np.testing.assert_allclose(out, exact, rtol=2e-7, atol=1e-45)
    assert_compiled(elementwise.sigmoid_f32_kernel)


def test_exp_float32_on_one_thread_uses_numpy(make_ctx, run_in):
    x = big("float32")
    (out,) = run_in(make_ctx(intra_op_threads=1), "Exp", [x])
    np.testing.assert_array_equal(out, np.exp(x))  # bit-identical: numpy's exp, not ours


def test_exp_float64_stays_on_numpy(run):
    x = big("float64")
    (out,) = run("Exp", [x])
    np.testing.assert_array_equal(out, np.exp(x))


def test_add_n_large(run):
    xs = [big("float32", i) for i in range(3)]
    (out,) = run("AddN", xs)
    np.testing.assert_array_equal(out, xs[0] + xs[1] + xs[2])


# ---------------------------------------------------------------------------------------
# reductions


def test_sum_all_float32_is_as_accurate_as_numpy(run):
    x = big("float32")
    (out,) = run("Sum", [x], axis=None)
    exact = x.astype(np.float64).sum()
    assert out.dtype == np.float32 and out.shape == ()
    scale = np.abs(x).astype(np.float64).sum() * np.finfo(np.float32).eps
    assert abs(float(out) - exact) <= max(4 * abs(float(np.sum(x)) - exact), scale * 1e-3)
    (mean,) = run("Mean", [x.reshape(2, -1) if N % 2 == 0 else x], axis=None, keep_dims=True)
    np.testing.assert_allclose(mean.reshape(-1), [exact / N], rtol=1e-6)
    assert_compiled(reduce.sum_blocks_kernel)


def test_sum_int32_wraps_like_numpy_int32(run):
    x = np.full(N, 2**20, np.int32)
    (out,) = run("Sum", [x], axis=None)
    assert out.dtype == np.int32 and out == x.sum(dtype=np.int32)


def test_sum_over_trailing_axes(run):
    x = big("float64", n=64 * (N // 64 + 1)).reshape(4, 16, -1)
    (out,) = run("Sum", [x], axis=(1, 2), keep_dims=True)
    np.testing.assert_allclose(out, x.sum(axis=(1, 2), keepdims=True), rtol=1e-12)
    (out,) = run("Sum", [x], axis=(0,))  # leading axis: numpy path
    np.testing.assert_allclose(out, x.sum(axis=0), rtol=1e-12)
    assert_compiled(reduce.sum_rows_kernel)


@pytest.mark.parametrize("nan", [False, True])
def test_max_all_float32(run, nan):
    x = with_nans(big("float32")) if nan else big("float32")
    (out,) = run("Max", [x], axis=None)
    np.testing.assert_array_equal(out, np.max(x))
    assert_compiled(reduce.max_blocks_kernel)


def test_min_rows_int64(run):
    x = big("int64", n=8 * (N // 8 + 1)).reshape(8, -1)
    (out,) = run("Min", [x], axis=-1)
    np.testing.assert_array_equal(out, x.min(axis=-1))
    assert_compiled(reduce.min_rows_kernel)


# ---------------------------------------------------------------------------------------
# threads


def test_intra_op_threads_sets_numba_threads_for_the_calling_thread(make_ctx, run_in):
    previous = numba.get_num_threads()
    try:
        x = big("float32")
        (out,) = run_in(make_ctx(intra_op_threads=1), "Relu", [x])
        assert numba.get_num_threads() == 1
        np.testing.assert_array_equal(out, np.maximum(x, np.float32(0)))
        run_in(make_ctx(intra_op_threads=64), "Relu", [x])  # clamped to NUMBA_NUM_THREADS
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    finally:
        numba.set_num_threads(previous)


def test_relu_of_minus_infinity_is_zero_on_the_numba_path(run):
    x = big("float32")
    x[:3] = [-np.inf, np.inf, np.nan]
    (out,) = run("Relu", [x])
    assert out[0] == 0 and out[1] == np.inf and np.isnan(out[2])
    np.testing.assert_array_equal(out[3:], np.maximum(x[3:], np.float32(0)))

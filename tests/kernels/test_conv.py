"""Convolution and pooling kernels against naive loops over output pixels.

The references below share no code with zmtf: each computes TF's documented SAME/VALID
geometry itself and visits every (output pixel, window tap) pair explicitly.
"""

from __future__ import annotations

import numpy as np
import pytest

import zmtf.kernels.cpu.conv as conv_kernels
import zmtf.kernels.cpu.pool as pool_kernels
from zmtf.framework.errors import InvalidArgumentError, UnimplementedError


# ---- references ---------------------------------------------------------------------------
def geometry(size: int, window: int, stride: int, dilation: int, padding: str) -> tuple[int, int]:
    """(output size, padding before) as TF documents them."""
    extent = (window - 1) * dilation + 1
    if padding == "SAME":
        out = -(-size // stride)
        return out, max((out - 1) * stride + extent - size, 0) // 2
    return -(-(size - extent + 1) // stride), 0


class Windows:
    """Every (batch, out_row, out_col, tap_row, tap_col) -> input (row, col) or None (padding)."""

    def __init__(self, in_shape, window, strides, padding, dilations=(1, 1)):
        self.n, self.h, self.w = in_shape[:3]
        self.window, self.strides, self.dilations = window, strides, dilations
        self.out_h, self.top = geometry(self.h, window[0], strides[0], dilations[0], padding)
        self.out_w, self.left = geometry(self.w, window[1], strides[1], dilations[1], padding)

    def taps(self, i: int, j: int):
        for a in range(self.window[0]):
            for b in range(self.window[1]):
                r = i * self.strides[0] + a * self.dilations[0] - self.top
                q = j * self.strides[1] + b * self.dilations[1] - self.left
                yield a, b, ((r, q) if 0 <= r < self.h and 0 <= q < self.w else None)

    def pixels(self):
        for n in range(self.n):
            for i in range(self.out_h):
                for j in range(self.out_w):
                    yield n, i, j


def reference_conv(x, w, strides, padding, dilations=(1, 1)):
    win = Windows(x.shape, w.shape[:2], strides, padding, dilations)
    out = np.zeros((x.shape[0], win.out_h, win.out_w, w.shape[3]))
    for n, i, j in win.pixels():
        for a, b, at in win.taps(i, j):
            if at:
                out[n, i, j] += x[n, at[0], at[1]].astype(np.float64) @ w[a, b].astype(np.float64)
    return out


def reference_conv_grads(x, w, dy, strides, padding, dilations=(1, 1)):
    """(d input, d filter) of sum(conv(x, w) * dy)."""
    win = Windows(x.shape, w.shape[:2], strides, padding, dilations)
    dx, dw = np.zeros(x.shape), np.zeros(w.shape)
    for n, i, j in win.pixels():
        for a, b, at in win.taps(i, j):
            if at:
                dx[n, at[0], at[1]] += w[a, b] @ dy[n, i, j]
                dw[a, b] += np.outer(x[n, at[0], at[1]], dy[n, i, j])
    return dx, dw


def reference_pools(x, window, strides, padding):
    """(max, mean over real elements, index of the first maximum's input position)."""
    win = Windows(x.shape, window, strides, padding)
    shape = (x.shape[0], win.out_h, win.out_w, x.shape[3])
    biggest, mean, winner = np.zeros(shape), np.zeros(shape), np.zeros(shape + (2,), int)
    for n, i, j in win.pixels():
        inside = [at for _, _, at in win.taps(i, j) if at]
        values = np.array([x[n, r, q] for r, q in inside])  # [taps, channels]
        biggest[n, i, j] = values.max(axis=0)
        mean[n, i, j] = values.mean(axis=0)
        winner[n, i, j] = np.array(inside)[values.argmax(axis=0)]  # argmax: first on ties
    return biggest, mean, winner


# ---- cases --------------------------------------------------------------------------------
# (input shape, filter [h, w, out_c], strides, padding, dilations)
CONV_CASES = [
    ((1, 5, 5, 1), (3, 3, 1), (1, 1), "VALID", (1, 1)),
    ((2, 7, 6, 3), (3, 2, 4), (2, 2), "SAME", (1, 1)),          # odd sizes, stride 2
    ((1, 7, 7, 2), (4, 4, 3), (1, 1), "SAME", (1, 1)),          # total padding 3: 1 before, 2 after
    ((2, 8, 5, 2), (2, 2, 3), (2, 2), "SAME", (1, 1)),          # no padding needed under SAME
    ((3, 6, 6, 4), (1, 1, 5), (1, 1), "VALID", (1, 1)),         # 1x1 filter
    ((2, 9, 7, 3), (1, 1, 2), (2, 3), "SAME", (1, 1)),          # 1x1 filter, uneven strides
    ((2, 10, 9, 2), (3, 3, 2), (3, 2), "VALID", (1, 1)),        # trailing rows never read
    ((1, 2, 3, 1), (5, 5, 2), (1, 1), "SAME", (1, 1)),          # filter bigger than the input
    ((1, 9, 9, 2), (3, 3, 2), (1, 1), "SAME", (2, 2)),          # dilated
    ((2, 8, 7, 2), (2, 3, 3), (2, 1), "VALID", (1, 2)),         # dilated and strided
    # one input channel: the columns are stored transposed, a row per filter tap (conv.py)
    ((3, 9, 8, 1), (3, 3, 4), (2, 1), "SAME", (1, 1)),
    ((2, 9, 9, 1), (3, 2, 3), (1, 2), "VALID", (2, 1)),
    ((2, 6, 7, 1), (1, 1, 2), (1, 1), "SAME", (1, 1)),          # depth 1
]
CONV_IDS = [f"{s}-{f}-s{st}-{p}-d{d}" for s, f, st, p, d in CONV_CASES]


def conv_inputs(case, dtype, seed=0):
    in_shape, (f_h, f_w, out_c), _, _, _ = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(in_shape).astype(dtype)
    w = rng.standard_normal((f_h, f_w, in_shape[3], out_c)).astype(dtype)
    return x, w


def conv_attrs(case):
    _, _, strides, padding, dilations = case
    return dict(strides=[1, *strides, 1], padding=padding, dilations=[1, *dilations, 1])


TOLERANCE = {"float16": 2e-2, "float32": 1e-4, "float64": 1e-11}


@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv2d_matches_reference(run, case, dtype):
    x, w = conv_inputs(case, dtype)
    (y,) = run("Conv2D", [x, w], **conv_attrs(case))
    expected = reference_conv(x, w, case[2], case[3], case[4])
    assert y.dtype == np.dtype(dtype) and y.shape == expected.shape
    np.testing.assert_allclose(y, expected, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.mark.parametrize("case", CONV_CASES, ids=CONV_IDS)
def test_conv2d_backprops_match_reference(run, case):
    x, w = conv_inputs(case, "float64")
    expected_y = reference_conv(x, w, case[2], case[3], case[4])
    dy = np.random.default_rng(1).standard_normal(expected_y.shape)
    dx, dw = reference_conv_grads(x, w, dy, case[2], case[3], case[4])
    attrs = conv_attrs(case)
    (got_dx,) = run("Conv2DBackpropInput", [np.array(x.shape, np.int32), w, dy], **attrs)
    (got_dw,) = run("Conv2DBackpropFilter", [x, np.array(w.shape, np.int32), dy], **attrs)
    np.testing.assert_allclose(got_dx, dx, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(got_dw, dw, rtol=1e-11, atol=1e-11)


def test_float16_is_computed_in_float32_and_returned_as_float16(run):
    case = CONV_CASES[1]
    x, w = conv_inputs(case, "float16")
    (y,) = run("Conv2D", [x, w], **conv_attrs(case))
    assert y.dtype == np.float16
    np.testing.assert_allclose(y, reference_conv(x, w, case[2], case[3]), rtol=2e-2, atol=2e-2)


def test_batches_split_into_several_column_chunks_give_the_same_result(run, monkeypatch):
    case = ((5, 6, 5, 3), (3, 3, 2), (1, 1), "SAME", (1, 1))
    x, w = conv_inputs(case, "float64")
    dy = np.random.default_rng(2).standard_normal((5, 6, 5, 2))
    whole = [run("Conv2D", [x, w], **conv_attrs(case))[0],
             run("Conv2DBackpropInput", [np.array(x.shape), w, dy], **conv_attrs(case))[0],
             run("Conv2DBackpropFilter", [x, np.array(w.shape), dy], **conv_attrs(case))[0]]
    monkeypatch.setattr(conv_kernels, "_COLUMN_BUDGET", 300)  # 270 elements per image: 1 per chunk
    chunked = [run("Conv2D", [x, w], **conv_attrs(case))[0],
               run("Conv2DBackpropInput", [np.array(x.shape), w, dy], **conv_attrs(case))[0],
               run("Conv2DBackpropFilter", [x, np.array(w.shape), dy], **conv_attrs(case))[0]]
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(whole[0], reference_conv(x, w, (1, 1), "SAME"), rtol=1e-11)


def test_one_channel_columns_in_several_chunks_give_the_same_result(run, monkeypatch):
    case = ((5, 7, 6, 1), (3, 3, 3), (1, 2), "SAME", (1, 1))
    x, w = conv_inputs(case, "float32")
    dy = np.random.default_rng(5).standard_normal((5, 7, 3, 3)).astype(np.float32)
    ops = [("Conv2D", [x, w]), ("Conv2DBackpropFilter", [x, np.array(w.shape), dy]),
           ("Conv2DBackpropInput", [np.array(x.shape), w, dy])]
    whole = [run(op, inputs, **conv_attrs(case))[0] for op, inputs in ops]
    monkeypatch.setattr(conv_kernels, "_COLUMN_BUDGET", 100)  # 9 x 21 per image: 1 per chunk
    chunked = [run(op, inputs, **conv_attrs(case))[0] for op, inputs in ops]
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(whole[0], reference_conv(x, w, (1, 2), "SAME"), rtol=1e-4,
                               atol=1e-4)


def test_conv2d_errors_name_the_problem(run):
    x, w = np.zeros((1, 4, 4, 3)), np.zeros((2, 2, 2, 1))
    with pytest.raises(InvalidArgumentError, match=r"filter's input depth: 3 vs 2"):
        run("Conv2D", [x, w], strides=[1, 1, 1, 1], padding="VALID")
    with pytest.raises(InvalidArgumentError, match=r"Computed output size would be negative"):
        run("Conv2D", [np.zeros((1, 2, 2, 2)), np.zeros((5, 5, 2, 1))],
            strides=[1, 1, 1, 1], padding="VALID")
    with pytest.raises(InvalidArgumentError, match="only support data_format NHWC"):
        run("Conv2D", [x, np.zeros((2, 2, 3, 1))], strides=[1, 1, 1, 1], padding="SAME",
            data_format="NCHW")
    with pytest.raises(UnimplementedError, match="batch and depth"):
        run("Conv2D", [x, np.zeros((2, 2, 3, 1))], strides=[2, 1, 1, 1], padding="SAME")
    with pytest.raises(InvalidArgumentError, match=r"out_backprop must have shape \[1,3,3,1\]"):
        run("Conv2DBackpropInput", [np.array([1, 4, 4, 3]), np.zeros((2, 2, 3, 1)),
                                    np.zeros((1, 4, 4, 1))], strides=[1, 1, 1, 1], padding="VALID")


# ---- pooling ------------------------------------------------------------------------------
# (input shape, window, strides, padding)
POOL_CASES = [
    ((1, 4, 4, 1), (2, 2), (2, 2), "VALID"),
    ((2, 5, 7, 3), (3, 3), (2, 2), "SAME"),      # odd sizes: windows hang over the edge
    ((1, 6, 5, 2), (2, 3), (1, 2), "SAME"),
    ((2, 7, 7, 2), (3, 2), (3, 1), "VALID"),
    ((1, 3, 3, 1), (1, 1), (2, 2), "SAME"),
    # windows that tile the input (stride = window, no padding): pool.py's _tiled_* kernels
    ((2, 7, 9, 3), (2, 2), (2, 2), "VALID"),    # a last row and column no window covers
    ((1, 6, 9, 2), (3, 3), (3, 3), "SAME"),     # SAME that needs no padding
    ((2, 6, 4, 17), (2, 1), (2, 1), "VALID"),
]
POOL_IDS = [f"{s}-k{k}-s{st}-{p}" for s, k, st, p in POOL_CASES]


def pool_attrs(case):
    _, window, strides, padding = case
    return dict(ksize=[1, *window, 1], strides=[1, *strides, 1], padding=padding)


@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_pools_match_reference(run, case, dtype):
    x = np.random.default_rng(3).standard_normal(case[0]).astype(dtype)
    biggest, mean, _ = reference_pools(x, *case[1:])
    (got_max,) = run("MaxPool", [x], **pool_attrs(case))
    (got_mean,) = run("AvgPool", [x], **pool_attrs(case))
    assert got_max.dtype == got_mean.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got_max, biggest.astype(dtype))
    np.testing.assert_allclose(got_mean, mean, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


def scatter(grad, winner, in_shape):
    dx = np.zeros(in_shape)
    for n, i, j, c in np.ndindex(grad.shape):
        r, q = winner[n, i, j, c]
        dx[n, r, q, c] += grad[n, i, j, c]
    return dx


@pytest.mark.parametrize("case", POOL_CASES, ids=POOL_IDS)
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_pool_gradients_match_reference(run, case, dtype):
    rng = np.random.default_rng(4)
    x = np.round(rng.standard_normal(case[0])).astype(dtype)  # few distinct values: many ties
    biggest, mean, winner = reference_pools(x, *case[1:])
    grad = rng.standard_normal(biggest.shape).astype(dtype)
    tolerance = TOLERANCE[dtype]
    (dx_max,) = run("MaxPoolGrad", [x, biggest.astype(dtype), grad], **pool_attrs(case))
    assert dx_max.dtype == np.dtype(dtype)
    np.testing.assert_allclose(dx_max, scatter(grad, winner, x.shape), rtol=tolerance,
                               atol=tolerance)
    (dx_mean,) = run("AvgPoolGrad", [np.array(x.shape, np.int32), grad], **pool_attrs(case))
    assert dx_mean.dtype == np.dtype(dtype)
    # AvgPool is linear: sum(AvgPool(x) * grad) == sum(x * dx) for every x
    probe = rng.standard_normal(x.shape)
    np.testing.assert_allclose(np.sum(reference_pools(probe, *case[1:])[1] * grad),
                               np.sum(probe * dx_mean), rtol=tolerance)


def test_max_pool_gradient_goes_to_the_first_of_tied_maxima(run):
    x = np.array([[1.0, 5.0, 5.0],
                  [5.0, 2.0, 0.0],
                  [3.0, 5.0, 4.0]]).reshape(1, 3, 3, 1)
    (dx,) = run("MaxPoolGrad", [x, np.array([[[[5.0]]]]), np.array([[[[7.0]]]])],
                ksize=[1, 3, 3, 1], strides=[1, 1, 1, 1], padding="VALID")
    expected = np.zeros((3, 3))
    expected[0, 1] = 7.0  # the first 5 in row-major scan order, not (0, 2), (1, 0) or (2, 1)
    np.testing.assert_array_equal(dx[0, :, :, 0], expected)


def test_max_pool_never_picks_padding_even_over_minus_infinity(run):
    x = np.full((1, 2, 2, 1), -np.inf)
    x[0, 1, 1, 0] = -np.inf
    attrs = dict(ksize=[1, 3, 3, 1], strides=[1, 2, 2, 1], padding="SAME")
    (y,) = run("MaxPool", [x], **attrs)
    (dx,) = run("MaxPoolGrad", [x, y, np.ones_like(y)], **attrs)
    assert y.shape == (1, 1, 1, 1) and y[0, 0, 0, 0] == -np.inf
    assert dx.sum() == 1.0 and dx[0, 0, 0, 0] == 1.0  # the first real element, not lost in padding


def test_avg_pool_with_same_padding_divides_by_the_real_elements_only(run):
    x = np.arange(1.0, 5.0).reshape(1, 2, 2, 1)
    (y,) = run("AvgPool", [x], ksize=[1, 2, 2, 1], strides=[1, 1, 1, 1], padding="SAME")
    # windows at (0,0), (0,1), (1,0), (1,1) cover 4, 2, 2 and 1 real elements
    np.testing.assert_allclose(y[0, :, :, 0], [[2.5, 3.0], [3.5, 4.0]])


@pytest.mark.parametrize("shape, window", [((2, 6, 8, 5), (2, 2)), ((2, 7, 7, 3), (3, 2))])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_max_pool_nan_and_ties_match_in_tiled_and_general_kernels(run, shape, window, dtype):
    """A NaN is its window's maximum (np.maximum's rule) in the forward; in the gradient the
    first strictly greater element wins, so a NaN wins only as its window's first real one.
    The tiling kernels agree with the general ones, run here with SAME's padding off."""
    rng = np.random.default_rng(6)
    x = np.round(rng.standard_normal(shape)).astype(dtype)
    x[rng.random(shape) < 0.1] = np.nan
    attrs = pool_attrs((shape, window, window, "VALID"))
    (y,) = run("MaxPool", [x], **attrs)
    grad = rng.standard_normal(y.shape).astype(dtype)
    (dx,) = run("MaxPoolGrad", [x, y, grad], **attrs)
    out_h, out_w = y.shape[1:3]
    general_y = np.empty_like(y)
    pool_kernels._max_pool_kernel(x, general_y, *window, *window, 0, 0)
    general_dx = np.zeros_like(x)
    pool_kernels._max_pool_grad_kernel(x, grad, general_dx, *window, *window, 0, 0)
    np.testing.assert_array_equal(y, general_y)
    np.testing.assert_array_equal(dx, general_dx)
    for n, i, j, c in np.ndindex(y.shape):   # the forward against the definition
        values = x[n, i * window[0]:(i + 1) * window[0], j * window[1]:(j + 1) * window[1], c]
        if np.isnan(values).any():
            assert np.isnan(y[n, i, j, c])
        else:
            assert y[n, i, j, c] == values.max()
    assert not dx[:, out_h * window[0]:].any() and not dx[:, :, out_w * window[1]:].any()

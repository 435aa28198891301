"""conv3d / conv3d_transpose / max_pool3d / avg_pool3d, max_pool_with_argmax, and the
rank-generic wrappers (convolution, pool, max_pool1d, avg_pool1d, conv1d_transpose):
values against naive numpy loops, static shapes, errors, gradients by finite differences."""

import itertools

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing.gradient_checker import compute_gradient_error as _gradient_error
from zmtf.testing import run_fetches as run

RNG = np.random.default_rng(11)


def compute_gradient_error(*args):
    with tf.Session():
        return _gradient_error(*args)


def _same_pads(size, window, stride):
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return out, total // 2


def _windows(x, window, strides, padding, fill):
    """Yield (output index, window values [*window, C]) of a channels-last x with batch."""
    spatial = x.shape[1:-1]
    outs, pads = [], []
    for n, w, s in zip(spatial, window, strides):
        if padding == "SAME":
            out, before = _same_pads(n, w, s)
        else:
            out, before = (n - w) // s + 1, 0
        outs.append(out)
        pads.append(before)
    padded = np.pad(x, [(0, 0)] + [(p, max(0, (o - 1) * s + w - n - p)) for p, o, s, w, n in
                                   zip(pads, outs, strides, window, spatial)] + [(0, 0)],
                    constant_values=fill)
    for index in itertools.product(*(range(o) for o in outs)):
        sl = tuple(slice(i * s, i * s + w) for i, s, w in zip(index, strides, window))
        yield index, padded[(slice(None), *sl, slice(None))], outs


def _naive_conv3d(x, w, strides, padding):
    results = {}
    outs = None
    for index, win, outs in _windows(x, w.shape[:3], strides, padding, 0.0):
        results[index] = np.einsum("bdhwc,dhwco->bo", win, w)
    out = np.zeros((x.shape[0], *outs, w.shape[-1]))
    for index, value in results.items():
        out[(slice(None), *index)] = value
    return out


@pytest.mark.parametrize("padding,strides", [("SAME", [1, 1, 1]), ("VALID", [2, 1, 2]),
                                             ("SAME", [1, 2, 2])])
def test_conv3d_matches_naive_loops(padding, strides):
    x = RNG.standard_normal((2, 5, 4, 6, 3))
    w = RNG.standard_normal((3, 2, 3, 3, 4))
    y = tf.nn.conv3d(x, w, [1, *strides, 1], padding)
    expected = _naive_conv3d(x, w, strides, padding)
    assert y.shape.as_list() == list(expected.shape) and y.op.type == "Conv3D"
    np.testing.assert_allclose(run(y), expected, rtol=1e-10, atol=1e-10)


def _naive_pool(x, window, strides, padding, kind):
    outs, values = None, {}
    for index, win, outs in _windows(x, window, strides, padding, np.nan):
        flat = win.reshape(win.shape[0], -1, win.shape[-1])
        values[index] = np.nanmax(flat, 1) if kind == "max" else np.nanmean(flat, 1)
    out = np.zeros((x.shape[0], *outs, x.shape[-1]))
    for index, value in values.items():
        out[(slice(None), *index)] = value
    return out


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_pool3d_matches_naive_loops_padding_not_counted(kind, padding):
    x = RNG.standard_normal((2, 5, 4, 3, 2))
    fn = tf.nn.max_pool3d if kind == "max" else tf.nn.avg_pool3d
    y = fn(x, [1, 2, 3, 2, 1], [1, 2, 1, 2, 1], padding)
    expected = _naive_pool(x, (2, 3, 2), (2, 1, 2), padding, kind)
    assert y.shape.as_list() == list(expected.shape)
    np.testing.assert_allclose(run(y), expected, rtol=1e-12)


@pytest.mark.parametrize("build,shapes", [
    (lambda x, w: tf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME"), [(1, 4, 3, 3, 2), (2, 2, 1, 2, 3)]),
    (lambda x, w: tf.nn.conv3d_transpose(x, w, [1, 4, 3, 3, 2], [1, 2, 2, 1, 1], "SAME"),
     [(1, 2, 2, 3, 3), (2, 2, 1, 2, 3)]),
    (lambda x, w: tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "VALID", dilations=[1, 2, 1, 1, 1]),
     [(1, 4, 3, 3, 2), (2, 2, 1, 2, 3)]),
])
def test_conv3d_gradients_by_finite_differences(build, shapes):
    x, w = tf.placeholder(tf.float64, shapes[0]), tf.placeholder(tf.float64, shapes[1])
    y = build(x, w)
    inits = [RNG.standard_normal(s) for s in shapes]
    assert compute_gradient_error([x, w], shapes, y, y.shape.as_list(), inits) < 1e-6


@pytest.mark.parametrize("fn", [tf.nn.max_pool3d, tf.nn.avg_pool3d])
def test_pool3d_gradients_by_finite_differences(fn):
    shape = (1, 4, 3, 5, 2)
    x = tf.placeholder(tf.float64, shape)
    y = fn(x, [1, 2, 2, 3, 1], [1, 1, 2, 2, 1], "SAME")
    init = RNG.permutation(np.arange(np.prod(shape))).reshape(shape) / 7.0   # no ties
    assert compute_gradient_error(x, shape, y, y.shape.as_list(), init) < 1e-6


def test_max_pool3d_gradient_goes_to_every_tied_maximum():
    x = tf.constant(np.ones((1, 2, 2, 2, 1)))
    y = tf.nn.max_pool3d(x, [1, 2, 2, 2, 1], [1, 2, 2, 2, 1], "VALID")
    np.testing.assert_array_equal(run(tf.gradients(y, x)[0]), np.ones((1, 2, 2, 2, 1)))


@pytest.mark.parametrize("include_batch", [False, True])
@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_max_pool_with_argmax_indexes_the_first_maximum(include_batch, padding):
    x = np.floor(RNG.standard_normal((2, 5, 6, 3)) * 2)       # ties: the first one wins
    out, argmax = tf.nn.max_pool_with_argmax(x, [1, 3, 2, 1], [1, 2, 2, 1], padding,
                                             include_batch_in_index=include_batch)
    assert argmax.dtype == tf.int64 and argmax.shape == out.shape
    got_out, got_arg = run([out, argmax])
    np.testing.assert_array_equal(got_out, _naive_pool(x, (3, 2), (2, 2), padding, "max"))
    flat = x.reshape(-1)
    for b in range(2):
        offset = 0 if include_batch else b * x[0].size
        np.testing.assert_array_equal(flat[got_arg[b] + offset], got_out[b])
    first = np.argmax(x[0, 0:3, 0:2, 0].reshape(-1) == got_out[0, 0, 0, 0]) if padding == "VALID" \
        else None
    if first is not None:
        row, col = divmod(int(first), 2)
        assert got_arg[0, 0, 0, 0] == (row * 6 + col) * 3


def test_max_pool_with_argmax_gradient_and_errors():
    shape = (2, 4, 5, 2)
    x = tf.placeholder(tf.float64, shape)
    out, argmax = tf.nn.max_pool_with_argmax(x, [1, 2, 2, 1], [1, 2, 2, 1], "SAME",
                                             Targmax=tf.int32)
    assert argmax.dtype == tf.int32
    init = RNG.permutation(np.arange(np.prod(shape))).reshape(shape) / 3.0
    assert compute_gradient_error(x, shape, out, out.shape.as_list(), init) < 1e-6
    with pytest.raises(ValueError, match="Data formats other than 'NHWC'"):
        tf.nn.max_pool_with_argmax(x, 2, 2, "SAME", data_format="NCHW")


def test_convolution_dispatches_on_rank():
    x1, w1 = RNG.standard_normal((2, 9, 3)), RNG.standard_normal((3, 3, 4))
    x2, w2 = RNG.standard_normal((2, 6, 7, 3)), RNG.standard_normal((2, 3, 3, 4))
    x3, w3 = RNG.standard_normal((1, 4, 5, 3, 2)), RNG.standard_normal((2, 2, 2, 2, 3))
    y1 = tf.nn.convolution(x1, w1, "SAME", strides=[2])
    y2 = tf.nn.convolution(x2, w2, "VALID", dilation_rate=[2, 1])
    y3 = tf.nn.convolution(x3, w3, "SAME", strides=[1, 2, 1])
    assert y1.shape.as_list() == [2, 5, 4] and y2.shape.as_list() == [2, 4, 5, 4]
    got1, got2, got3 = run([y1, y2, y3])
    np.testing.assert_allclose(got1, run(tf.nn.conv1d(x1, w1, 2, "SAME")), rtol=1e-12)
    dilated = np.zeros((3, 3, 3, 4))
    dilated[::2] = w2
    np.testing.assert_allclose(got2, run(tf.nn.conv2d(x2, dilated, [1, 1, 1, 1], "VALID")),
                               rtol=1e-12)
    np.testing.assert_allclose(got3, _naive_conv3d(x3, w3, (1, 2, 1), "SAME"), rtol=1e-12)
    with pytest.raises(ValueError, match="strides > 1 not supported"):
        tf.nn.convolution(x2, w2, "SAME", strides=[2, 2], dilation_rate=[2, 2])


def test_pool_and_1d_pools():
    x1, x2 = RNG.standard_normal((2, 9, 3)), RNG.standard_normal((2, 5, 6, 3))
    got = run([tf.nn.pool(x1, [3], "MAX", "SAME", strides=[2]),
               tf.nn.max_pool1d(x1, 2, 2, "VALID"), tf.nn.avg_pool1d(x1, [1, 3, 1], 1, "SAME"),
               tf.nn.pool(x2, [2, 3], "AVG", "SAME", strides=[1, 2])])
    expected = [_naive_pool(x1, (3,), (2,), "SAME", "max"),
                _naive_pool(x1, (2,), (2,), "VALID", "max"),
                _naive_pool(x1, (3,), (1,), "SAME", "avg"),
                _naive_pool(x2, (2, 3), (1, 2), "SAME", "avg")]
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12)
    with pytest.raises(NotImplementedError, match="dilated pooling"):
        tf.nn.pool(x2, [2, 2], "MAX", "VALID", dilation_rate=[2, 2])
    with pytest.raises(ValueError, match="Invalid pooling_type"):
        tf.nn.pool(x2, [2, 2], "MIN", "VALID")


def test_conv1d_transpose_is_the_gradient_of_conv1d():
    x = tf.placeholder(tf.float64, (2, 9, 4))
    w = RNG.standard_normal((3, 4, 5))
    dy = RNG.standard_normal((2, 5, 5))
    y = tf.nn.conv1d(x, w, 2, "SAME")
    transposed = tf.nn.conv1d_transpose(dy, w, [2, 9, 4], 2, "SAME")
    assert transposed.shape.as_list() == [2, 9, 4]
    want = run(tf.gradients(tf.reduce_sum(y * dy), x)[0], {x: np.zeros((2, 9, 4))})
    np.testing.assert_allclose(run(transposed), want, rtol=1e-12)


def test_conv3d_backprop_filter_v2_is_the_filter_gradient():
    x = RNG.standard_normal((1, 4, 3, 3, 2))
    w = tf.placeholder(tf.float64, (2, 2, 1, 2, 3))
    dy = RNG.standard_normal((1, 2, 3, 3, 3))
    y = tf.nn.conv3d(x, w, [1, 2, 1, 1, 1], "SAME")
    want = run(tf.gradients(tf.reduce_sum(y * dy), w)[0], {w: np.zeros((2, 2, 1, 2, 3))})
    got = tf.nn.conv3d_backprop_filter_v2(x, [2, 2, 1, 2, 3], dy, [1, 2, 1, 1, 1], "SAME")
    assert got.shape.as_list() == [2, 2, 1, 2, 3]
    np.testing.assert_allclose(run(got), want, rtol=1e-12)


def test_build_time_errors():
    x = np.zeros((1, 3, 3, 3, 2), np.float32)
    with pytest.raises(ValueError, match="strides should be of length 1, 3 or 5"):
        tf.nn.conv3d(x, np.zeros((1, 1, 1, 2, 2), np.float32), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 2 and 3"):
        tf.nn.conv3d(x, np.zeros((1, 1, 1, 3, 2), np.float32), [1, 1, 1, 1, 1], "SAME")
    with pytest.raises(tf.errors.InvalidArgumentError, match="only supports NDHWC"):
        tf.nn.max_pool3d(x, 2, 1, "VALID", data_format="NCDHW")


def test_avg_pool3d_second_derivative_by_finite_differences():
    shape = (1, 4, 3, 4, 2)
    x = tf.placeholder(tf.float64, shape)
    y = tf.nn.avg_pool3d(x, [1, 2, 2, 3, 1], [1, 1, 2, 2, 1], "SAME")
    first = tf.gradients(tf.reduce_sum(tf.square(y)), x)[0]      # through AvgPool3DGrad
    assert compute_gradient_error(x, shape, first, shape, RNG.standard_normal(shape)) < 1e-6

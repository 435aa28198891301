"""tf.extract_image_patches / tf.image.extract_patches: values against a naive loop (strides,
rates, SAME zero padding), static shapes, integer images, gradient by finite differences."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing.gradient_checker import compute_gradient_error
from zmtf.testing import run_fetches as run

RNG = np.random.default_rng(5)


def _naive(x, k, s, r, padding):
    _, h, w, c = x.shape
    eff = [(k[i] - 1) * r[i] + 1 for i in range(2)]
    if padding == "VALID":
        out = [(n - e) // st + 1 for n, e, st in zip((h, w), eff, s)]
        before = [0, 0]
    else:
        out = [-(-n // st) for n, st in zip((h, w), s)]
        before = [max((o - 1) * st + e - n, 0) // 2 for o, st, e, n in zip(out, s, eff, (h, w))]
    result = np.zeros((x.shape[0], out[0], out[1], k[0] * k[1] * c), x.dtype)
    for i in range(out[0]):
        for j in range(out[1]):
            for a in range(k[0]):
                for b in range(k[1]):
                    y, z = i * s[0] + a * r[0] - before[0], j * s[1] + b * r[1] - before[1]
                    if 0 <= y < h and 0 <= z < w:
                        result[:, i, j, (a * k[1] + b) * c:(a * k[1] + b + 1) * c] = x[:, y, z]
    return result


@pytest.mark.parametrize("k,s,r,padding", [
    ((3, 2), (2, 1), (1, 1), "VALID"), ((2, 3), (2, 3), (1, 1), "SAME"),
    ((2, 2), (1, 1), (2, 2), "SAME"), ((3, 3), (2, 2), (2, 1), "VALID"),
])
def test_patches_match_naive_loop(k, s, r, padding):
    x = RNG.standard_normal((2, 7, 6, 3)).astype(np.float32)
    y = tf.extract_image_patches(x, [1, *k, 1], [1, *s, 1], [1, *r, 1], padding)
    expected = _naive(x, k, s, r, padding)
    assert y.op.type == "ExtractImagePatches" and y.shape.as_list() == list(expected.shape)
    np.testing.assert_array_equal(run(y), expected)


def test_image_extract_patches_keeps_integer_dtype():
    x = np.arange(2 * 4 * 4 * 1, dtype=np.int32).reshape(2, 4, 4, 1)
    y = tf.image.extract_patches(x, sizes=[1, 2, 2, 1], strides=[1, 2, 2, 1], rates=[1, 1, 1, 1],
                                 padding="VALID")
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(run(y), _naive(x, (2, 2), (2, 2), (1, 1), "VALID"))


@pytest.mark.parametrize("s,r", [((2, 1), (1, 1)), ((1, 1), (2, 1)), ((2, 2), (1, 2))])
def test_gradient_by_finite_differences(s, r):
    shape = (1, 5, 4, 2)
    x = tf.placeholder(tf.float64, shape)
    y = tf.extract_image_patches(x, [1, 2, 3, 1], [1, *s, 1], [1, *r, 1], "SAME")
    with tf.Session():
        error = compute_gradient_error(x, shape, y, y.shape.as_list(), RNG.standard_normal(shape))
    assert error < 1e-8


def test_argument_errors():
    with pytest.raises(TypeError, match="needs images, ksizes"):
        tf.extract_image_patches(np.zeros((1, 2, 2, 1)), [1, 1, 1, 1], [1, 1, 1, 1])
    with pytest.raises(ValueError, match="padding must be"):
        tf.extract_image_patches(np.zeros((1, 2, 2, 1)), [1, 1, 1, 1], [1, 1, 1, 1],
                                 [1, 1, 1, 1], "FULL")

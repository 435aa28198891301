"""resize_bicubic and resize_area (and resize_images' BICUBIC / AREA): against Keys' cubic
computed directly, box averages, static shapes, and the bicubic gradient by finite
differences."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing.gradient_checker import compute_gradient_error
from zmtf.testing import run_fetches as run

RNG = np.random.default_rng(4)
IMG = RNG.random((2, 5, 7, 3)).astype(np.float32)


def _keys(t, a):
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


def _cubic_axis(in_size, out_size, half_pixel):
    """Reference [out, in] weights from the formula (no coefficient table)."""
    a = -0.5 if half_pixel else -0.75
    scale = in_size / out_size
    matrix = np.zeros((out_size, in_size))
    for i in range(out_size):
        x = (i + 0.5) * scale - 0.5 if half_pixel else i * scale
        base = int(np.floor(x))
        taps = [(k, _keys(x - k, a)) for k in range(base - 1, base + 3)]
        if half_pixel:
            taps = [(k, w) for k, w in taps if 0 <= k < in_size]
            total = sum(w for _, w in taps)
            taps = [(k, w / total) for k, w in taps]
        for k, w in taps:
            matrix[i, min(max(k, 0), in_size - 1)] += w
    return matrix


@pytest.mark.parametrize("half_pixel", [False, True])
@pytest.mark.parametrize("size", [(9, 4), (3, 11)])
def test_bicubic_matches_keys_cubic(size, half_pixel):
    y = tf.image.resize_bicubic(IMG, size, half_pixel_centers=half_pixel)
    assert y.dtype == tf.float32 and y.shape.as_list() == [2, *size, 3]
    rows, cols = _cubic_axis(5, size[0], half_pixel), _cubic_axis(7, size[1], half_pixel)
    expected = np.einsum("yh,bhwc,xw->byxc", rows, IMG, cols)
    np.testing.assert_allclose(run(y), expected, atol=2e-3)   # TF rounds the fraction to 1/1024


def test_bicubic_identity_and_align_corners_keep_corners():
    same, aligned = run([tf.image.resize_bicubic(IMG, [5, 7]),
                         tf.image.resize_bicubic(IMG, [9, 13], align_corners=True)])
    np.testing.assert_allclose(same, IMG, rtol=1e-6)
    np.testing.assert_allclose(aligned[:, ::2, ::2], IMG, rtol=1e-5, atol=1e-6)


def test_area_averages_boxes():
    image = RNG.random((1, 6, 8, 2))
    halved, same = run([tf.image.resize_area(image, [3, 4]), tf.image.resize_area(image, [6, 8])])
    np.testing.assert_allclose(halved, image.reshape(1, 3, 2, 4, 2, 2).mean(axis=(2, 4)),
                               rtol=1e-5)
    np.testing.assert_allclose(same, image, rtol=1e-6)
    # 3 -> 2: output cell 0 covers pixel 0 and half of pixel 1
    column = np.array([1.0, 2.0, 4.0]).reshape(1, 3, 1, 1)
    np.testing.assert_allclose(run(tf.image.resize_area(column, [2, 1]))[0, :, 0, 0],
                               [(1 + 0.5 * 2) / 1.5, (0.5 * 2 + 4) / 1.5], rtol=1e-6)


def test_resize_images_methods():
    bicubic, area = run([tf.image.resize_images(IMG, [4, 9], tf.image.ResizeMethod.BICUBIC),
                         tf.image.resize(IMG[0], [3, 7], method=tf.image.ResizeMethod.AREA)])
    np.testing.assert_array_equal(bicubic, run(tf.image.resize_bicubic(IMG, [4, 9])))
    np.testing.assert_array_equal(area, run(tf.image.resize_area(IMG, [3, 7]))[0])


@pytest.mark.parametrize("half_pixel", [False, True])
def test_bicubic_gradient_by_finite_differences(half_pixel):
    shape = (1, 4, 3, 2)
    x = tf.placeholder(tf.float64, shape)
    y = tf.image.resize_bicubic(x, [7, 5], half_pixel_centers=half_pixel)
    with tf.Session():
        error = compute_gradient_error(x, shape, y, [1, 7, 5, 2], RNG.random(shape))
    assert error < 1e-4     # the forward op rounds to float32

"""tf.image box ops: crop_and_resize (values, extrapolation, nearest, gradients for image and
boxes by finite differences), the non-max suppressions (hard, soft, padded, overlaps),
draw_bounding_boxes and sample_distorted_bounding_box's sampling rules."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError, OutOfRangeError
from zmtf.testing import run_fetches as run

RNG = np.random.default_rng(8)
IMG = RNG.random((2, 5, 6, 3)).astype(np.float32)


def _bilinear(image, y, x):
    y0, x0 = int(np.floor(y)), int(np.floor(x))
    y1, x1 = min(y0 + 1, image.shape[0] - 1), min(x0 + 1, image.shape[1] - 1)
    dy, dx = y - y0, x - x0
    top = image[y0, x0] * (1 - dx) + image[y0, x1] * dx
    bottom = image[y1, x0] * (1 - dx) + image[y1, x1] * dx
    return top * (1 - dy) + bottom * dy


def test_crop_and_resize_samples_bilinearly_and_extrapolates():
    boxes = np.array([[0.0, 0.0, 1.0, 1.0], [0.1, 0.2, 0.7, 0.9], [-0.5, 0.0, 0.5, 1.0]],
                     np.float32)
    crops = tf.image.crop_and_resize(IMG, boxes, [1, 0, 1], [5, 6], extrapolation_value=-1.0)
    assert crops.dtype == tf.float32 and crops.shape.as_list() == [3, 5, 6, 3]
    got = run(crops)
    np.testing.assert_allclose(got[0], IMG[1], rtol=1e-6)
    for i, j in [(0, 0), (2, 3), (4, 5)]:
        y, x = 0.1 * 4 + i * 0.6 * 4 / 4, 0.2 * 5 + j * 0.7 * 5 / 5
        np.testing.assert_allclose(got[1, i, j], _bilinear(IMG[0], y, x), rtol=1e-5)
    np.testing.assert_array_equal(got[2, :2], -1.0)         # rows above the image
    np.testing.assert_allclose(got[2, 2:], IMG[1, :3], rtol=1e-6)


def test_crop_and_resize_nearest_and_single_pixel_crops():
    nearest, centre = run([
        tf.image.crop_and_resize(IMG, [[0.0, 0.0, 1.0, 1.0]], [0], [3, 3], method="nearest"),
        tf.image.crop_and_resize(IMG, [[0.25, 0.2, 0.75, 0.6]], [0], [1, 1])])
    np.testing.assert_array_equal(nearest[0], IMG[0][np.ix_([0, 2, 4], [0, 3, 5])])
    np.testing.assert_allclose(centre[0, 0, 0], _bilinear(IMG[0], 0.5 * 4, 0.4 * 5), rtol=1e-5)


def _finite_difference(fn, value, eps=1e-4):
    grad = np.zeros_like(value)
    for index in np.ndindex(value.shape):
        up, down = value.copy(), value.copy()
        up[index] += eps
        down[index] -= eps
        grad[index] = (fn(up) - fn(down)) / (2 * eps)
    return grad


@pytest.mark.parametrize("crop_size", [[3, 4], [1, 1]])
def test_crop_and_resize_gradients(crop_size):
    image_value = RNG.random((1, 4, 5, 2))
    boxes_value = np.array([[0.1, 0.15, 0.8, 0.7], [0.3, 0.06, 0.6, 0.95]])   # off the pixel grid
    image = tf.placeholder(tf.float64, image_value.shape)
    boxes = tf.placeholder(tf.float32, boxes_value.shape)
    crops = tf.image.crop_and_resize(image, boxes, [0, 0], crop_size)
    weights = RNG.random(crops.shape.as_list())
    loss = tf.reduce_sum(tf.cast(crops, tf.float64) * weights)
    d_image, d_boxes = run(tf.gradients(loss, [image, boxes]),
                           {image: image_value, boxes: boxes_value})

    def loss_at(img, bxs):
        return float(run(loss, {image: img, boxes: bxs}))
    np.testing.assert_allclose(d_image, _finite_difference(
        lambda v: loss_at(v, boxes_value), image_value), atol=1e-3)
    np.testing.assert_allclose(d_boxes, _finite_difference(
        lambda v: loss_at(image_value, v), boxes_value, eps=1e-3), atol=2e-2)


def test_crop_and_resize_errors():
    with pytest.raises(OutOfRangeError, match="box_index has values outside"):
        run(tf.image.crop_and_resize(IMG, [[0, 0, 1, 1]], [2], [2, 2]))
    with pytest.raises(InvalidArgumentError, match="crop dimensions must be positive"):
        run(tf.image.crop_and_resize(IMG, [[0, 0, 1, 1]], [0], [0, 2]))


BOXES = np.array([[0, 0, 1, 1], [0, 0.1, 1, 1.1], [0, -0.1, 1, 0.9], [0, 10, 1, 11],
                  [0, 10.1, 1, 11.1], [0, 100, 1, 101]], np.float32)
SCORES = np.array([0.9, 0.75, 0.6, 0.95, 0.5, 0.3], np.float32)


def test_non_max_suppression_greedy_by_score():
    picked = tf.image.non_max_suppression(BOXES, SCORES, 3, iou_threshold=0.5)
    assert picked.dtype == tf.int32 and picked.shape.as_list() == [None]
    np.testing.assert_array_equal(run(picked), [3, 0, 5])
    np.testing.assert_array_equal(
        run(tf.image.non_max_suppression(BOXES, SCORES, 6, 0.5, score_threshold=0.4)), [3, 0])


def test_soft_nms_decays_overlapping_scores():
    indices, scores = tf.image.non_max_suppression_with_scores(BOXES, SCORES, 6, 1.0,
                                                               soft_nms_sigma=0.5)
    got_indices, got_scores = run([indices, scores])
    assert got_indices[:2].tolist() == [3, 0]
    iou_10 = 0.9 / 1.1                      # box 1 against box 0
    position = got_indices.tolist().index(1)
    np.testing.assert_allclose(got_scores[position], 0.75 * np.exp(-iou_10 ** 2 / (2 * 0.5)),
                               rtol=1e-5)
    assert np.all(np.diff(got_scores) <= 0)


def test_padded_and_overlaps_variants():
    padded, valid = tf.image.non_max_suppression_padded(BOXES, SCORES, 5, 0.5,
                                                        pad_to_max_output_size=True)
    assert padded.shape.as_list() == [5]
    got, count = run([padded, valid])
    np.testing.assert_array_equal(got, [3, 0, 5, 0, 0])
    assert count == 3
    overlaps = np.eye(4, dtype=np.float32) + np.float32(0.8) * (1 - np.eye(4, dtype=np.float32))
    overlaps[0, 3] = overlaps[3, 0] = 0.1
    picked = tf.image.non_max_suppression_overlaps(overlaps, [0.9, 0.8, 0.7, 0.6], 4, 0.5)
    np.testing.assert_array_equal(run(picked), [0, 3])
    with pytest.raises(InvalidArgumentError, match="iou_threshold must be in \\[0, 1\\]"):
        run(tf.image.non_max_suppression(BOXES, SCORES, 3, 1.5))


def test_draw_bounding_boxes_outlines_in_table_colors():
    images = np.zeros((1, 5, 5, 3), np.float32)
    boxes = [[[0.0, 0.0, 0.5, 0.5], [0.5, 0.25, 1.0, 1.0], [0.9, 0.9, 0.1, 0.1]]]
    got = run(tf.image.draw_bounding_boxes(images, boxes))[0]
    yellow, blue = [1, 1, 0], [0, 0, 1]
    expected = np.zeros((5, 5, 3), np.float32)
    for r, c in [(0, 0), (0, 1), (0, 2), (2, 0), (2, 1), (1, 0), (1, 2)]:
        expected[r, c] = yellow
    for r in (2, 3, 4):
        for c in (1, 4):
            expected[r, c] = blue
    expected[2, 1:5] = blue
    expected[4, 1:5] = blue
    expected[2, 2] = blue
    np.testing.assert_array_equal(got, expected)    # the inverted third box is skipped
    gray = run(tf.image.draw_bounding_boxes(np.zeros((1, 3, 3, 1), np.float32),
                                            [[[0.0, 0.0, 1.0, 1.0]]]))
    assert gray[0, 0, 0, 0] == 1 and gray[0, 1, 1, 0] == 0


def test_sample_distorted_bounding_box_follows_the_rules():
    begin, size, box = tf.image.sample_distorted_bounding_box(
        [60, 80, 3], [[[0.1, 0.1, 0.5, 0.6]]], min_object_covered=0.5,
        aspect_ratio_range=[0.5, 2.0], area_range=[0.1, 0.8], seed=7)
    assert box.shape.as_list() == [1, 1, 4] and begin.dtype == tf.int32
    obj = (6, 8, 30, 48)                        # y0, x0, y1, x1 in pixels
    with tf.Session() as sess:
        for _ in range(40):
            b, s, bb = sess.run([begin, size, box])
            assert s[2] == -1 and b[2] == 0
            assert 0 <= b[0] and b[0] + s[0] <= 60 and 0 <= b[1] and b[1] + s[1] <= 80
            assert 0.1 * 4800 - 80 <= s[0] * s[1] <= 0.8 * 4800 + 80
            covered = (max(0, min(b[0] + s[0], obj[2]) - max(b[0], obj[0])) *
                       max(0, min(b[1] + s[1], obj[3]) - max(b[1], obj[1])))
            assert covered / ((obj[2] - obj[0]) * (obj[3] - obj[1])) >= 0.5
            np.testing.assert_allclose(bb[0, 0], [b[0] / 60, b[1] / 80, (b[0] + s[0]) / 60,
                                                  (b[1] + s[1]) / 80], rtol=1e-6)


def test_sample_distorted_bounding_box_errors_and_whole_image_fallback():
    no_boxes = np.zeros((1, 0, 4), np.float32)
    with pytest.raises(InvalidArgumentError, match="No bounding boxes provided"):
        run(tf.image.sample_distorted_bounding_box([10, 10, 3], no_boxes)[0])
    with pytest.raises(InvalidArgumentError, match=r"must be in \[0.0, 1.0\]"):
        run(tf.image.sample_distorted_bounding_box([10, 10, 3], [[[0, 0, 1.5, 1]]])[0])
    begin, size, _ = run(list(tf.image.sample_distorted_bounding_box(
        [10, 10, 3], no_boxes, use_image_if_no_bounding_boxes=True, area_range=[2.0, 3.0])))
    np.testing.assert_array_equal(begin, [0, 0, 0])     # no crop satisfies: the whole image
    np.testing.assert_array_equal(size, [10, 10, -1])

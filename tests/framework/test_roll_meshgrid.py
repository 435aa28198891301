"""tf.roll / tf.manip.roll and tf.meshgrid against numpy, with roll's gradient."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.tf1.errors import InvalidArgumentError


def test_roll_matches_numpy_and_adds_shifts_on_one_axis():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert tf.manip.roll is tf.roll
    fed_shift = tf.placeholder(tf.int64, [2])
    out = run([tf.roll(x, 1, 0), tf.roll(x, [1, -2, 3], [0, 1, 0]), tf.roll(x, fed_shift, [1, -1])],
              {fed_shift: [5, 1]})
    np.testing.assert_array_equal(out[0], np.roll(x, 1, 0))
    np.testing.assert_array_equal(out[1], np.roll(x, (4, -2), (0, 1)))
    np.testing.assert_array_equal(out[2], np.roll(x, 6, 1))
    assert out[0].dtype == np.int32


def test_roll_gradient_rolls_back():
    x = tf.placeholder(tf.float64, [5])
    weights = np.arange(5.0)
    grad = tf.gradients(tf.reduce_sum(tf.roll(x, 2, 0) * weights), x)[0]
    np.testing.assert_array_equal(run(grad, {x: np.zeros(5)}), np.roll(weights, -2))


def test_roll_errors():
    with pytest.raises(InvalidArgumentError, match="same shape"):
        tf.roll(np.ones((2, 2)), [1, 2], [0])
    with pytest.raises(InvalidArgumentError, match="axis 2 .* out of range"):
        run(tf.roll(np.ones((2, 2)), 1, 2))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
def test_meshgrid_matches_numpy(indexing):
    a, b, c = np.arange(2.0), np.arange(3.0) * 10, np.arange(4.0) * 100
    grids = tf.meshgrid(a, b, c, indexing=indexing)
    expected = np.meshgrid(a, b, c, indexing=indexing)
    assert [g.shape.as_list() for g in grids] == [list(e.shape) for e in expected]
    for got, want in zip(run(grids), expected):
        np.testing.assert_array_equal(got, want)


def test_meshgrid_of_fed_vectors():
    x = tf.placeholder(tf.float32, [None])
    gx, gy = tf.meshgrid(x, [1.0, 2.0])
    values = run([gx, gy], {x: [5.0, 6.0, 7.0]})
    expected = np.meshgrid([5.0, 6.0, 7.0], [1.0, 2.0])
    np.testing.assert_array_equal(values[0], expected[0])
    np.testing.assert_array_equal(values[1], expected[1])
    with pytest.raises(InvalidArgumentError, match="indexing"):
        tf.meshgrid(x, x, indexing="xyz")

"""tf.map_fn, tf.scan, tf.foldl, tf.foldr: loops over elems' first axis, against numpy."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run

X = (np.arange(12, dtype=np.float64).reshape(4, 3) - 5) / 3


def test_map_fn_same_and_other_shapes_and_a_dtype_nest():
    x = tf.placeholder(tf.float64, [4, 3])
    squares = tf.map_fn(lambda r: r * r, x)
    sums = tf.map_fn(tf.reduce_sum, x)
    signs = tf.map_fn(lambda r: (r[0], tf.cast(r[1] > 0, tf.int32)), x, dtype=(tf.float64, tf.int32))
    assert squares.shape.as_list() == [4, 3] and sums.shape.as_list() == [4]
    got = run([squares, sums, signs], {x: X})
    np.testing.assert_allclose(got[0], X * X)
    np.testing.assert_allclose(got[1], X.sum(1))
    np.testing.assert_allclose(got[2][0], X[:, 0])
    np.testing.assert_array_equal(got[2][1], (X[:, 1] > 0).astype(np.int32))


def test_map_fn_over_a_tuple_of_elems_and_a_run_time_length():
    a = tf.placeholder(tf.float64, [None, 3])
    b = tf.placeholder(tf.float64, [None])
    scaled = tf.map_fn(lambda pair: pair[0] * pair[1], (a, b), dtype=tf.float64)
    np.testing.assert_allclose(run(scaled, {a: X, b: np.arange(4.0)}), X * np.arange(4.0)[:, None])


def test_scan_with_and_without_initializer_and_reversed():
    x = tf.placeholder(tf.float64, [4, 3])
    running = tf.scan(lambda acc, r: acc + r, x)
    weighted = tf.scan(lambda acc, r: acc * 2.0 + r, x, initializer=tf.zeros([3], tf.float64))
    backwards = tf.scan(lambda acc, r: acc + r, x, reverse=True)
    pair = tf.scan(lambda acc, r: (acc[0] + r, acc[1] * 2.0), x,
                   initializer=(tf.zeros([3], tf.float64), tf.ones([3], tf.float64)))
    got = run([running, weighted, backwards, pair], {x: X})
    np.testing.assert_allclose(got[0], np.cumsum(X, 0))
    want, acc = [], np.zeros(3)
    for row in X:
        acc = acc * 2 + row
        want.append(acc)
    np.testing.assert_allclose(got[1], want)
    np.testing.assert_allclose(got[2], np.cumsum(X[::-1], 0)[::-1])
    np.testing.assert_allclose(got[3][1], 2.0 ** np.arange(1, 5)[:, None] * np.ones((4, 3)))


def test_folds_left_and_right():
    x = tf.placeholder(tf.float64, [4, 3])
    left = tf.foldl(lambda acc, r: acc - r, x)
    right = tf.foldr(lambda acc, r: acc * 0.5 - r, x, initializer=tf.ones([3], tf.float64))
    got = run([left, right], {x: X})
    np.testing.assert_allclose(got[0], X[0] - X[1:].sum(0))
    acc = np.ones(3)
    for row in X[::-1]:
        acc = acc * 0.5 - row
    np.testing.assert_allclose(got[1], acc)


def test_gradients_through_map_fn_and_scan_match_finite_differences():
    x = tf.placeholder(tf.float64, [4, 3])
    loss = (tf.reduce_sum(tf.scan(lambda a, r: a * tf.tanh(r) + r, x) ** 2)
            + tf.reduce_sum(tf.map_fn(lambda r: tf.reduce_sum(tf.sin(r)), x)))
    [grad] = tf.gradients(loss, [x])
    with tf.Session() as sess:
        got = sess.run(grad, {x: X})
        eps, numeric = 1e-6, np.zeros_like(X)
        for index in np.ndindex(*X.shape):
            step = np.zeros_like(X)
            step[index] = eps
            numeric[index] = (sess.run(loss, {x: X + step}) - sess.run(loss, {x: X - step})) / (2 * eps)
    np.testing.assert_allclose(got, numeric, rtol=1e-6, atol=1e-8)


def test_bad_calls_say_what_is_wrong():
    with pytest.raises(ValueError, match="first axis"):
        tf.map_fn(lambda r: r, tf.constant(1.0))
    with pytest.raises(ValueError, match="accumulator"):
        tf.scan(lambda acc, r: (acc, acc), tf.zeros([3, 2]))

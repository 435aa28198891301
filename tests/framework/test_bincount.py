"""tf.bincount: counts and weight sums against numpy, TF1's output length (max + 1, minlength,
maxlength, empty input), dtypes, static shapes and errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.tf1.errors import InvalidArgumentError


def test_counts_match_numpy_for_any_shape():
    arr = np.random.default_rng(3).integers(0, 7, size=(4, 5)).astype(np.int32)
    out = tf.bincount(arr)
    assert out.dtype == tf.int32 and out.shape.as_list() == [int(arr.max()) + 1]
    np.testing.assert_array_equal(run(out), np.bincount(arr.reshape(-1)))


@pytest.mark.parametrize("kwargs,expected", [
    ({}, [1, 2, 0, 1]),
    ({"minlength": 6}, [1, 2, 0, 1, 0, 0]),
    ({"maxlength": 2}, [1, 2]),                 # values past the length are dropped
    ({"minlength": 5, "maxlength": 3}, [1, 2, 0]),
])
def test_length_rules(kwargs, expected):
    arr = tf.placeholder(tf.int32, [None])
    out = run(tf.bincount(arr, **kwargs), {arr: [1, 1, 3, 0]})
    np.testing.assert_array_equal(out, expected)


def test_empty_input_has_length_zero_or_minlength():
    arr = tf.placeholder(tf.int32, [None])
    empty = np.zeros(0, np.int32)
    assert run(tf.bincount(arr), {arr: empty}).shape == (0,)
    np.testing.assert_array_equal(run(tf.bincount(arr, minlength=3), {arr: empty}), [0, 0, 0])


def test_weights_are_summed_in_their_dtype():
    arr = [1, 1, 3, 0]
    floats = tf.bincount(arr, weights=np.array([0.5, 1.0, 2.0, 3.0]), dtype=tf.float32)
    ints = tf.bincount(arr, weights=np.array([2**40, 1, 2, 3], np.int64), maxlength=2)
    assert floats.dtype == tf.float64 and ints.dtype == tf.int64   # dtype only without weights
    np.testing.assert_array_equal(run(floats), [3.0, 1.5, 0.0, 2.0])
    np.testing.assert_array_equal(run(ints), [3, 2**40 + 1])
    counted = tf.bincount(arr, dtype=tf.float32)
    assert counted.dtype == tf.float32
    np.testing.assert_array_equal(run(counted), [1.0, 2.0, 0.0, 1.0])


def test_run_time_errors_name_the_problem():
    arr = tf.placeholder(tf.int32, [None])
    with pytest.raises(InvalidArgumentError, match="non-negative! Got -1"):
        run(tf.bincount(arr), {arr: [1, -1]})
    with pytest.raises(InvalidArgumentError, match="same shape as `arr`.*got \\[3\\]"):
        run(tf.bincount(arr, weights=np.ones(3)), {arr: [1, 2]})
    with pytest.raises(ValueError, match="non-negative"):
        tf.bincount([1, 2], maxlength=-1)


def test_not_differentiable():
    w = tf.placeholder(tf.float64, [3])
    assert tf.gradients(tf.reduce_sum(tf.bincount([0, 1, 1], weights=w)), w) == [None]

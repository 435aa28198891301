"""Segment reductions and tf.cumprod: values against numpy references, TF's empty-segment
rules, dtypes, static shapes and the errors that name what to fix."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.tf1.errors import InvalidArgumentError


def reference(reduce, data, ids, count, empty):
    """numpy: reduce the rows of each segment; an empty segment is ``empty``."""
    rows = data.reshape((ids.size,) + data.shape[ids.ndim:])
    flat = ids.reshape(-1)
    out = np.full((count,) + rows.shape[1:], empty, data.dtype)
    for j in range(count):
        if (flat == j).any():
            out[j] = reduce(rows[flat == j], axis=0)
    return out


SORTED = [("segment_sum", np.sum, 0), ("segment_mean", np.mean, 0), ("segment_max", np.max, 0),
          ("segment_min", np.min, 0), ("segment_prod", np.prod, 1)]


@pytest.mark.parametrize("name,reduce,empty", SORTED, ids=[s[0] for s in SORTED])
def test_sorted_segments_match_numpy_with_empty_segments(name, reduce, empty):
    data = np.random.default_rng(0).normal(size=(6, 2, 3)).astype(np.float32)
    ids = np.array([0, 0, 2, 2, 2, 4], np.int32)
    out = getattr(tf, name)(data, ids)
    assert out.shape.as_list() == [5, 2, 3]   # constant ids give the row count
    value = run(out)
    assert value.dtype == np.float32
    np.testing.assert_allclose(value, reference(reduce, data, ids, 5, empty), rtol=1e-6)
    assert getattr(tf.math, name) is getattr(tf, name)


UNSORTED = [("unsorted_segment_max", np.max, -np.finfo(np.float64).max),
            ("unsorted_segment_min", np.min, np.finfo(np.float64).max),
            ("unsorted_segment_prod", np.prod, 1), ("unsorted_segment_mean", np.mean, 0)]


@pytest.mark.parametrize("name,reduce,empty", UNSORTED, ids=[s[0] for s in UNSORTED])
def test_unsorted_segments_drop_negative_ids_and_take_2d_ids(name, reduce, empty):
    data = np.random.default_rng(1).normal(size=(2, 3, 2))
    ids = np.array([[3, -1, 0], [3, 1, 0]], np.int64)
    out = getattr(tf, name)(data, ids, 5)
    assert out.shape.as_list() == [5, 2]
    np.testing.assert_allclose(run(out), reference(reduce, data, ids, 5, empty), rtol=1e-12)
    assert getattr(tf.math, name) is getattr(tf, name)


def test_integer_segments_keep_the_dtype_and_divide_towards_zero():
    data = np.array([1, 2, 4, -3, -4, 7], np.int32)
    ids = np.array([0, 0, 1, 2, 2, 3])
    means, maxes, umax = run([tf.segment_mean(data, ids), tf.segment_max(data, [0, 0, 2, 2, 2, 2]),
                              tf.unsorted_segment_max(data, ids, 5)])
    assert means.dtype == np.int32 and means.tolist() == [1, 4, -3, 7]   # -7 / 2 -> -3, as C
    assert maxes.tolist() == [2, 0, 7]                                   # empty sorted: 0
    assert umax.tolist() == [2, 4, -3, 7, np.iinfo(np.int32).min]       # empty unsorted: lowest


def test_fed_ids_have_an_unknown_row_count_and_empty_input_gives_no_rows():
    ids = tf.placeholder(tf.int32, [None])
    data = tf.placeholder(tf.float64, [None, 3])
    out = tf.segment_sum(data, ids)
    assert out.shape.as_list() == [None, 3]
    assert run(out, {ids: np.zeros(0, np.int32), data: np.zeros((0, 3))}).shape == (0, 3)
    assert run(tf.unsorted_segment_prod(data, ids, 2),
               {ids: np.zeros(0, np.int32), data: np.zeros((0, 3))}).tolist() == [[1.0] * 3] * 2


@pytest.mark.parametrize("ids,message", [
    ([1, 0, 0, 2], "not increasing"),
    ([0, 0, -1, 1], "must be >= 0"),
    ([[0, 0], [1, 1]], "vector"),
    ([0, 0, 1], "one id per row"),
])
def test_bad_constant_ids_fail_when_the_graph_is_built(ids, message):
    with pytest.raises(InvalidArgumentError, match=message):
        tf.segment_sum(np.ones((4, 2), np.float32), np.array(ids, np.int32))


@pytest.mark.parametrize("ids,message", [
    ([1, 0, 0, 2], r"not increasing: segment_ids\[1\] = 0 follows 1"),
    ([0, 0, -1, 1], r"segment_ids\[2\] = -1 is negative"),
    ([0, 0, 1], "same size as dimension 0"),
])
def test_bad_fed_ids_fail_at_run_time(ids, message):
    fed = tf.placeholder(tf.int32, [None])
    with pytest.raises(InvalidArgumentError, match=message):
        run(tf.segment_max(np.ones((4, 2), np.float32), fed), {fed: ids})


def test_unsorted_id_out_of_range_and_bool_data_are_errors():
    with pytest.raises(InvalidArgumentError, match=r"segment_ids\[2\] = 5 is out of range \[0, 3\)"):
        run(tf.unsorted_segment_max(np.ones(4), [0, 0, 5, 1], 3))
    with pytest.raises(TypeError, match="tf.segment_sum: data must be numeric"):
        tf.segment_sum([True, False], [0, 0])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_cumprod_matches_numpy(exclusive, reverse, axis):
    x = np.array([[1.5, 2.0, -3.0], [4.0, 0.0, 0.5]])
    y = np.flip(x, axis) if reverse else x
    expected = np.cumprod(y, axis=axis)
    if exclusive:
        expected = np.concatenate([np.ones_like(np.take(expected, [0], axis)),
                                   np.take(expected, range(y.shape[axis] - 1), axis)], axis)
    expected = np.flip(expected, axis) if reverse else expected
    out = tf.cumprod(x, axis=axis, exclusive=exclusive, reverse=reverse)
    assert out.shape.as_list() == [2, 3] and tf.math.cumprod is tf.cumprod
    np.testing.assert_allclose(run(out), expected)


def test_cumprod_int_and_empty():
    ints, empty = run([tf.cumprod(np.array([2, 3, 4], np.int64), exclusive=True),
                       tf.cumprod(np.zeros((0, 2), np.float32), axis=1)])
    assert ints.dtype == np.int64 and ints.tolist() == [1, 2, 6]
    assert empty.shape == (0, 2)

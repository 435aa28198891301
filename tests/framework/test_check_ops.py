"""The tf.assert_* family: static facts (dtype, rank, two failing constants) raise while the
graph is built, as TF does; the rest fail the step with TF's "assertion failed" message."""

from __future__ import annotations

import pytest

import zmtf as tf


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


@pytest.mark.parametrize("check,bad,good,text", [
    (lambda p: tf.assert_greater_equal(p, 0.), [1., -1.], [0., 2.], r"Condition x >= y"),
    (lambda p: tf.assert_less_equal(p, 0.), [1., -1.], [0., -2.], r"Condition x <= y"),
    (lambda p: tf.assert_none_equal(p, 0.), [1., 0.], [1., 2.], r"Condition x != y"),
    (lambda p: tf.assert_negative(p), [1., -1.], [-1., -2.], r"Condition x < 0"),
    (lambda p: tf.assert_non_positive(p), [1., -1.], [0., -2.], r"Condition x <= 0"),
    (lambda p: tf.assert_positive(p), [0., 1.], [1., 2.], r"Condition x > 0"),
])
def test_dynamic_comparisons(graph, check, bad, good, text):
    p = tf.placeholder(tf.float32, [None])
    op = check(p)
    with tf.Session() as sess:
        sess.run(op, {p: good})
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"assertion failed: \[" + text + r".*\[x \(Placeholder:0\) =\]"):
            sess.run(op, {p: bad})


def test_message_comes_first(graph):
    p = tf.placeholder(tf.float32, [None])
    op = tf.assert_less_equal(p, 0., message="too big")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match=r"assertion failed: \[too big\] \[Condition"):
        sess.run(op, {p: [1.]})


def test_failing_constants_raise_while_building(graph):
    with pytest.raises(tf.errors.InvalidArgumentError, match="Condition x >= y did not hold"):
        tf.assert_greater_equal(tf.constant([1., -2.]), 0.)
    with pytest.raises(tf.errors.InvalidArgumentError, match="Condition x < 0"):
        tf.assert_negative(tf.constant([1]))
    assert tf.assert_greater_equal(tf.constant([1., 2.]), 0.).type == "Assert"


def test_dtype_checks_are_static(graph):
    with pytest.raises(TypeError, match='Expected "x" to be integer type'):
        tf.assert_integer(tf.placeholder(tf.float32))
    assert tf.assert_integer(tf.constant([1])).name == "assert_integer_1/statically_determined_was_integer"
    with pytest.raises(TypeError, match="must be of type tf.int32; got tf.float32"):
        tf.assert_type(tf.constant(1.), tf.int32)
    assert tf.assert_type(tf.constant(1.), tf.float32).type == "NoOp"


def test_scalar_and_static_rank(graph):
    scalar = tf.constant(1.)
    assert tf.assert_scalar(scalar) is scalar
    with pytest.raises(ValueError, match=r"Expected scalar shape for Const_1:0, saw shape: \(2,\)"):
        tf.assert_scalar(tf.constant([1., 2.]))
    vector = tf.constant([1., 2.])
    with pytest.raises(ValueError, match=r"must have rank 2.  Received rank 1, shape \(2,\)"):
        tf.assert_rank(vector, 2)
    with pytest.raises(ValueError, match="must have rank at least 2"):
        tf.assert_rank_at_least(vector, 2)
    assert tf.assert_rank(vector, 1).name == "assert_rank_1/static_checks_determined_all_ok"
    assert tf.assert_rank_at_least(vector, 0).type == "NoOp"


@pytest.mark.parametrize("check,value,ok", [
    (lambda p: tf.assert_rank(p, 2), [[1.]], True),
    (lambda p: tf.assert_rank(p, 2), [1.], False),
    (lambda p: tf.assert_rank_at_least(p, 2), [[[1.]]], True),
    (lambda p: tf.assert_rank_at_least(p, 2), [1.], False),
])
def test_unknown_rank_is_checked_when_run(graph, check, value, ok):
    p = tf.placeholder(tf.float32)
    op = check(p)
    with tf.Session() as sess:
        if ok:
            sess.run(op, {p: value})
        else:
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r"Tensor Placeholder:0 must have rank"):
                sess.run(op, {p: value})

"""The small TF1 names scripts use: division variants, is_inf/rint, where_v2, the table and
local-variable initializers, collections helpers, tf.is_tensor, tf.NotDifferentiable and the
version strings (values checked against TF 2.21's tf.compat.v1)."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf


@pytest.fixture
def sess():
    with tf.Graph().as_default(), tf.Session() as session:
        yield session


def test_divisions(sess):
    x, y = tf.constant([7., -7., 3., 0.]), tf.constant([2., 2., 0., 0.])
    ints, twos = tf.constant([7, -7]), tf.constant([2, 2])
    got = sess.run([tf.div_no_nan(x, y), tf.truncatediv(ints, twos), tf.truncatemod(ints, twos),
                    tf.truncatemod(tf.constant([7.5, -7.5]), 2.), tf.floor_div(ints, 2),
                    tf.truncatediv(x, 2.)])
    expected = [[3.5, -3.5, 0., 0.], [3, -3], [1, -1], [1.5, -1.5], [3, -4], [3., -3., 1., 0.]]
    for value, want in zip(got, expected):
        np.testing.assert_array_equal(value, want)
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal(sess.run(tf.realdiv(x, y)), [3.5, -3.5, np.inf, np.nan])


def test_div_no_nan_casts_integers_and_has_tf_gradient(sess):
    assert tf.div_no_nan(tf.constant([1, 2]), tf.constant([0, 1])).dtype == tf.float64
    x, y = tf.constant([7., -7., 3., 0.]), tf.constant([2., 2., 0., 0.])
    gx, gy = sess.run(tf.gradients(tf.div_no_nan(x, y), [x, y]))
    np.testing.assert_allclose(gx, [0.5, 0.5, 0., 0.])
    np.testing.assert_allclose(gy, [-1.75, 1.75, 0., 0.])


def test_truncatediv_by_integer_zero_fails(sess):
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        sess.run(tf.truncatediv(tf.constant([1]), tf.constant([0])))


def test_is_inf_and_rint(sess):
    inf = float("inf")
    np.testing.assert_array_equal(sess.run(tf.is_inf(tf.constant([1., inf, -inf]))), [0, 1, 1])
    np.testing.assert_array_equal(sess.run(tf.rint(tf.constant([0.5, 1.5, -2.5, 2.7]))),
                                  [0., 2., -2., 3.])


def test_where_v2_broadcasts_and_routes_gradients(sess):
    cond = tf.constant([True, False])
    x, y = tf.constant([[1., 2.], [3., 4.]]), tf.constant(5.)
    out = tf.where_v2(cond, x, y)
    assert out.op.type == "SelectV2" and out.shape.as_list() == [2, 2]
    np.testing.assert_array_equal(sess.run(out), [[1., 5.], [3., 5.]])
    gx, gy = sess.run(tf.gradients(tf.reduce_sum(out), [x, y]))
    np.testing.assert_array_equal(gx, [[1., 0.], [1., 0.]])
    assert gy == 2.0


def test_initializer_aliases_are_named_as_tf(sess):
    assert tf.tables_initializer().name == "init_all_tables"
    assert tf.initialize_all_tables().name == "init_all_tables_1"
    counter = tf.get_local_variable("counter", shape=[2], initializer=tf.zeros_initializer())
    assert counter in tf.local_variables() and counter not in tf.global_variables()
    assert counter not in tf.trainable_variables()
    sess.run([tf.tables_initializer(), tf.initialize_local_variables()])
    np.testing.assert_array_equal(sess.run(counter), [0., 0.])
    assert tf.initialize_variables([]).type == "NoOp"
    assert tf.model_variables() == []


def test_collection_helpers():
    with tf.Graph().as_default():
        tf.add_to_collections(["a", "b"], 3)
        assert tf.get_collection("a") == tf.get_collection("b") == [3]
        tf.get_collection_ref("c").append(5)
        assert tf.get_collection("c") == [5]


def test_is_tensor():
    with tf.Graph().as_default():
        v = tf.Variable(1.0)
        assert tf.is_tensor(tf.constant(1)) and tf.is_tensor(v)
        assert not tf.is_tensor(1) and not tf.is_tensor(np.ones(2))


def test_not_differentiable_blocks_gradients():
    assert tf.NoGradient is tf.NotDifferentiable and tf.OpError is tf.errors.OpError
    from zmtf.framework.gradient_registry import GRADIENTS

    tf.NotDifferentiable("ZmtfTestOnlyOp")
    try:
        assert GRADIENTS["ZmtfTestOnlyOp"] is None
    finally:
        del GRADIENTS["ZmtfTestOnlyOp"]


def test_version_strings():
    assert tf.VERSION == tf.__version__ and tf.GIT_VERSION and tf.COMPILER_VERSION

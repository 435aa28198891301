"""tf.RegisterGradient + graph.gradient_override_map (and tf.custom_gradient, built on them):
ops created inside the map take the registered gradient in tf.gradients."""

import numpy as np
import pytest

import zmtf as tf


@tf.RegisterGradient("ZmtfTestTripleIdentity")
def _triple(op, dy):
    return [3.0 * dy]


@tf.RegisterGradient("ZmtfTestStraightThrough")
def _straight_through(op, dy):
    return [dy] + [None] * (len(op.inputs) - 1)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def run(*tensors):
    with tf.Session() as sess:
        return sess.run(list(tensors))


def test_identity_inside_the_map_takes_the_registered_gradient_and_outside_its_own():
    x = tf.constant([1.0, -2.0])
    g = tf.get_default_graph()
    with g.gradient_override_map({"Identity": "ZmtfTestTripleIdentity"}):
        y = tf.identity(x)
    plain = tf.identity(x)
    assert y.op.get_attr("_gradient_op_type") == "ZmtfTestTripleIdentity"
    loss = tf.reduce_sum(y * x) + tf.reduce_sum(plain)
    # d/dx sum(y*x) = x + 3*x (through y), d/dx sum(plain) = 1
    (grad,) = run(*tf.gradients(loss, [x]))
    np.testing.assert_allclose(grad, 4 * np.array([1.0, -2.0]) + 1)


def test_straight_through_sign():
    x = tf.constant([0.3, -1.5, 2.0])
    w = tf.constant([1.0, 2.0, 3.0])
    with tf.get_default_graph().gradient_override_map({"Sign": "ZmtfTestStraightThrough"}):
        binary = tf.sign(x)
    value, grad = run(tf.reduce_sum(binary * w), tf.gradients(tf.reduce_sum(binary * w), [x])[0])
    assert value == pytest.approx(1 - 2 + 3)
    np.testing.assert_allclose(grad, [1.0, 2.0, 3.0])      # sign's own gradient would be 0


def test_straight_through_a_py_func():
    x = tf.constant([0.4, 1.6, -2.7])
    with tf.get_default_graph().gradient_override_map({"PyFunc": "ZmtfTestStraightThrough"}):
        rounded = tf.py_func(np.round, [x], tf.float32)
    rounded.set_shape(x.shape)
    loss = tf.reduce_sum(rounded * rounded)
    value, grad = run(rounded, tf.gradients(loss, [x])[0])
    np.testing.assert_allclose(value, [0.0, 2.0, -3.0])
    np.testing.assert_allclose(grad, 2 * value)


def test_override_to_an_unregistered_name_names_both():
    x = tf.constant(1.0)
    with tf.get_default_graph().gradient_override_map({"Identity": "ZmtfTestNoSuchGrad"}):
        y = tf.identity(x)
    with pytest.raises(LookupError, match="op type: Identity, overridden to 'ZmtfTestNoSuchGrad'"):
        tf.gradients(y, [x])


def test_registering_a_name_twice_is_a_key_error():
    with pytest.raises(KeyError, match="ZmtfTestTripleIdentity"):
        tf.RegisterGradient("ZmtfTestTripleIdentity")(_triple)


def test_override_map_wants_strings():
    with pytest.raises(TypeError, match="mapping strings to strings"):
        with tf.get_default_graph().gradient_override_map({"Identity": _triple}):
            pass


def test_custom_gradient_replaces_the_gradient_of_the_function():
    @tf.custom_gradient
    def clipped_square(x):
        def grad(dy):
            return tf.clip_by_value(dy * 2.0 * x, -1.0, 1.0)
        return x * x, grad

    x = tf.constant([0.25, 3.0, -4.0])
    y = clipped_square(x)
    value, grad = run(y, tf.gradients(tf.reduce_sum(y), [x])[0])
    np.testing.assert_allclose(value, [0.0625, 9.0, 16.0])
    np.testing.assert_allclose(grad, [0.5, 1.0, -1.0])


def test_custom_gradient_of_two_inputs():
    @tf.custom_gradient
    def product(a, b):
        return a * b, lambda dy: [dy * 10.0, dy * 100.0]

    a, b = tf.constant(2.0), tf.constant(3.0)
    ga, gb = run(*tf.gradients(product(a, b), [a, b]))
    assert (ga, gb) == (10.0, 100.0)

"""variance_scaling, uniform_unit_scaling and orthogonal initializers and tf.initializers:
the bounds and spreads TF 2.21's tf.compat.v1 initializers give for the same shapes, and
orthogonality."""

from __future__ import annotations

import math

import numpy as np
import pytest

import zmtf as tf

SHAPE = [3, 3, 40, 60]            # fan_in 360, fan_out 540
FAN_IN, FAN_OUT = 360, 540


def _sample(init, shape=SHAPE):
    with tf.Graph().as_default(), tf.Session() as sess:
        return sess.run(init(shape, tf.float32))


@pytest.mark.parametrize("init,std,bound", [
    (tf.variance_scaling_initializer(), math.sqrt(1 / FAN_IN), 2 * math.sqrt(1 / FAN_IN) / 0.8796),
    (tf.variance_scaling_initializer(2.0, "fan_avg", "uniform"), math.sqrt(2 / 450),
     math.sqrt(3 * 2 / 450)),
    (tf.variance_scaling_initializer(3.0, "fan_out", "untruncated_normal"), math.sqrt(3 / FAN_OUT),
     None),
    (tf.uniform_unit_scaling_initializer(1.5), 1.5 * math.sqrt(1 / (3 * 3 * 40)),
     1.5 * math.sqrt(3 / (3 * 3 * 40))),
    (tf.initializers.he_normal(), math.sqrt(2 / FAN_IN), None),
])
def test_spread_and_bound(init, std, bound):
    values = _sample(init)
    assert values.shape == tuple(SHAPE) and values.dtype == np.float32
    assert abs(values.std() - std) < 0.03 * std
    if bound is not None:
        assert np.abs(values).max() <= bound * 1.0001
        assert np.abs(values).max() > 0.9 * bound


@pytest.mark.parametrize("shape", [[50, 20], [20, 50], [2, 5, 10]])
def test_orthogonal_rows_or_columns(shape):
    q = _sample(tf.orthogonal_initializer(2.0), shape).reshape(-1, shape[-1]) / 2.0
    gram = q.T @ q if q.shape[0] >= q.shape[1] else q @ q.T
    np.testing.assert_allclose(gram, np.eye(len(gram)), atol=1e-5)


def test_bad_arguments_say_what_to_use():
    with pytest.raises(ValueError, match="fan_in"):
        tf.variance_scaling_initializer(mode="x")
    with pytest.raises(ValueError, match="uniform"):
        tf.variance_scaling_initializer(distribution="x")
    with pytest.raises(ValueError, match="at least two-dimensional"):
        tf.orthogonal_initializer()([3], tf.float32)


def test_initializers_namespace():
    assert isinstance(tf.initializers.glorot_uniform(), tf.glorot_uniform_initializer)
    with tf.Graph().as_default():
        v = tf.get_variable("v", [4, 4], initializer=tf.initializers.orthogonal())
        assert tf.initializers.global_variables().name == "init"
        assert tf.initializers.tables_initializer().name == "init_all_tables"
        with tf.Session() as sess:
            sess.run(tf.initializers.variables([v]))
            value = sess.run(v)
    np.testing.assert_allclose(value.T @ value, np.eye(4), atol=1e-5)


def test_qr_reconstructs():
    a = np.array([[1., 2.], [3., 4.], [5., 6.]])
    with tf.Graph().as_default(), tf.Session() as sess:
        q, r = sess.run(tf.qr(tf.constant(a)))
    assert q.shape == (3, 2) and r.shape == (2, 2)
    np.testing.assert_allclose(q @ r, a)
    np.testing.assert_allclose(np.tril(r, -1), 0)

"""tf.cond: only the taken branch runs (side effects included), gradients, nesting, errors."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports


def test_value_and_gradient_follow_the_predicate():
    x = tf.placeholder(tf.float64, [3])
    p = tf.placeholder(tf.bool, [])
    y = tf.cond(p, lambda: tf.reduce_sum(x * x), lambda: tf.reduce_sum(x) * 2.0)
    (g,) = tf.gradients(y, [x])
    data = np.array([1.0, 2.0, 3.0])
    with tf.Session() as sess:
        value, grad = sess.run([y, g], {x: data, p: True})
        assert value == 14.0 and grad.tolist() == [2.0, 4.0, 6.0]
        value, grad = sess.run([y, g], {x: data, p: False})
        assert value == 12.0 and grad.tolist() == [2.0, 2.0, 2.0]


def test_only_the_taken_branch_runs_its_side_effects():
    v = tf.Variable(0.0)
    p = tf.placeholder(tf.bool, [])
    out = tf.cond(p, lambda: tf.identity(v.assign_add(1.0)), lambda: tf.identity(v.assign_sub(10.0)))
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(out, {p: True}) == 1.0
        assert sess.run(out, {p: True}) == 2.0
        assert sess.run(out, {p: False}) == -8.0
        assert sess.run(v) == -8.0


def test_structures_constants_nesting_and_training_through_a_cond():
    p = tf.placeholder(tf.bool, [])
    q = tf.placeholder(tf.bool, [])
    x = tf.placeholder(tf.float32, [None, 2])
    pair = tf.cond(p, lambda: (tf.constant(1.0), {"k": x * 2.0}), lambda: (tf.constant(-1.0), {"k": x}))
    nested = tf.cond(p, lambda: tf.cond(q, lambda: x + 1.0, lambda: x + 2.0), lambda: x + 3.0)
    w = tf.Variable([[1.0], [1.0]])
    loss = tf.reduce_sum(tf.cond(p, lambda: tf.matmul(x, w), lambda: tf.matmul(x, w) * 0.5))
    step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    data = np.array([[1.0, 2.0]], np.float32)
    with tf.Session() as sess:
        sess.run(w.initializer)
        sign, parts = sess.run(pair, {p: False, x: data})
        assert sign == -1.0 and parts["k"].tolist() == [[1.0, 2.0]]
        assert sess.run(nested, {p: True, q: False, x: data}).tolist() == [[3.0, 4.0]]
        assert sess.run(nested, {p: False, q: True, x: data}).tolist() == [[4.0, 5.0]]
        sess.run(step, {p: False, x: data})               # d loss / d w = 0.5 * x
        np.testing.assert_allclose(sess.run(w), [[0.95], [0.9]])


def test_errors_name_the_fix():
    p = tf.placeholder(tf.bool, [])
    x = tf.constant(1.0)
    with pytest.raises(TypeError, match="pred must be a bool tensor"):
        tf.cond(tf.constant(1.0), lambda: x, lambda: x)
    with pytest.raises(ValueError, match="same structure"):
        tf.cond(p, lambda: (x, x), lambda: x)
    with pytest.raises(ValueError, match="must return tensors"):
        tf.cond(p, lambda: tf.no_op(), lambda: tf.no_op())
    inside = []
    out = tf.cond(p, lambda: inside.append(x * 5.0) or inside[0], lambda: x)
    with tf.Session() as sess:
        assert sess.run(out, {p: False}) == 1.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="does not have value"):
            sess.run(inside[0], {p: False})                # a tensor of the branch not taken
        assert sess.run(inside[0], {p: True}) == 5.0


def test_a_dead_value_crossing_tasks_is_a_typed_error_not_a_hang():
    ports = free_tcp_ports(2)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    servers = [tf.train.Server(cluster, job, 0) for job in ("ps", "worker")]
    try:
        p = tf.placeholder(tf.bool, [])
        with tf.device("/job:worker/task:0"):
            x = tf.constant(2.0)

            def on_ps():
                with tf.device("/job:ps/task:0"):
                    return x * 10.0

            y = tf.cond(p, on_ps, lambda: x)
        with tf.Session(servers[1].target) as sess:
            assert sess.run(y, {p: True}) == 20.0           # live values cross tasks
            with pytest.raises(tf.errors.UnimplementedError, match="keeps a cond's values on one task"):
                sess.run(y, {p: False}, options=tf.RunOptions(timeout_in_ms=20000))
    finally:
        for server in servers:
            server.stop()

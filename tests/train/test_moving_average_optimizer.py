"""tf.contrib.opt.MovingAverageOptimizer: the wrapped optimizer's step, then the average
(avg = decay * avg + (1 - decay) * var, with the updated var when sequential_update), and a
swapping saver whose checkpoint holds the averages under the variables' names."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.contrib.opt import MovingAverageOptimizer
from zmtf.testing import running_servers

LR, DECAY = 0.5, 0.75
COEF = np.array([0.1, -0.2], np.float32)   # loss = sum(v * COEF): the gradient is COEF


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def build(sequential_update=True, num_updates=None):
    v = tf.Variable([1.0, 2.0], name="v")
    opt = MovingAverageOptimizer(tf.train.GradientDescentOptimizer(LR), average_decay=DECAY,
                                 num_updates=num_updates, sequential_update=sequential_update)
    train = opt.minimize(tf.reduce_sum(v * COEF))
    return v, opt, train


def numpy_steps(steps, sequential=True, num_updates=None):
    var = np.array([1.0, 2.0])
    avg = var.copy()
    decay = DECAY if num_updates is None else min(DECAY, (1 + num_updates) / (10 + num_updates))
    for _ in range(steps):
        new = var - LR * COEF
        avg = decay * avg + (1 - decay) * (new if sequential else var)
        var = new
    return var, avg


@pytest.mark.parametrize("sequential", [True, False])
def test_average_follows_the_variable(sequential):
    v, opt, train = build(sequential_update=sequential)
    assert train.name == "train_with_avg"
    assert opt._ema.average(v).name == "v/ExponentialMovingAverage:0"
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train)
        var, avg = sess.run([v, opt._ema.average(v)])
    want_var, want_avg = numpy_steps(3, sequential)
    np.testing.assert_allclose(var, want_var, rtol=1e-6)
    np.testing.assert_allclose(avg, want_avg, rtol=1e-6)


def test_num_updates_caps_the_decay():
    v, opt, train = build(num_updates=2)          # min(0.75, 3 / 12) = 0.25
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(train)
        avg = sess.run(opt._ema.average(v))
    np.testing.assert_allclose(avg, numpy_steps(2, num_updates=2)[1], rtol=1e-6)


def test_compute_gradients_and_slots_delegate():
    v = tf.Variable([1.0, 2.0], name="v")
    inner = tf.train.MomentumOptimizer(LR, 0.9)
    opt = MovingAverageOptimizer(inner)
    [(grad, var)] = opt.compute_gradients(tf.reduce_sum(v * COEF))
    opt.apply_gradients([(grad, var)])
    assert var is v and opt.get_slot_names() == ["momentum"]
    assert opt.get_slot(v, "momentum") is inner.get_slot(v, "momentum")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(grad), COEF)


def test_swapping_saver_round_trip_restores_averages_into_variables(tmp_path):
    v, opt, train = build()
    other = tf.Variable(7.0, name="other", trainable=False)
    saver = opt.swapping_saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(2):
            sess.run(train)
        trained, averaged = sess.run([v, opt._ema.average(v)])
        path = saver.save(sess, str(tmp_path / "model"))
        stored = dict(tf.train.list_variables(path))
        assert set(stored) == {"v", "v/ExponentialMovingAverage", "other"}
        sess.run(tf.global_variables_initializer())
        tf.train.Saver().restore(sess, path)        # a plain saver: v gets the average
        np.testing.assert_allclose(sess.run(v), averaged)
        np.testing.assert_allclose(sess.run(opt._ema.average(v)), trained)
        assert sess.run(other) == 7.0
        sess.run(tf.global_variables_initializer())
        saver.restore(sess, path)                   # the swapping saver swaps back
        np.testing.assert_allclose(sess.run(v), trained)
    np.testing.assert_allclose(averaged, numpy_steps(2)[1], rtol=1e-6)


def test_swapping_saver_errors():
    v = tf.Variable([1.0, 2.0], name="v")
    opt = MovingAverageOptimizer(tf.train.GradientDescentOptimizer(LR))
    with pytest.raises(RuntimeError, match="apply_gradients or minimize"):
        opt.swapping_saver()
    opt.minimize(tf.reduce_sum(v))
    with pytest.raises(ValueError, match="v/ExponentialMovingAverage is not part of variables"):
        opt.swapping_saver(var_list=[v])


def test_on_a_cluster_with_variables_on_the_ps():
    with running_servers({"ps": 1, "worker": 1}) as servers:
        spec = tf.train.ClusterSpec(servers[("ps", 0)]._core.cluster.as_dict())
        with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0",
                                                      cluster=spec)):
            v, opt, train = build()
        average = opt._ema.average(v)
        assert v.device == average.device == "/job:ps/task:0"
        with tf.Session(servers[("worker", 0)].target) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(train)
            var, avg = sess.run([v, average])
    want_var, want_avg = numpy_steps(3)
    np.testing.assert_allclose(var, want_var, rtol=1e-6)
    np.testing.assert_allclose(avg, want_avg, rtol=1e-6)

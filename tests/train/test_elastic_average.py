"""tf.contrib.opt.ElasticAverageOptimizer: the elastic update against numpy (one process),
the variables and collections users see, and the hook's init."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.contrib.opt import ElasticAverageCustomGetter, ElasticAverageOptimizer

@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


C = np.array([0.5, -1.5], np.float32)


def build(period=3, moving_rate=0.2, rho=0.1, lr=0.1, make_opt=None):
    getter = ElasticAverageCustomGetter("")
    with tf.variable_scope("", custom_getter=getter):
        w = tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
    step = tf.train.get_or_create_global_step()
    inner = make_opt() if make_opt else tf.train.GradientDescentOptimizer(lr)
    opt = ElasticAverageOptimizer(inner, num_worker=1, ea_custom_getter=getter,
                                  communication_period=period, moving_rate=moving_rate, rho=rho)
    loss = tf.reduce_sum(w * C)
    train = opt.minimize(loss, global_step=step)
    return opt, w, step, train, getter


def numpy_easgd(steps, period=3, alpha=0.2, rho=0.1, lr=0.1):
    w = np.array([1.0, 2.0])
    lc, gc, gs = w.copy(), w.copy(), 0
    for local_step in range(1, steps + 1):
        w = w - lr * (C + rho * (w - lc))
        if local_step % period == 0:
            lc = gc.copy()
            d = w - lc
            w, gc, gs = w - alpha * d, gc + alpha * d, gs + 1
    return w, lc, gc, gs


def test_names_collections_and_devices_users_see():
    with tf.device("/job:ps/task:0"):
        getter = ElasticAverageCustomGetter("/job:worker/task:1")
        with tf.variable_scope("net", custom_getter=getter):
            w = tf.get_variable("w", [2], initializer=tf.zeros_initializer())
            counter = tf.get_variable("counter", [], trainable=False,
                                      collections=[tf.GraphKeys.LOCAL_VARIABLES])
    assert w.op.name == "net/w" and w.device == "/job:worker/task:1"
    assert [v.op.name for v in tf.global_variables()] == ["global_center_variable/net/w"]
    assert tf.global_variables()[0].device == "/job:ps/task:0"
    assert [v.op.name for v in tf.local_variables()] == [
        "net/w", "local_center_variable/net/w", "net/counter"]
    assert tf.local_variables()[1].device == counter.device == "/job:worker/task:1"
    assert tf.trainable_variables() == [w]


@pytest.mark.parametrize("steps", [2, 3, 7])
def test_updates_match_numpy(steps):
    opt, w, step, train, getter = build()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        for _ in range(steps):
            sess.run(train)
        got = sess.run([w, getter._local_map[w], getter._global_map[w], step, opt._local_step])
    want_w, want_lc, want_gc, want_gs = numpy_easgd(steps)
    np.testing.assert_allclose(got[0], want_w, rtol=1e-6)
    np.testing.assert_allclose(got[1], want_lc, rtol=1e-6)
    np.testing.assert_allclose(got[2], want_gc, rtol=1e-6)
    assert (got[3], got[4]) == (want_gs, steps)


def test_defaults_follow_the_paper():
    opt, *_ = build(period=4, moving_rate=None, rho=None, lr=0.5)
    assert opt._moving_rate == pytest.approx(0.9 / 4 / 1)
    assert opt._rho == pytest.approx(0.9 / 4 / 0.5)


def test_optimizer_variables_become_local():
    build(make_opt=lambda: tf.train.AdamOptimizer(0.1))
    assert [v.op.name for v in tf.global_variables()] == ["global_center_variable/w", "global_step"]
    assert {"beta1_power", "beta2_power", "w/Adam", "w/Adam_1"} <= {
        v.op.name for v in tf.local_variables()}


def test_hook_sets_local_copies_to_the_centre_and_swapping_saver_writes_the_centre(tmp_path):
    opt, w, step, train, getter = build()
    hook = opt.make_session_run_hook(is_chief=True, task_index=0)
    hook.begin()
    saver = opt.swapping_saver()
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        sess.run(getter._global_map[w].assign([5.0, 6.0]))
        hook.after_create_session(sess, None)
        np.testing.assert_array_equal(sess.run([w, getter._local_map[w]]), [[5, 6], [5, 6]])
        sess.run(w.assign([0.0, 0.0]))
        path = saver.save(sess, str(tmp_path / "model"))
    assert dict(tf.train.list_variables(path))["w"] == [2]
    np.testing.assert_array_equal(tf.train.load_variable(path, "w"), [5.0, 6.0])


def test_variable_not_made_by_the_getter_is_named():
    getter = ElasticAverageCustomGetter("")
    opt = ElasticAverageOptimizer(tf.train.GradientDescentOptimizer(0.1), 1, getter,
                                  moving_rate=0.1, rho=0.1)
    v = tf.Variable(1.0, name="plain")
    with pytest.raises(ValueError, match="plain was not created through the ElasticAverageCustomGetter"):
        opt.minimize(v * 2.0)
    with pytest.raises(ValueError, match="should not be empty"):
        opt.get_init_op(0)

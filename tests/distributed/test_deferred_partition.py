"""A master partition that only waits for other tasks' replies starts after them, fed with
their values: it runs no _Recv (the worker's rendezvous is never asked), and what it
computes is what a local session computes."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import running_servers


@pytest.fixture
def two_tasks():
    """[ps, worker] servers on tcp://127.0.0.1."""
    tf.reset_default_graph()
    with running_servers() as servers:
        yield [servers[("ps", 0)], servers[("worker", 0)]]


def recvs_on(server):
    """The rendezvous keys the server's worker is asked for from now on (its _Recv kernels)."""
    rendezvous = server._core.worker.rendezvous
    asked, recv = [], rendezvous.recv

    def counting(step_id, key, done):
        asked.append(key)
        return recv(step_id, key, done)

    rendezvous.recv = counting
    return asked


def test_a_waiting_partition_runs_fed_with_the_replies(two_tasks):
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(np.arange(4, dtype=np.float32), name="a")
        scale = tf.Variable(3.0, name="scale")
    with tf.device("/job:worker/task:0"):
        x = tf.placeholder(tf.float32, [4], name="x")
        b = a * scale + x
    with tf.Session(two_tasks[1].target) as sess:
        sess.run(tf.global_variables_initializer())
        asked = recvs_on(two_tasks[1])
        feed = np.full(4, 0.5, np.float32)
        for _ in range(3):   # the first run binds; later ones take the cached path
            np.testing.assert_array_equal(sess.run(b, {x: feed}), np.arange(4) * 3.0 + 0.5)
        sess.run(scale.assign(-1.0))
        np.testing.assert_array_equal(sess.run(b, {x: feed}), -np.arange(4) + 0.5)
    assert asked == []


def test_a_partition_that_sends_still_starts_at_once(two_tasks):
    """The ps's update waits for the worker's value: deferring the worker would deadlock."""
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones(3, np.float32), name="w")
    with tf.device("/job:worker/task:0"):
        grad = tf.multiply(w, 2.0, name="grad")
    with tf.device("/job:ps/task:0"):
        update = tf.assign_sub(w, grad)
    with tf.Session(two_tasks[1].target) as sess:
        sess.run(w.initializer)
        asked = recvs_on(two_tasks[1])
        np.testing.assert_array_equal(sess.run(update), -np.ones(3))
    assert len(asked) == 1 and asked[0].startswith("w/read:0;/job:ps/")


def test_an_error_on_the_replying_task_fails_the_step_without_starting_the_waiting_one(two_tasks):
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(1.0, name="a")
        checked = tf.debugging.check_numerics(a / 0.0 * 0.0, "a went bad")
    with tf.device("/job:worker/task:0"):
        b = checked + 2.0
    with tf.Session(two_tasks[1].target) as sess:
        sess.run(a.initializer)
        with pytest.raises(tf.errors.InvalidArgumentError, match="a went bad"):
            sess.run(b)
        assert sess.run(a + 1.0) == 2.0   # the session still serves

"""QueueRunner and Coordinator on a local Session: fill a queue from threads, stop cleanly."""

from __future__ import annotations

import threading

import pytest

import zmtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_queue_runner_fills_a_queue_until_the_session_closes():
    q = tf.FIFOQueue(4, tf.int64, shapes=[[]])
    counter = tf.Variable(0, dtype=tf.int64)
    enqueue = q.enqueue(counter.assign_add(1))
    tf.train.add_queue_runner(tf.train.QueueRunner(q, [enqueue]))
    dequeue = q.dequeue()
    sess = tf.Session()
    sess.run(tf.global_variables_initializer())
    coord = tf.train.Coordinator()
    threads = tf.train.start_queue_runners(sess, coord)
    assert [sess.run(dequeue) for _ in range(6)] == [1, 2, 3, 4, 5, 6]
    coord.request_stop()
    sess.close()                      # the runner waits in a full queue: closing releases it
    coord.join(threads, stop_grace_period_secs=5)
    assert not any(t.is_alive() for t in threads)


def test_a_closed_queue_ends_the_runner_and_other_errors_reach_join():
    q = tf.FIFOQueue(2, tf.float32, shapes=[[]])
    x = tf.placeholder(tf.float32, [])
    with tf.Session() as sess:
        sess.run(q.close())
        runner = tf.train.QueueRunner(q, [q.enqueue(1.0)])
        coord = tf.train.Coordinator()
        threads = runner.create_threads(sess, coord, start=True)
        coord.join(threads, stop_grace_period_secs=5)      # CancelledError: a clean end
        failing = tf.train.QueueRunner(tf.FIFOQueue(2, tf.float32, shapes=[[]]),
                                       [tf.FIFOQueue(2, tf.float32).enqueue(x)])
        coord = tf.train.Coordinator()
        threads = failing.create_threads(sess, coord, start=True)   # x is never fed
        with pytest.raises(tf.errors.InvalidArgumentError):
            coord.join(threads, stop_grace_period_secs=5)


def test_coordinator_keeps_the_first_error_and_names_live_threads():
    coord = tf.train.Coordinator()
    with coord.stop_on_exception():
        raise ValueError("first")
    coord.request_stop(RuntimeError("second"))
    with pytest.raises(ValueError, match="first"):
        coord.join([])
    coord = tf.train.Coordinator()
    stuck = threading.Event()
    thread = threading.Thread(target=stuck.wait, name="stuck-thread", daemon=True)
    thread.start()
    coord.request_stop()
    with pytest.raises(RuntimeError, match="stuck-thread"):
        coord.join([thread], stop_grace_period_secs=0.05)
    stuck.set()

"""A queue on a ps task, used from workers: a waiting dequeue is released by the step's
deadline, by closing its session from another thread, and by tf.Session.reset."""

from __future__ import annotations

import asyncio
import threading

import pytest

import zmtf as tf
from zmtf.testing import local_cluster


def queue_graph():
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:ps/task:0"):
        q = tf.FIFOQueue(-1, tf.int32, shapes=[[]], shared_name="jobs")
        ops = {"enqueue": q.enqueue(3), "dequeue": q.dequeue(), "size": q.size()}
    return graph, ops


def waiting_dequeue(sess, dequeue):
    box: list = []

    def work():
        try:
            box.append(sess.run(dequeue))
        except Exception as error:  # noqa: BLE001 - inspected by the test
            box.append(error)

    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    thread.join(0.2)
    assert thread.is_alive()
    return thread, box


def deadline_then_element(cluster):
    graph, ops = queue_graph()
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        with pytest.raises(tf.errors.DeadlineExceededError):
            sess.run(ops["dequeue"], options=tf.RunOptions(timeout_in_ms=150))
        sess.run(ops["enqueue"])
        assert sess.run(ops["size"]) == 1        # the aborted dequeue left no waiter on the ps
        assert sess.run(ops["dequeue"]) == 3


def close_from_another_thread(cluster):
    graph, ops = queue_graph()
    sess = tf.Session(cluster.target("worker", 0), graph=graph)
    thread, box = waiting_dequeue(sess, ops["dequeue"])
    sess.close()
    thread.join(5)
    assert isinstance(box[0], tf.errors.CancelledError), box
    with tf.Session(cluster.target("worker", 1), graph=graph) as other:
        other.run(ops["enqueue"])
        assert other.run(ops["size"]) == 1


def close_a_warm_step_from_another_thread(cluster):
    """As above, for a signature that ran before (the master's step is then no task)."""
    graph, ops = queue_graph()
    sess = tf.Session(cluster.target("worker", 0), graph=graph)
    sess.run(ops["enqueue"])
    assert sess.run(ops["dequeue"]) == 3
    thread, box = waiting_dequeue(sess, ops["dequeue"])
    sess.close()
    thread.join(5)
    assert isinstance(box[0], tf.errors.CancelledError) and "closed" in str(box[0]), box


def reset_cancels_waiters(cluster):
    graph, ops = queue_graph()
    with tf.Session(cluster.target("worker", 0), graph=graph) as sess:
        thread, box = waiting_dequeue(sess, ops["dequeue"])
        tf.Session.reset(cluster.target("worker", 1))
        thread.join(5)
        assert isinstance(box[0], tf.errors.CancelledError) and "reset" in str(box[0]), box
        sess.run(ops["enqueue"])                  # a fresh queue, made again on first use
        assert sess.run(ops["size"]) == 1


@pytest.mark.parametrize("scenario", [deadline_then_element, close_from_another_thread,
                                      close_a_warm_step_from_another_thread, reset_cancels_waiters])
async def test_waiting_dequeue_on_a_ps_is_released(scenario):
    # Session.reset is refused unless the servers allow it (the op policy)
    settings = {"allow_reset": True} if scenario is reset_cancels_waiters else {}
    async with local_cluster({"ps": 1, "worker": 2}, **settings) as cluster:
        await asyncio.wait_for(asyncio.to_thread(scenario, cluster), 20)

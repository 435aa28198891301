"""Queues of tf.string components (FIFO and RandomShuffle), and string_input_producer's queue
of file names: every name once per epoch, shuffled per epoch unless shuffle=False."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import running_servers


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def drain(sess, fetch):
    out = []
    try:
        while True:
            out.append(sess.run(fetch))
    except tf.errors.OutOfRangeError:
        return out


def test_a_fifo_queue_holds_strings_beside_numbers():
    queue = tf.FIFOQueue(10, [tf.string, tf.int32], shapes=[[], []])
    one = queue.enqueue([b"a", 1])
    many = queue.enqueue_many([["b", "c", "d"], [2, 3, 4]])
    name, number = queue.dequeue()
    names, numbers = queue.dequeue_many(2)
    assert name.dtype == tf.string and names.shape.as_list() == [2]
    with tf.Session() as sess:
        sess.run(one)
        sess.run(many)
        assert sess.run([name, number]) == [b"a", 1]
        batch = sess.run([names, numbers])
        assert batch[0].tolist() == [b"b", b"c"] and batch[1].tolist() == [2, 3]
        sess.run(queue.close())
        assert sess.run(queue.dequeue_up_to(5))[0].tolist() == [b"d"]


def test_a_random_shuffle_queue_mixes_string_rows_and_keeps_them_whole():
    rows = [[f"r{i}", f"s{i}"] for i in range(20)]
    queue = tf.RandomShuffleQueue(30, 0, [tf.string], shapes=[[2]], seed=7)
    fill = queue.enqueue_many([rows])
    close = queue.close()
    taken = queue.dequeue_up_to(8)
    with tf.Session() as sess:
        sess.run([fill])
        sess.run(close)
        out = np.concatenate(drain(sess, taken)).tolist()
    assert sorted(out) == sorted([[r.encode(), s.encode()] for r, s in rows])
    assert out != [[r.encode(), s.encode()] for r, s in rows]
    assert all(r[1:] == s[1:] for r, s in out)


def test_string_input_producer_gives_every_name_once_per_epoch_in_order():
    names = ["a", "b", "c"]
    queue = tf.train.string_input_producer(names, num_epochs=2, shuffle=False)
    name = queue.dequeue()
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        got = drain(sess, name)
        coord.request_stop()
        coord.join(threads)
    assert got == [b"a", b"b", b"c"] * 2


def test_string_input_producer_shuffles_each_epoch_on_its_own():
    names = [f"f{i}" for i in range(12)]
    queue = tf.train.string_input_producer(names, num_epochs=3, shuffle=True, seed=5)
    name = queue.dequeue()
    with tf.train.MonitoredSession() as sess:
        got = [sess.run(name) for _ in range(36)]
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(name)
    epochs = [got[i:i + 12] for i in (0, 12, 24)]
    assert all(sorted(e) == sorted(n.encode() for n in names) for e in epochs)
    assert epochs[0] != epochs[1] and [n.encode() for n in names] not in epochs


def test_string_input_producer_refuses_an_empty_list_and_an_empty_tensor():
    with pytest.raises(ValueError, match="requires a non-null input tensor"):
        tf.train.string_input_producer([])
    names = tf.placeholder(tf.string, [None])
    tf.train.string_input_producer(names, num_epochs=1)
    enqueue = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)[0].enqueue_ops[0]
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"assertion failed: \[string_input_producer requires a non-null"):
            sess.run(enqueue, {names: []})


def test_a_string_queue_on_a_ps_is_fed_and_read_from_a_worker():
    with running_servers() as servers:
        with tf.device("/job:ps/task:0"):
            queue = tf.FIFOQueue(10, [tf.string], shapes=[[]], shared_name="names")
        with tf.device("/job:worker/task:0"):
            names = tf.string_join([tf.constant(["x", "yy"]), tf.constant("!")])
        fill = queue.enqueue_many([names])
        taken = queue.dequeue_many(2)
        with tf.Session(servers[("worker", 0)].target) as sess:
            sess.run(fill)
            assert sess.run(queue.size()) == 2
            assert sess.run(taken).tolist() == [b"x!", b"yy!"]

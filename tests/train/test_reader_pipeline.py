"""The classic TF1 input pipeline over files (string_input_producer -> TFRecordReader ->
parse_single_example -> shuffle_batch) training a linear model until the epochs run out,
locally and with the queues and readers on a worker of a tcp cluster; batch_join with two
readers feeding one queue."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import running_servers

TRUE_W = np.float32([2.0, -1.0])
FEATURES = {"x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([], tf.float32),
            "id": tf.FixedLenFeature([], tf.int64)}


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def write_examples(path, rows, first_id):
    x = np.random.default_rng(first_id).normal(size=(rows, 2)).astype(np.float32)
    with tf.python_io.TFRecordWriter(str(path)) as writer:
        for i in range(rows):
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=x[i])),
                "y": tf.train.Feature(float_list=tf.train.FloatList(value=[x[i] @ TRUE_W])),
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[first_id + i])),
            })).SerializeToString())
    return str(path)


@pytest.fixture
def files(tmp_path):
    return [write_examples(tmp_path / "a.tfrecord", 24, 0),
            write_examples(tmp_path / "b.tfrecord", 16, 100)]


def read_examples(filename_queue):
    _, serialized = tf.TFRecordReader().read(filename_queue)
    features = tf.parse_single_example(serialized, FEATURES)
    return [features["x"], features["y"], features["id"]]


def linear_model(xs, ys):
    w = tf.Variable(np.zeros(2, np.float32), name="w")
    loss = tf.reduce_mean(tf.square(tf.reduce_sum(xs * w, axis=1) - ys))
    global_step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=global_step)
    return w, loss, train


def train_until_the_epochs_end(fetches, target=""):
    """MonitoredTrainingSession runs the queue runners and stops at OutOfRangeError."""
    fetched = []
    with tf.train.MonitoredTrainingSession(master=target) as sess:
        while not sess.should_stop():
            fetched.append(sess.run(fetches))
    return fetched


def build_pipeline(files, epochs):
    filename_queue = tf.train.string_input_producer(files, num_epochs=epochs, shuffle=True,
                                                    seed=1)
    xs, ys, ids = tf.train.shuffle_batch(read_examples(filename_queue), batch_size=4,
                                         capacity=50, min_after_dequeue=10, seed=2)
    assert xs.shape.as_list() == [4, 2] and ids.shape.as_list() == [4]
    return xs, ys, ids


def test_the_pipeline_trains_a_linear_model_until_its_epochs_end(files):
    xs, ys, ids = build_pipeline(files, epochs=6)
    w, loss, train = linear_model(xs, ys)
    steps = train_until_the_epochs_end({"train": train, "loss": loss, "ids": ids, "w": w})
    assert len(steps) == 40 * 6 // 4        # every example of every epoch, in whole batches
    seen = np.concatenate([s["ids"] for s in steps])
    assert sorted(seen.tolist()) == sorted(list(range(24)) * 6 + list(range(100, 116)) * 6)
    assert steps[-1]["loss"] < 1e-2 and steps[0]["loss"] > 20 * steps[-1]["loss"]   # the first batch is a random one
    np.testing.assert_allclose(steps[-1]["w"], TRUE_W, atol=0.1)


def test_the_pipeline_runs_with_queues_and_readers_on_a_tcp_worker(files):
    # the op policy: the servers read files for graphs from the network under this root only
    with running_servers(file_root=os.path.dirname(files[0])) as servers:
        with tf.device("/job:worker/task:0"):
            xs, ys, ids = build_pipeline(files, epochs=5)
        with tf.device("/job:ps/task:0"):
            w, loss, train = linear_model(xs, ys)
        steps = train_until_the_epochs_end({"train": train, "loss": loss, "ids": ids},
                                           servers[("ps", 0)].target)
    assert len(steps) == 40 * 5 // 4
    assert steps[-1]["loss"] < 5e-2 and steps[0]["loss"] > 5 * steps[-1]["loss"]
    seen = np.concatenate([s["ids"] for s in steps])
    assert sorted(seen.tolist()) == sorted(list(range(24)) * 5 + list(range(100, 116)) * 5)


def test_batch_join_feeds_one_queue_from_two_readers(files):
    filename_queue = tf.train.string_input_producer(files, num_epochs=1, shuffle=False)
    examples = [read_examples(filename_queue) for _ in range(2)]   # two readers, one queue
    xs, ys, ids = tf.train.batch_join(examples, batch_size=6, allow_smaller_final_batch=True)
    assert ids.shape.as_list() == [None] and xs.shape.as_list() == [None, 2]
    runners = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert len(runners[-1].enqueue_ops) == 2
    with tf.train.MonitoredSession() as sess:
        batches = []
        while not sess.should_stop():
            batches.append(sess.run([xs, ys, ids]))
    seen = np.concatenate([b[2] for b in batches]).tolist()
    assert sorted(seen) == list(range(24)) + list(range(100, 116))
    assert [len(b[2]) for b in batches] == [6] * 6 + [4]
    for x, y, _ in batches:
        np.testing.assert_allclose(x @ TRUE_W, y, rtol=1e-5, atol=1e-6)


def test_shuffle_batch_join_checks_the_sets_agree():
    a = [tf.constant(1.0), tf.constant([1, 2])]
    with pytest.raises(ValueError, match="at least one set"):
        tf.train.shuffle_batch_join([], 4, 20, 5)
    with pytest.raises(TypeError, match="Expected types to be consistent: float32, int32 vs."):
        tf.train.shuffle_batch_join([a, [tf.constant(2.0), tf.constant([1.0, 2.0])]], 4, 20, 5)
    with pytest.raises(ValueError, match="hold 2 tensors, one holds 1"):
        tf.train.batch_join([a, [tf.constant(2.0)]], 4)
    with tf.Graph().as_default():
        sets = [[tf.constant(1.0), tf.constant([1, 2])], [tf.constant(2.0), tf.constant([3, 4])]]
        x, y = tf.train.shuffle_batch_join(sets, 4, 20, 5)
    assert x.op.name == "shuffle_batch_join" and y.shape.as_list() == [4, 2]


def test_four_runner_threads_sharing_one_reader_read_every_record_once(tmp_path):
    files = [write_examples(tmp_path / f"{i}.tfrecord", 7, 10 * i) for i in range(6)]
    filename_queue = tf.train.string_input_producer(files, num_epochs=2, shuffle=True)
    xs, ys, ids = tf.train.batch(read_examples(filename_queue), batch_size=5, num_threads=4,
                                 capacity=8, allow_smaller_final_batch=True)
    with tf.train.MonitoredSession() as sess:
        seen = []
        while not sess.should_stop():
            seen.extend(sess.run(ids).tolist())
    assert sorted(seen) == sorted([10 * i + k for i in range(6) for k in range(7)] * 2)

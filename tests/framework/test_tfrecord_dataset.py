"""tf.data.TFRecordDataset: TF1's canonical input pipeline (records -> parse -> shuffle ->
batch) training a linear model, locally and with the iterator on a worker of a tcp cluster."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import running_servers

FEATURES = {"x": tf.FixedLenFeature([2], tf.float32), "y": tf.FixedLenFeature([1], tf.float32),
            "id": tf.FixedLenFeature([], tf.int64), "tag": tf.FixedLenFeature([], tf.string)}
TRUE_W = np.float32([[2.0], [-1.0]])


def write_examples(path, rows, first_id=0):
    """``rows`` rows of (x, y = x @ TRUE_W) as Examples; returns their ids in file order."""
    x = np.random.default_rng(first_id).normal(size=(rows, 2)).astype(np.float32)
    y = x @ TRUE_W
    with tf.python_io.TFRecordWriter(str(path)) as writer:
        for i in range(rows):
            writer.write(tf.train.Example(features=tf.train.Features(feature={
                "x": tf.train.Feature(float_list=tf.train.FloatList(value=x[i])),
                "y": tf.train.Feature(float_list=tf.train.FloatList(value=y[i])),
                "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[first_id + i])),
                "tag": tf.train.Feature(bytes_list=tf.train.BytesList(value=[f"r{first_id + i}".encode()])),
            })).SerializeToString())
    return list(range(first_id, first_id + rows))


def drain(sess, fetches):
    out = []
    while True:
        try:
            out.append(sess.run(fetches))
        except tf.errors.OutOfRangeError:
            return out


def test_records_come_file_after_file_as_scalar_strings(tmp_path):
    write_examples(tmp_path / "a.tfrecord", 3)
    write_examples(tmp_path / "b.tfrecord", 2, first_id=100)
    files = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    record = tf.data.TFRecordDataset(files).make_one_shot_iterator().get_next()
    assert record.dtype == tf.string and record.shape.as_list() == []
    with tf.Session() as sess:
        records = drain(sess, record)
    expected = list(tf.python_io.tf_record_iterator(files[0])) + \
        list(tf.python_io.tf_record_iterator(files[1]))
    assert records == expected and all(type(r) is bytes for r in records)


def test_parse_shuffle_batch_keeps_every_example_once_per_epoch(tmp_path):
    ids = write_examples(tmp_path / "a.tfrecord", 10) + \
        write_examples(tmp_path / "b.tfrecord", 7, first_id=50)
    filenames = tf.placeholder(tf.string, [None])
    dataset = tf.data.TFRecordDataset(filenames) \
        .map(lambda r: tf.parse_single_example(r, FEATURES)).shuffle(8, seed=3).repeat(2).batch(5)
    iterator = dataset.make_initializable_iterator()
    batch = iterator.get_next()
    assert batch["x"].shape.as_list() == [None, 2] and batch["tag"].dtype == tf.string
    with tf.Session() as sess:
        sess.run(iterator.initializer,
                 {filenames: [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]})
        batches = drain(sess, batch)
    seen = np.concatenate([b["id"] for b in batches]).tolist()
    assert sorted(seen[:17]) == ids and sorted(seen[17:]) == ids and seen[:17] != ids
    tags = np.concatenate([b["tag"] for b in batches]).tolist()
    assert tags == [f"r{i}".encode() for i in seen]
    first = batches[0]
    np.testing.assert_allclose(first["x"] @ TRUE_W, first["y"], rtol=1e-6)


def test_a_missing_file_is_not_found_naming_it(tmp_path):
    missing = str(tmp_path / "absent.tfrecord")
    record = tf.data.TFRecordDataset(missing).make_one_shot_iterator().get_next()
    with tf.Session() as sess, pytest.raises(tf.errors.NotFoundError, match="absent.tfrecord"):
        sess.run(record)


def test_a_corrupt_file_fails_get_next_with_data_loss(tmp_path):
    path = tmp_path / "bad.tfrecord"
    write_examples(path, 2)
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 0xFF
    path.write_bytes(bytes(raw))
    record = tf.data.TFRecordDataset(str(path)).make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        sess.run(record)
        with pytest.raises(tf.errors.DataLossError, match=r"bad.tfrecord"):
            sess.run(record)


def linear_model(batch):
    w = tf.Variable(np.zeros((2, 1), np.float32), name="w")
    loss = tf.reduce_mean(tf.square(tf.matmul(batch["x"], w) - batch["y"]))
    return w, tf.train.GradientDescentOptimizer(0.2).minimize(loss)


def pipeline(files):
    return tf.data.TFRecordDataset(files).map(lambda r: tf.parse_single_example(r, FEATURES)) \
        .shuffle(32, seed=1).repeat(25).batch(16)


def test_the_full_pipeline_trains_a_linear_model_locally(tmp_path):
    write_examples(tmp_path / "train.tfrecord", 64)
    w, train = linear_model(pipeline(str(tmp_path / "train.tfrecord")).make_one_shot_iterator()
                            .get_next())
    with tf.Session() as sess:
        sess.run(w.initializer)
        steps = len(drain(sess, train))
        learned = sess.run(w)
    assert steps == 64 * 25 // 16
    np.testing.assert_allclose(learned, TRUE_W, atol=1e-3)


def test_the_full_pipeline_trains_with_the_iterator_on_a_tcp_worker(tmp_path):
    write_examples(tmp_path / "train.tfrecord", 64)
    with running_servers({"ps": 1, "worker": 1}, transport="tcp",
                         file_root=str(tmp_path)) as servers:   # the op policy: files under it
        with tf.device("/job:worker/task:0"):
            batch = pipeline(str(tmp_path / "train.tfrecord")).make_one_shot_iterator().get_next()
        with tf.device("/job:ps/task:0"):
            w, train = linear_model(batch)
        target = "grpc://" + servers[("ps", 0)].target.split("://", 1)[1]   # TF's scheme works too
        with tf.Session(target) as sess:
            sess.run(w.initializer)
            steps = len(drain(sess, train))
            learned = sess.run(w)
        assert steps == 64 * 25 // 16
        np.testing.assert_allclose(learned, TRUE_W, atol=1e-3)

"""tf.data.TextLineDataset and FixedLengthRecordDataset: lines and records against the bytes
written, file after file; errors as TF 2.21 (a missing file, a body that is not a multiple
of the record length); AUTOTUNE; the iterator on a worker of a tcp cluster."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError, NotFoundError
from zmtf.testing import running_servers


def drain(next_element, target=""):
    out = []
    with tf.Session(target) as sess:
        try:
            while True:
                out.append(sess.run(next_element))
        except tf.errors.OutOfRangeError:
            return out


@pytest.fixture
def files(tmp_path):
    (tmp_path / "a.txt").write_bytes(b"one\ntwo\r\n\nlast")
    (tmp_path / "b.txt").write_bytes(b"b1\n")
    (tmp_path / "r.bin").write_bytes(b"HH" + bytes(range(12)) + b"FF")
    return tmp_path


def test_text_lines_file_after_file(files):
    ds = tf.data.TextLineDataset([str(files / "a.txt"), str(files / "b.txt")])
    assert ds.output_types == tf.string and ds.output_shapes.as_list() == []
    lines = drain(ds.make_one_shot_iterator().get_next())
    assert lines == [b"one", b"two", b"", b"last", b"b1"]


def test_text_lines_batch_and_map(files):
    ds = tf.data.TextLineDataset(str(files / "a.txt")).map(
        tf.strings.length, num_parallel_calls=tf.data.experimental.AUTOTUNE).batch(2).prefetch(tf.data.AUTOTUNE)
    assert [b.tolist() for b in drain(ds.make_one_shot_iterator().get_next())] == [[3, 3], [0, 4]]


def test_fixed_length_records_between_header_and_footer(files):
    ds = tf.data.FixedLengthRecordDataset(str(files / "r.bin"), 3, header_bytes=2, footer_bytes=2)
    records = drain(tf.data.make_one_shot_iterator(ds).get_next())
    assert records == [bytes(range(i, i + 3)) for i in range(0, 12, 3)]
    whole = tf.data.FixedLengthRecordDataset(str(files / "r.bin"), 4).map(
        lambda r: tf.decode_raw(r, tf.uint8))
    rows = drain(whole.make_one_shot_iterator().get_next())
    np.testing.assert_array_equal(np.concatenate(rows),
                                  np.frombuffer(b"HH" + bytes(range(12)) + b"FF", np.uint8))


def test_errors(files):
    with pytest.raises(NotFoundError, match="none.txt"):
        drain(tf.data.TextLineDataset(str(files / "none.txt")).make_one_shot_iterator().get_next())
    odd = tf.data.FixedLengthRecordDataset(str(files / "r.bin"), 5)
    with pytest.raises(InvalidArgumentError, match="not an exact multiple of the record length"):
        drain(odd.make_one_shot_iterator().get_next())
    with pytest.raises(ValueError, match="record_bytes must be positive"):
        tf.data.FixedLengthRecordDataset(str(files / "r.bin"), 0)
    with pytest.raises(ValueError, match="compression_type must be a string scalar"):
        tf.data.TextLineDataset(str(files / "a.txt"), compression_type=["GZIP"])
    assert tf.data.AUTOTUNE == tf.data.experimental.AUTOTUNE == -1


def test_the_iterator_reads_on_a_tcp_worker(files):
    # the servers' op policy lets graphs from the network read files under the root only
    with running_servers({"ps": 1, "worker": 1}, transport="tcp", file_root=str(files)) as servers:
        with tf.device("/job:worker/task:0"):
            line = tf.data.TextLineDataset(str(files / "a.txt")).make_one_shot_iterator().get_next()
        with tf.device("/job:ps/task:0"):
            length = tf.strings.length(line)
        target = "grpc://" + servers[("ps", 0)].target.split("://", 1)[1]   # TF's scheme works too
        got = drain([line, length], target)
        assert got == [[b"one", 3], [b"two", 3], [b"", 0], [b"last", 4]]

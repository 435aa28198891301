"""tf.read_file / write_file / matching_files / train.match_filenames_once, web-safe base64,
the tf.io namespace, and tf.train.maybe_batch*: values against the file system, Python's
base64 and hand-worked batches; names and errors as TF 2.21."""

import base64

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError, NotFoundError
from zmtf.testing import run_fetches as run


@pytest.fixture
def folder(tmp_path):
    for name in ["b.txt", "a.txt", "c.dat"]:
        (tmp_path / name).write_bytes(name.encode())
    return tmp_path


def test_read_and_write_files(folder):
    target = folder / "new" / "deep" / "x.bin"
    write = tf.write_file(str(target), b"\x00hello\xff")
    assert write.type == "WriteFile" and write.name == "WriteFile"
    run(write)
    assert target.read_bytes() == b"\x00hello\xff"   # the directories are made
    read = tf.io.read_file(str(target))
    assert read.dtype == tf.string and read.shape.as_list() == []
    assert run(read) == b"\x00hello\xff"


def test_missing_file_is_not_found(folder):
    with pytest.raises(NotFoundError, match="none.txt"):
        run(tf.read_file(str(folder / "none.txt")))


def test_matching_files_sorted_and_per_pattern(folder):
    out = tf.matching_files([str(folder / "*.txt"), str(folder / "a*")])
    assert out.shape.as_list() == [None]
    names = [p.decode().rsplit("/", 1)[-1] for p in run(out)]
    assert names == ["a.txt", "a.txt", "b.txt"]   # TF lists a path once per pattern it matches
    assert run(tf.io.matching_files(str(folder / "nothing*"))).shape == (0,)


def test_match_filenames_once_is_a_local_variable(folder):
    files = tf.train.match_filenames_once(str(folder / "*.txt"))
    assert files.name == "matching_filenames:0"
    assert tf.local_variables() == [files] and tf.global_variables() == []
    with tf.Session() as sess:
        sess.run(tf.local_variables_initializer())
        (folder / "later.txt").write_bytes(b"")
        listed = sess.run(files)
    assert [p.decode().rsplit("/", 1)[-1] for p in listed] == ["a.txt", "b.txt"]


@pytest.mark.parametrize("pad", [False, True])
def test_base64_round_trip_matches_python(pad):
    data = [b"\xff\xfe ab?", b"", b"x", bytes(range(256))]
    encoded = run(tf.encode_base64(tf.constant(data), pad=pad))
    for raw, got in zip(data, encoded):
        expected = base64.urlsafe_b64encode(raw)
        assert got == (expected if pad else expected.rstrip(b"="))
    np.testing.assert_array_equal(run(tf.decode_base64(encoded)), np.array(data, dtype=object))


@pytest.mark.parametrize("bad", ["ab+c", "ab/c", "abcde", "a==="])
def test_decode_refuses_what_is_not_web_safe_base64(bad):
    with pytest.raises(InvalidArgumentError, match="base64"):
        run(tf.decode_base64(bad))


def test_io_namespace_collects_the_file_functions():
    for name in ["read_file", "write_file", "matching_files", "match_filenames_once",
                 "decode_base64", "encode_base64", "parse_example", "FixedLenFeature",
                 "VarLenFeature", "TFRecordWriter", "tf_record_iterator", "decode_raw",
                 "decode_csv", "gfile", "PaddingFIFOQueue", "TFRecordOptions"]:
        assert hasattr(tf.io, name), name
    assert tf.io.read_file is tf.read_file and tf.io.gfile.Exists is tf.gfile.Exists


def _batches(batch, count):
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        try:
            return [sess.run(batch).tolist() for _ in range(count)]
        finally:
            coord.request_stop()
            coord.join(threads)


def test_maybe_batch_enqueues_only_kept_rows():
    x = tf.constant([1, 2, 3, 4, 5, 6])
    keep = tf.constant([True, False, True, True, False, True])
    batch = tf.train.maybe_batch([x], keep, 2, enqueue_many=True)
    assert batch.name == "batch:0" and batch.shape.as_list() == [2]
    assert _batches(batch, 2) == [[1, 3], [4, 6]]


def test_maybe_batch_join_with_a_scalar_flag():
    counter = tf.train.range_input_producer(100, shuffle=False).dequeue()
    batch = tf.train.maybe_batch_join([[counter]], tf.equal(counter % 3, 0), 3)
    assert _batches(batch, 2) == [[0, 3, 6], [9, 12, 15]]


def test_maybe_shuffle_batch_keeps_only_kept_elements():
    counter = tf.train.range_input_producer(50, shuffle=False).dequeue()
    batch = tf.train.maybe_shuffle_batch([counter], 4, capacity=20, min_after_dequeue=5,
                                         keep_input=counter < 10, seed=1)
    seen = sum(_batches(batch, 3), [])   # the producer cycles 0..49: kept values recur
    assert len(seen) == 12 and all(v < 10 for v in seen)
    joined = tf.train.maybe_shuffle_batch_join([[counter]], 2, 10, 2, keep_input=True)
    assert joined.shape.as_list() == [2]


@pytest.mark.parametrize("keep,many,match", [
    ([True] * 6, False, "cannot be a vector when `enqueue_many=False`"),
    ([[True]], True, "must be 0 or 1 dimensions"),
    (None, False, "dimensions must be known at graph construction"),
])
def test_keep_input_errors(keep, many, match):
    keep = tf.placeholder(tf.bool) if keep is None else keep
    with pytest.raises(ValueError, match=match):
        tf.train.maybe_batch([tf.constant([1, 2])], keep, 2, enqueue_many=many)

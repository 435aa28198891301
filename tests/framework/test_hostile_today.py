"""Hostile inputs to the surfaces added on 2026-11-23: compressed record files (decompression
bombs, sizes and compressions as a graph from the network may send them), HParams text and
JSON, ClusterDef bytes, and the profiler over an imported hostile GraphDef. Every fault is a
typed error naming what to fix, raised in bounded time and memory."""

from __future__ import annotations

import gzip
import struct
import tracemalloc
import zlib

import pytest

import zmtf as tf
from zmtf.contrib.hparam import HParams
from zmtf.tf1.errors import InvalidArgumentError, ResourceExhaustedError
from zmtf.formats.tfrecord import masked_crc32c
from zmtf.kernels.cpu import common as _common
from tests.train.test_readers import read_all

LIMIT = 1 << 16   # the limit for one tensor in these tests, so a "bomb" is a megabyte


@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setattr(_common, "MAX_OUTPUT_BYTES", LIMIT)


def gzip_file(path, data):
    path.write_bytes(gzip.compress(data, 9))
    return str(path)


def first(dataset):
    with tf.Session() as sess:
        return sess.run(dataset.make_one_shot_iterator().get_next())


# ---- decompression bombs -------------------------------------------------------------------
def test_a_line_inflating_past_the_limit_is_refused(tmp_path, small_limit):
    bomb = gzip_file(tmp_path / "bomb.txt.gz", b"a" * (16 * LIMIT))   # no line ending
    with pytest.raises(ResourceExhaustedError, match=r"bomb.txt.gz.*a line is longer than"):
        first(tf.data.TextLineDataset(bomb, compression_type="GZIP"))


def test_a_record_length_claim_past_the_limit_is_refused_before_reading(tmp_path, small_limit):
    length = struct.pack("<Q", 16 * LIMIT)
    header = length + struct.pack("<I", masked_crc32c(length))
    bomb = gzip_file(tmp_path / "bomb.tfrecord.gz", header + b"\0" * (16 * LIMIT))
    with pytest.raises(ResourceExhaustedError, match=rf"claims {16 * LIMIT} data bytes"):
        first(tf.data.TFRecordDataset(bomb, compression_type="GZIP"))


def test_fixed_length_records_stream_from_a_compressed_file(tmp_path):
    # 4 MiB of records: reading the first must not inflate the whole file
    data = b"".join(struct.pack("<I", i) for i in range(1 << 20))
    path = gzip_file(tmp_path / "records.gz", data)
    dataset = tf.data.FixedLengthRecordDataset(path, 4, compression_type="GZIP")
    tracemalloc.start()
    try:
        assert first(dataset) == data[:4]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < len(data) // 4


def test_fixed_length_record_and_footer_past_the_limit_are_refused(tmp_path, small_limit):
    path = gzip_file(tmp_path / "records.gz", b"x" * 8)
    dataset = tf.data.FixedLengthRecordDataset(path, 4, footer_bytes=LIMIT,
                                               compression_type="GZIP")
    with pytest.raises(ResourceExhaustedError, match="a footer of 65536 bytes"):
        first(dataset)


def test_compressed_fixed_length_records_keep_their_order_and_uneven_end(tmp_path):
    path = gzip_file(tmp_path / "records.gz", b"HH" + b"abcdefg" + b"F")
    dataset = tf.data.FixedLengthRecordDataset(path, 3, header_bytes=2, footer_bytes=1,
                                               compression_type="GZIP")
    got = dataset.make_one_shot_iterator().get_next()
    with tf.Session() as sess:
        assert [sess.run(got), sess.run(got)] == [b"abc", b"def"]
        with pytest.raises(tf.errors.DataLossError, match="body length 7 bytes"):
            sess.run(got)


@pytest.mark.parametrize("sizes", [[0, 0, 0], [4, -1, 0], [4, 0, "x"], [4, 0], [4, 0, 0, 9],
                                   [4.5, 0, 0], [True, 0, 0]])
def test_fixed_length_dataset_sizes_from_the_network_are_checked(tmp_path, sizes):
    path = gzip_file(tmp_path / "records.gz", b"x" * 8)
    dataset = tf.data.FixedLengthRecordDataset(path, 4, compression_type="GZIP")
    iterator = dataset.make_one_shot_iterator()
    got = iterator.get_next()
    spec = next(op for op in tf.get_default_graph().get_operations()
                if any(isinstance(v, list) and "fixed_length" in str(v)
                       for v in op._attrs.values()))
    key = next(k for k, v in spec._attrs.items() if "fixed_length" in str(v))
    _replace_source(spec._attrs[key], sizes)
    with tf.Session() as sess, pytest.raises(InvalidArgumentError, match="record_bytes >= 1"):
        sess.run(got)


def _replace_source(pipeline, sizes):
    """Swap the sizes of the ["fixed_length", record, header, footer] source in place."""
    for item in pipeline:
        if isinstance(item, list):
            if item and item[0] == "fixed_length":
                item[1:] = sizes
                return True
            if _replace_source(item, sizes):
                return True
    return False


def test_a_fixed_length_reader_streams_a_compressed_bomb(tmp_path, small_limit):
    bomb = gzip_file(tmp_path / "bomb.gz", b"\0" * (64 * LIMIT))
    out = _read_first(bomb, tf.FixedLengthRecordReader(8, encoding="GZIP"))
    assert out == [bomb.encode() + b":0", b"\0" * 8]


def test_a_text_line_reader_refuses_a_line_past_the_limit(tmp_path, small_limit):
    path = tmp_path / "long.txt"
    path.write_bytes(b"b" * (LIMIT + 1))
    with pytest.raises(ResourceExhaustedError, match="a line is longer than"):
        read_all([str(path)], tf.TextLineReader())


def _read_first(path, reader):
    queue = tf.FIFOQueue(1, tf.string)
    key, value = reader.read(queue)
    with tf.Session() as sess:
        sess.run(queue.enqueue(path))
        return list(sess.run([key, value]))


@pytest.mark.parametrize("attr, value", [
    ("record_bytes", 0), ("record_bytes", "8"), ("header_bytes", -7), ("footer_bytes", [1]),
    ("hop_bytes", -1), ("hop_bytes", 1.5), ("encoding", 7), ("encoding", "BZIP2")])
def test_fixed_length_reader_attrs_from_the_network_are_checked(tmp_path, attr, value):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x" * 16)
    reader = tf.FixedLengthRecordReader(4)
    reader.reader_ref.op._attrs[attr] = value
    with pytest.raises(InvalidArgumentError, match=attr):
        _read_first(str(path), reader)


@pytest.mark.parametrize("value", [-1, "1", 0, 2.0])
def test_text_line_reader_skip_header_lines_is_checked(tmp_path, value):
    path = tmp_path / "t.txt"
    path.write_bytes(b"a\nb\n")
    reader = tf.TextLineReader()
    reader.reader_ref.op._attrs["skip_header_lines"] = value
    if value == 0 and type(value) is int:
        assert _read_first(str(path), reader)[1] == b"a"
        return
    with pytest.raises(InvalidArgumentError, match="skip_header_lines must be an int >= 0"):
        _read_first(str(path), reader)


def test_a_damaged_zlib_stream_in_a_reader_is_data_loss(tmp_path):
    path = tmp_path / "z.bin"
    path.write_bytes(zlib.compress(b"x" * 64)[:-6] + b"\xff" * 6)
    with pytest.raises(tf.errors.DataLossError, match="z.bin"):
        _read_first(str(path), tf.FixedLengthRecordReader(4, encoding="ZLIB"))


# ---- HParams -------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ['{"a":' + "[" * 100000 + "]" * 100000 + "}", "[1]", "1",
                                  '"a"', "null", '{"zz": 1}', "{" * 100000, '{"a": "x"}'])
def test_hparams_parse_json_faults_are_value_errors(text):
    with pytest.raises(ValueError):
        HParams(a=1, b=[1.0]).parse_json(text)


def test_an_unknown_hparam_is_still_a_key_error_as_in_tf():
    with pytest.raises(KeyError, match="Unknown hyperparameter 'zz'"):
        HParams(a=1).parse_json('{"zz": 1}')


# ---- the profiler over an imported hostile GraphDef ---------------------------------------
def _pool_graph_def(ksize, padding):
    """A MaxPool over [1, 4, 4, 1] whose GraphDef's ksize is replaced, as a peer could."""
    with tf.Graph().as_default() as built:
        tf.nn.max_pool(tf.placeholder(tf.float32, [1, 4, 4, 1]), [1, 2, 2, 1], [1, 2, 2, 1],
                       padding, name="pool")
    graph_def = built.as_graph_def()
    pool = next(n for n in graph_def.node if n.name == "pool")
    pool.attr["ksize"].list.ClearField("i")
    pool.attr["ksize"].list.i.extend(ksize)
    return graph_def


@pytest.mark.parametrize("ksize, padding", [([1, 2**62, 2**62, 1], "VALID"), ([-3] * 4, "SAME"),
                                            ([0] * 4, "SAME")])
def test_a_hostile_pool_window_is_refused_at_import(ksize, padding):
    with tf.Graph().as_default(), pytest.raises(ValueError, match="node 'pool'"):
        tf.import_graph_def(_pool_graph_def(ksize, padding), name="")


def test_the_profiler_counts_an_imported_huge_window_without_overflow():
    ksize = [1, 2**62, 2**62, 1]
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(_pool_graph_def(ksize, "SAME"), name="")
        options = dict(tf.profiler.ProfileOptionBuilder.float_operation(), output="none")
        report = tf.profiler.profile(graph, cmd="op", options=options)
    # 2x2 outputs, each over the whole window: 4 * 2**124, past TF's int64 field: saturated
    assert report.total_float_ops == 2**63 - 1

"""TFRecord files (TF's framing and masked CRC-32C), tf.train.Example's protobuf encoding, and
tf.parse_example / tf.parse_single_example as graph ops."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.example_proto import parse_example as decode_example
from zmtf.formats.tfrecord import crc32c, masked_crc32c


def example(**features):
    """example(x=[1.0, 2.0], n=[3], s=[b"a"]): the list kind follows the first value's type."""
    def feature(values):
        if values and isinstance(values[0], (bytes, str)):
            return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
        if values and isinstance(values[0], float):
            return tf.train.Feature(float_list=tf.train.FloatList(value=values))
        return tf.train.Feature(int64_list=tf.train.Int64List(value=values))
    return tf.train.Example(features=tf.train.Features(
        feature={k: feature(v) for k, v in features.items()}))


# ---- TFRecord ---------------------------------------------------------------------------------
def test_crc32c_matches_the_published_check_values():
    assert crc32c(b"123456789") == 0xE3069283            # the CRC-32C check value
    assert crc32c(bytes(32)) == 0x8A9136AA                # RFC 3720 B.4
    assert masked_crc32c(b"") == ((0 >> 15 | 0 << 17) + 0xA282EAD8) & 0xFFFFFFFF


def test_records_round_trip_with_tf_framing(tmp_path):
    path = str(tmp_path / "data.tfrecord")
    records = [b"", b"one", bytes(range(256)) * 5]
    with tf.python_io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
        writer.write("text")
    assert list(tf.python_io.tf_record_iterator(path)) == records + [b"text"]
    raw = (tmp_path / "data.tfrecord").read_bytes()
    assert struct.unpack("<Q", raw[:8]) == (0,) and raw[8:12] == struct.pack("<I", masked_crc32c(raw[:8]))
    assert len(raw) == sum(16 + len(r) for r in records) + 16 + 4


@pytest.mark.parametrize("position,pattern", [
    (3, r"byte 0 of .*: the length's CRC"),           # inside the first length
    (16 + 0 + 12 + 1, r"byte 16 of .*: the data's CRC"),  # inside the second record's data
])
def test_a_corrupt_record_is_a_data_loss_naming_file_and_offset(tmp_path, position, pattern):
    path = str(tmp_path / "bad.tfrecord")
    with tf.python_io.TFRecordWriter(path) as writer:
        writer.write(b"")
        writer.write(b"abc")
    raw = bytearray((tmp_path / "bad.tfrecord").read_bytes())
    raw[position] ^= 0x01
    (tmp_path / "bad.tfrecord").write_bytes(bytes(raw))
    with pytest.raises(tf.errors.DataLossError, match=pattern):
        list(tf.python_io.tf_record_iterator(path))


def test_a_truncated_file_is_a_data_loss_and_a_missing_one_not_found(tmp_path):
    path = str(tmp_path / "cut.tfrecord")
    with tf.python_io.TFRecordWriter(path) as writer:
        writer.write(b"hello")
    raw = (tmp_path / "cut.tfrecord").read_bytes()
    for cut in (5, 14, len(raw) - 1):
        (tmp_path / "cut.tfrecord").write_bytes(raw[:cut])
        with pytest.raises(tf.errors.DataLossError, match="truncated record at byte 0"):
            list(tf.python_io.tf_record_iterator(path))
    with pytest.raises(tf.errors.NotFoundError, match="nope.tfrecord"):
        list(tf.python_io.tf_record_iterator(str(tmp_path / "nope.tfrecord")))


# ---- Example encoding ---------------------------------------------------------------------------
def test_example_round_trips_including_empty_lists_negatives_and_float32():
    original = example(f=[0.1, -2.5, 3e38], i=[-1, 0, 2**63 - 1, -(2**63)], b=[b"", b"\x00x", "é".encode()],
                       empty=[])
    original.features.feature["unset"].CopyFrom(tf.train.Feature())
    back = tf.train.Example.FromString(original.SerializeToString())
    assert back == original
    feature = back.features.feature
    assert feature["f"].float_list.value == [np.float32(0.1), -2.5, np.float32(3e38)]
    assert feature["f"].float_list.value[0] != 0.1          # stored at float32 precision
    assert feature["i"].int64_list.value == [-1, 0, 2**63 - 1, -(2**63)]
    assert feature["b"].bytes_list.value == [b"", b"\x00x", "é".encode()]
    assert feature["empty"].WhichOneof("kind") == "int64_list"    # an empty list keeps its kind
    assert feature["empty"].int64_list.value == []
    assert feature["unset"].WhichOneof("kind") is None
    parsed = tf.train.Example()
    assert parsed.ParseFromString(original.SerializeToString()) > 0 and parsed == original


def test_example_encoding_is_protobufs():
    # Example{features(1){feature(1){key(1)="i", value(2){int64_list(3){packed value(1)}}}}},
    # byte for byte what TensorFlow 2.21's protobuf writes for it
    assert example(i=[-5, 7]).SerializeToString() == (
        b"\n\x16\n\x14\n\x01i\x12\x0f\x1a\r\n\x0b\xfb\xff\xff\xff\xff\xff\xff\xff\xff\x01\x07")
    unpacked = b"\n\x0d\n\x0b\n\x01i\x12\x06\x1a\x04\x08\x05\x08\x07"  # repeated, not packed
    assert decode_example(unpacked)["i"][1].tolist() == [5, 7]
    with pytest.raises(ValueError, match="out of range"):
        tf.train.Int64List(value=[2**63])
    with pytest.raises(TypeError):   # a BytesList holds bytes, as TF's does
        tf.train.BytesList(value=["text"])


@pytest.mark.parametrize("data", [
    b"\n\x05\n\x03",                                   # a length past the end
    b"\n",                                             # a truncated varint
    b"\x0b",                                           # an unterminated group
    b"\n" + b"\xff" * 11,                               # a varint over 10 bytes
    b"\n\x09\n\x07\x12\x05\x12\x03\n\x01\x01",            # packed floats of 1 byte
])
def test_malformed_examples_are_invalid_argument(data):
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid Example"):
        tf.train.Example.FromString(data)
    with pytest.raises(tf.errors.InvalidArgumentError, match="record 3: .*not a valid Example"):
        decode_example(data, "record 3")


# ---- parse ops ------------------------------------------------------------------------------------
FEATURES = {
    "x": tf.FixedLenFeature([2], tf.float32),
    "label": tf.FixedLenFeature([], tf.int64),
    "name": tf.FixedLenFeature([], tf.string, default_value="none"),
    "weight": tf.FixedLenFeature([1], tf.float32, default_value=[1.0]),
}


def test_parse_example_batches_and_fills_defaults():
    records = [example(x=[1.0, 2.0], label=[3], name=[b"a"]).SerializeToString(),
               example(x=[4.0, 5.0], label=[-6], weight=[0.5]).SerializeToString()]
    parsed = tf.parse_example(tf.constant(records), FEATURES)
    assert parsed["x"].shape.as_list() == [2, 2] and parsed["label"].dtype == tf.int64
    with tf.Session() as sess:
        values = sess.run(parsed)
    np.testing.assert_array_equal(values["x"], np.float32([[1, 2], [4, 5]]))
    assert values["label"].tolist() == [3, -6] and values["label"].dtype == np.int64
    assert values["name"].tolist() == [b"a", b"none"]
    assert values["weight"].tolist() == [[1.0], [0.5]]


def test_parse_single_example_from_a_fed_record():
    record = tf.placeholder(tf.string, [])
    parsed = tf.parse_single_example(record, FEATURES)
    with tf.Session() as sess:
        values = sess.run(parsed, {record: example(x=[7.0, 8.0], label=[1]).SerializeToString()})
    assert values["x"].tolist() == [7.0, 8.0] and values["label"] == 1
    assert values["name"] == b"none" and values["weight"].tolist() == [1.0]


@pytest.mark.parametrize("record,pattern", [
    (example(x=[1.0, 2.0]), r"Feature: label \(data type: int64\) is required but could not be found"),
    (example(x=[1.0], label=[1]), r"Key: x, Index: 0.  Number of float values != expected.  Values size: 1"),
    (example(x=[1, 2], label=[1]), r"Key: x, Index: 0.  Data types don't match. Data type: int64 but expected type: float"),
])
def test_parse_errors_name_the_feature(record, pattern):
    parsed = tf.parse_single_example(tf.constant(record.SerializeToString()), FEATURES)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=pattern):
        sess.run(parsed)


def test_a_garbage_record_is_invalid_argument_and_the_api_checks_its_arguments():
    parsed = tf.parse_single_example(tf.constant(b"\n\x09garbage"), FEATURES)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError,
                                             match="Could not parse example input"):
        sess.run(parsed)
    with pytest.raises(ValueError, match="float32, int64 or string"):
        tf.parse_single_example(tf.constant(b""), {"a": tf.FixedLenFeature([], tf.int32)})
    with pytest.raises(ValueError, match="must be a vector"):
        tf.parse_example(tf.constant(b""), FEATURES)

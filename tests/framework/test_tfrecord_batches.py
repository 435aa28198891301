"""TFRecord writing and reading a batch at a time: order, chunk boundaries, large records
between small ones, flush, and damage deep inside a file still reported at its own record
after every record before it."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.tfrecord import encode_record, encode_records

RNG = np.random.default_rng(28)


def _mixed_records(count: int) -> list[bytes]:
    """Records of 0 to 300 bytes, a 3 MiB one (past a read chunk) and a 20 KiB one between."""
    records = [RNG.bytes(int(n)) for n in RNG.integers(0, 300, count)]
    records[count // 3] = RNG.bytes(3 << 20)
    records[count // 2] = RNG.bytes(20_000)
    return records


def test_many_records_of_mixed_sizes_round_trip_in_order(tmp_path):
    path = str(tmp_path / "mixed.tfrecord")
    records = _mixed_records(20_000)
    with tf.python_io.TFRecordWriter(path) as writer:
        for index, record in enumerate(records):
            writer.write(record if index % 7 else bytearray(record))
    assert (tmp_path / "mixed.tfrecord").read_bytes() == b"".join(map(encode_record, records))
    assert list(tf.python_io.tf_record_iterator(path)) == records
    assert list(tf.python_io.tf_record_iterator(path, "")) == records
    gz = str(tmp_path / "mixed.gz")
    with tf.python_io.TFRecordWriter(gz, "GZIP") as writer:
        for record in records:
            writer.write(record)
    assert list(tf.python_io.tf_record_iterator(gz, "GZIP")) == records


def test_a_batch_frames_as_record_by_record():
    for records in ([b"", b"a", RNG.bytes(1000), b"", RNG.bytes(70_000)],
                    [RNG.bytes(37) for _ in range(500)], [b""] * 3):
        assert encode_records(records) == b"".join(map(encode_record, records))


def test_runs_of_one_length_then_others_read_back(tmp_path):
    """Equal-length records are found by numpy; a different one after them by the walk."""
    path = tmp_path / "runs.tfrecord"
    records = [RNG.bytes(50) for _ in range(1000)] + [b"xy"] + [RNG.bytes(50) for _ in range(9)]
    path.write_bytes(encode_records(records))
    assert list(tf.python_io.tf_record_iterator(str(path))) == records


def test_flush_puts_waiting_records_on_disk_and_close_ends_writes(tmp_path):
    path = str(tmp_path / "open.tfrecord")
    writer = tf.python_io.TFRecordWriter(path)
    writer.write(b"one")
    writer.write("two")
    writer.flush()
    assert list(tf.python_io.tf_record_iterator(path)) == [b"one", b"two"]
    writer.close()
    with pytest.raises(ValueError, match="is closed"):
        writer.write(b"three")
    with tf.python_io.TFRecordWriter(str(tmp_path / "x")) as other:
        with pytest.raises(TypeError, match="takes bytes"):
            other.write(3)


@pytest.mark.parametrize("where", ["length", "data"])
def test_damage_deep_in_a_file_comes_after_every_record_before_it(tmp_path, where):
    path = tmp_path / "damaged.tfrecord"
    records = [RNG.bytes(100) for _ in range(30_000)]
    raw = bytearray(encode_records(records))
    victim = 25_000                                   # ~2.9 MB in: past the first read chunks
    offset = victim * 116
    raw[offset + (2 if where == "length" else 20)] ^= 0x10
    path.write_bytes(bytes(raw))
    seen = []
    with pytest.raises(tf.errors.DataLossError,
                       match=f"corrupted record at byte {offset} of .*the {where}'s CRC"):
        for record in tf.python_io.tf_record_iterator(str(path)):
            seen.append(record)
    assert seen == records[:victim]


def test_truncation_inside_a_late_record_is_data_loss_after_the_rest(tmp_path):
    path = tmp_path / "cut.tfrecord"
    records = [RNG.bytes(200) for _ in range(10_000)]
    path.write_bytes(encode_records(records)[:-50])
    seen = []
    with pytest.raises(tf.errors.DataLossError, match=f"truncated record at byte {9_999 * 216}"):
        for record in tf.python_io.tf_record_iterator(str(path)):
            seen.append(record)
    assert seen == records[:-1]

"""TFRecordDataset(...).batch(n) cuts its batches from lists of records (no per-record step):
the batches, the remainder, repeat, compression, the size check and a damaged record must be
exactly what the record-by-record pipeline (the same dataset behind an identity map) gives."""

from __future__ import annotations

import io

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.tfrecord import encode_records, read_record_blocks

RNG = np.random.default_rng(2828)


def _records(count: int) -> list[bytes]:
    """Records of 0 to 900 bytes (a file past one 1 MiB read chunk) and one of 2 MiB."""
    records = [RNG.bytes(int(n)) for n in RNG.integers(0, 900, count)]
    records[count // 2] = RNG.bytes(2 << 20)
    return records


def _write(path, records, compression=""):
    with tf.python_io.TFRecordWriter(str(path), compression) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def _batches(dataset) -> tuple[list[list[bytes]], BaseException | None]:
    """Every batch the dataset gives in a session, and the error that ended it (None at the end)."""
    batch = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        while True:
            try:
                value = sess.run(batch)
            except tf.errors.OutOfRangeError:
                return out, None
            except tf.errors.OpError as error:
                return out, error
            assert value.dtype == object and value.ndim == 1
            out.append(value.tolist())


def _by_records(files, compression, then):
    """The same pipeline, record by record (an identity map keeps batch off the list path)."""
    return then(tf.data.TFRecordDataset(files, compression).map(tf.identity))


def test_the_reader_hands_out_a_chunk_of_records_at_a_time():
    records = [RNG.bytes(100) for _ in range(20_000)]   # 2.3 MB: three 1 MiB chunks
    blocks = list(read_record_blocks(io.BytesIO(encode_records(records)), "mem"))
    assert 1 < len(blocks) < 10 and sum(blocks, []) == records


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_batches_repeat_and_remainder_match_the_record_path(tmp_path, compression):
    first, second = _records(2500), _records(700)
    files = [_write(tmp_path / "a", first, compression), _write(tmp_path / "b", second, compression)]
    for then in (lambda d: d.batch(64), lambda d: d.batch(64, drop_remainder=True),
                 lambda d: d.repeat(2).batch(1000), lambda d: d.batch(5000)):
        fast, error = _batches(then(tf.data.TFRecordDataset(files, compression)))
        assert error is None
        assert (fast, None) == _by_records(files, compression, lambda d: _batches(then(d)))
    everything, _ = _batches(tf.data.TFRecordDataset(files, compression).batch(1000))
    assert sum(everything, []) == first + second


def test_a_damaged_record_ends_the_batches_where_the_record_path_does(tmp_path):
    records = _records(3000)
    path = tmp_path / "bad.tfrecord"
    raw = bytearray(encode_records(records))
    at = len(encode_records(records[:2100])) + 20   # inside record 2100's data
    raw[at] ^= 0xFF
    path.write_bytes(bytes(raw))
    fast, error = _batches(tf.data.TFRecordDataset(str(path)).batch(100))
    slow, slow_error = _by_records(str(path), "", lambda d: _batches(d.batch(100)))
    assert fast == slow and len(fast) == 21 and sum(fast, []) == records[:2100]
    assert isinstance(error, tf.errors.DataLossError) and type(slow_error) is type(error)
    assert "bad.tfrecord" in str(error) and str(len(encode_records(records[:2100]))) in str(error)


def test_a_batch_past_the_tensor_limit_is_refused_at_once(tmp_path):
    path = _write(tmp_path / "r", [b"x" * 100] * 10)
    fast, error = _batches(tf.data.TFRecordDataset(path).batch(1 << 40))
    assert fast == [] and isinstance(error, tf.errors.ResourceExhaustedError)
    assert "smaller batch size" in str(error)


@pytest.mark.parametrize("byte, what", [(9, "length's"), (40, "data's")])
def test_damage_among_records_of_one_length_is_found_at_its_record(tmp_path, byte, what):
    """Records of one length are checked as columns of one table; a bad CRC there is still
    reported at its own record, after the records before it."""
    records = [RNG.bytes(100) for _ in range(12_000)]   # 1.4 MB: the damage is in chunk 2
    raw = bytearray(encode_records(records))
    raw[10_000 * 116 + byte] ^= 0x01
    path = tmp_path / "one-length.tfrecord"
    path.write_bytes(bytes(raw))
    seen = []
    with pytest.raises(tf.errors.DataLossError,
                       match=f"corrupted record at byte {10_000 * 116} of .*the {what} CRC"):
        for record in tf.python_io.tf_record_iterator(str(path)):
            seen.append(record)
    assert seen == records[:10_000]
    fast, error = _batches(tf.data.TFRecordDataset(str(path)).batch(1000))
    assert sum(fast, []) == records[:10_000] and isinstance(error, tf.errors.DataLossError)

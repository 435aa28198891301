"""GZIP and ZLIB record files: tf.python_io's writer and iterator, the three file datasets and
the TFRecord / fixed-length readers, against files compressed by hand with Python's gzip and
zlib over zmtf's uncompressed framing; zlib's settings honoured; damaged, truncated and
mis-declared files as DataLossError naming the file; unknown compressions refused."""

from __future__ import annotations

import gzip
import zlib

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import DataLossError, InvalidArgumentError
from tests.train.test_readers import read_all

RECORDS = [b"", b"a", b"example " * 40, bytes(range(256)) * 3]
MAGIC = {"ZLIB": b"\x78\x9c", "GZIP": b"\x1f\x8b\x08"}
COMPRESS = {"ZLIB": zlib.compress, "GZIP": gzip.compress}
Options = tf.python_io.TFRecordOptions
Kind = tf.python_io.TFRecordCompressionType


def write(path, records, options=None):
    with tf.python_io.TFRecordWriter(str(path), options) as writer:
        for record in records:
            writer.write(record)
    return str(path)


def framed(tmp_path, records):
    """The bytes of an uncompressed TFRecord file of ``records``, by zmtf's own writer."""
    return read_bytes(write(tmp_path / "plain.tfrecord", records))


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def hand_compressed(tmp_path, kind, records, name="hand.tfrecord"):
    path = tmp_path / name
    path.write_bytes(COMPRESS[kind](framed(tmp_path, records)))
    return str(path)


def drain(dataset):
    element = dataset.make_one_shot_iterator().get_next()
    out = []
    with tf.Session() as sess:
        try:
            while True:
                out.append(sess.run(element))
        except tf.errors.OutOfRangeError:
            return out


# ---- options ---------------------------------------------------------------------------------

@pytest.mark.parametrize("given, string", [
    (None, ""), ("", ""), (Kind.NONE, ""), (Kind.ZLIB, "ZLIB"), (Kind.GZIP, "GZIP"),
    ("ZLIB", "ZLIB"), ("GZIP", "GZIP"), (Options("GZIP"), "GZIP"), (Options(Kind.ZLIB), "ZLIB"),
])
def test_compression_type_strings(given, string):
    assert Options.get_compression_type_string(given) == string


@pytest.mark.parametrize("given", ["gzip", "BZIP2", 3])
def test_unknown_compression_types_are_value_errors(given, tmp_path):
    for build in (lambda: Options(given), lambda: tf.python_io.TFRecordWriter(
            str(tmp_path / "x"), given), lambda: tf.python_io.tf_record_iterator("x", given),
            lambda: tf.TFRecordReader(options=given)):
        with pytest.raises(ValueError, match=f'Not a valid compression_type: "{given}"'):
            build()


@pytest.mark.parametrize("field, value", [
    ("compression_level", 10), ("compression_level", -2), ("mem_level", 0),
    ("window_bits", 16), ("compression_method", 9), ("flush_mode", 4),
    ("compression_strategy", 5), ("output_buffer_size", 0)])
def test_bad_zlib_settings_name_their_field(field, value):
    with pytest.raises(ValueError, match=f"{field} must be"):
        Options("GZIP", **{field: value})


def test_tf_io_names_the_same_classes():
    assert tf.io.TFRecordOptions is Options and tf.io.TFRecordCompressionType is Kind
    assert tf.io.TFRecordWriter is tf.python_io.TFRecordWriter


# ---- tf.python_io ----------------------------------------------------------------------------

@pytest.mark.parametrize("options", ["ZLIB", "GZIP", Kind.ZLIB, Kind.GZIP, Options("GZIP")])
def test_python_io_round_trip_is_the_framing_compressed(options, tmp_path):
    kind = Options.get_compression_type_string(options)
    path = write(tmp_path / "c.tfrecord", RECORDS, options)
    raw = read_bytes(path)
    assert raw.startswith(MAGIC[kind])
    inflate = gzip.decompress if kind == "GZIP" else zlib.decompress
    assert inflate(raw) == framed(tmp_path, RECORDS)
    assert list(tf.python_io.tf_record_iterator(path, options)) == RECORDS
    assert list(tf.io.tf_record_iterator(path, Options(kind))) == RECORDS


@pytest.mark.parametrize("kind", ["ZLIB", "GZIP"])
def test_files_compressed_by_hand_read_back(kind, tmp_path):
    path = hand_compressed(tmp_path, kind, RECORDS)
    assert list(tf.python_io.tf_record_iterator(path, Options(kind))) == RECORDS


def test_many_records_cross_the_decompression_chunks(tmp_path):
    rng = np.random.default_rng(0)
    records = [rng.integers(0, 4, size=n, dtype=np.uint8).tobytes()
               for n in rng.integers(0, 40_000, size=40)]
    path = write(tmp_path / "big.tfrecord", records, "GZIP")
    assert list(tf.python_io.tf_record_iterator(path, "GZIP")) == records


def test_compression_level_is_honoured(tmp_path):
    data = [b"0123456789" * 2000]
    stored = read_bytes(write(tmp_path / "l0", data, Options("GZIP", compression_level=0)))
    best = read_bytes(write(tmp_path / "l9", data, Options("GZIP", compression_level=9)))
    fast = read_bytes(write(tmp_path / "l1", data, Options("GZIP", compression_level=1)))
    assert len(stored) > 20_016 > 20 * len(best)          # level 0 stores, level 9 compresses
    assert (fast[8], best[8]) == (4, 2)                    # gzip's XFL: fastest, best
    for raw in (stored, best, fast):
        assert gzip.decompress(raw) == framed(tmp_path, data)


def test_window_bits_and_other_settings_reach_zlib(tmp_path):
    # window_bits 15 with GZIP writes a zlib stream, as zlib (and TF) do
    raw = read_bytes(write(tmp_path / "w", RECORDS, Options(
        "GZIP", window_bits=15, mem_level=8, compression_strategy=zlib.Z_FILTERED,
        flush_mode=zlib.Z_SYNC_FLUSH, input_buffer_size=4096, output_buffer_size=4096)))
    assert raw.startswith(MAGIC["ZLIB"]) and zlib.decompress(raw) == framed(tmp_path, RECORDS)


def test_gzip_members_one_after_the_other_are_one_file(tmp_path):
    path = tmp_path / "members.tfrecord"
    path.write_bytes(gzip.compress(framed(tmp_path, RECORDS[:2]))
                     + gzip.compress(framed(tmp_path, RECORDS[2:])))
    assert list(tf.python_io.tf_record_iterator(str(path), "GZIP")) == RECORDS


def test_an_empty_compressed_file_has_no_records(tmp_path):
    (tmp_path / "empty").write_bytes(b"")
    assert list(tf.python_io.tf_record_iterator(str(tmp_path / "empty"), "GZIP")) == []
    path = write(tmp_path / "none.tfrecord", [], "ZLIB")
    assert list(tf.python_io.tf_record_iterator(path, "ZLIB")) == []


# ---- damaged files ---------------------------------------------------------------------------

def damaged_files(tmp_path):
    """name -> (path, declared compression, what the error says)."""
    good = read_bytes(write(tmp_path / "good.tfrecord", RECORDS, "GZIP"))
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    files = {"truncated": good[:len(good) - 30], "header only": good[:6],
             "corrupted": bytes(flipped), "trailing junk": good + b"junk"}
    out = {}
    for name, contents in files.items():
        path = tmp_path / (name.replace(" ", "_") + ".tfrecord")
        path.write_bytes(contents)
        out[name] = (str(path), "GZIP", "truncated" if name in ("truncated", "header only")
                     else "not a valid GZIP stream|CRC")
    out["not gzip"] = (str(tmp_path / "plain.tfrecord"), "GZIP", "not a valid GZIP stream")
    out["gzip read as zlib"] = (str(tmp_path / "good.tfrecord"), "ZLIB", "not a valid ZLIB stream")
    write(tmp_path / "plain.tfrecord", RECORDS)
    return out


DAMAGE = ["truncated", "header only", "corrupted", "trailing junk", "not gzip",
          "gzip read as zlib"]


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_compressed_files_are_data_loss_naming_the_file(damage, tmp_path):
    path, kind, message = damaged_files(tmp_path)[damage]
    with pytest.raises(DataLossError, match=message) as error:
        list(tf.python_io.tf_record_iterator(path, kind))
    assert path in error.value.message
    with pytest.raises(DataLossError, match=message):
        drain(tf.data.TFRecordDataset(path, kind))
    with pytest.raises(DataLossError, match=message):
        read_all([path], tf.TFRecordReader(options=kind))


def test_a_gzip_file_read_uncompressed_is_a_corrupted_record(tmp_path):
    path = write(tmp_path / "g.tfrecord", RECORDS, "GZIP")
    with pytest.raises(DataLossError, match="g.tfrecord"):
        list(tf.python_io.tf_record_iterator(path))


# ---- tf.data ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["ZLIB", "GZIP"])
def test_tfrecord_dataset_reads_compressed_files_in_order(kind, tmp_path):
    first = write(tmp_path / "1.tfrecord", RECORDS[:2], kind)
    second = hand_compressed(tmp_path, kind, RECORDS[2:])
    assert drain(tf.data.TFRecordDataset([first, second], compression_type=kind)) == RECORDS


def test_compression_type_may_be_a_fed_string_tensor(tmp_path):
    path = write(tmp_path / "z.tfrecord", RECORDS, "ZLIB")
    compression = tf.placeholder(tf.string, [])
    iterator = tf.data.TFRecordDataset(path, compression).make_initializable_iterator()
    element = iterator.get_next()
    with tf.Session() as sess:
        sess.run(iterator.initializer, {compression: "ZLIB"})
        assert [sess.run(element) for _ in RECORDS] == RECORDS
        sess.run(iterator.initializer, {compression: "GZIP"})
        with pytest.raises(DataLossError, match="not a valid GZIP stream"):
            sess.run(element)


def test_text_lines_of_a_gzipped_text_file(tmp_path):
    path = tmp_path / "lines.txt.gz"
    path.write_bytes(gzip.compress(b"alpha\nbeta\r\n\ngamma"))
    (tmp_path / "lines.z").write_bytes(zlib.compress(b"one\ntwo\n"))
    assert drain(tf.data.TextLineDataset(str(path), "GZIP")) == [b"alpha", b"beta", b"", b"gamma"]
    assert drain(tf.data.TextLineDataset([str(tmp_path / "lines.z")], compression_type="ZLIB")) == [
        b"one", b"two"]


def test_fixed_length_records_of_a_compressed_file(tmp_path):
    body = bytes(range(12))
    (tmp_path / "r.gz").write_bytes(gzip.compress(b"HH" + body + b"F"))
    dataset = tf.data.FixedLengthRecordDataset(str(tmp_path / "r.gz"), 4, 2, 1,
                                               compression_type="GZIP")
    assert drain(dataset) == [body[i:i + 4] for i in range(0, 12, 4)]
    (tmp_path / "odd.gz").write_bytes(gzip.compress(b"HH" + body[:9] + b"F"))
    with pytest.raises(DataLossError, match="not an exact multiple of the record length"):
        drain(tf.data.FixedLengthRecordDataset(str(tmp_path / "odd.gz"), 4, 2, 1,
                                               compression_type="GZIP"))


@pytest.mark.parametrize("make", [tf.data.TFRecordDataset, tf.data.TextLineDataset,
                                  lambda path, kind: tf.data.FixedLengthRecordDataset(
                                      path, 4, compression_type=kind)])
def test_an_unknown_compression_type_fails_when_read(make, tmp_path):
    dataset = make(write(tmp_path / "x.tfrecord", RECORDS), "BZIP2")
    with pytest.raises(InvalidArgumentError, match="Unsupported compression_type 'BZIP2'"):
        drain(dataset)
    with pytest.raises(ValueError, match="compression_type must be a string scalar"):
        make(str(tmp_path / "x.tfrecord"), ["GZIP", "ZLIB"])


# ---- queue-based readers ---------------------------------------------------------------------

@pytest.mark.parametrize("options", [Options("GZIP"), Kind.ZLIB, "GZIP"])
def test_tfrecord_reader_keys_count_decompressed_bytes(options, tmp_path):
    path = write(tmp_path / "r.tfrecord", RECORDS, options)
    reader = tf.TFRecordReader(options=options)
    assert reader.reader_ref.op.get_attr("compression_type") == \
        Options.get_compression_type_string(options)
    offsets = np.cumsum([0] + [16 + len(r) for r in RECORDS[:-1]])
    assert read_all([path], reader)[0] == [[f"{path}:{o}".encode(), r]
                                           for o, r in zip(offsets, RECORDS)]


def test_fixed_length_reader_decompresses_its_encoding(tmp_path):
    (tmp_path / "r.z").write_bytes(zlib.compress(b"HH" + b"abcdefghi" + b"F"))
    reader = tf.FixedLengthRecordReader(4, header_bytes=2, footer_bytes=1, encoding="ZLIB")
    path = str(tmp_path / "r.z")
    assert read_all([path], reader) == ([[f"{path}:0".encode(), b"abcd"],
                                         [f"{path}:1".encode(), b"efgh"]], [2, 1])


def test_a_flushed_unfinished_stream_gives_its_records_then_truncation(tmp_path):
    path = str(tmp_path / "open.tfrecord")
    writer = tf.python_io.TFRecordWriter(path, "GZIP")
    writer.write(b"first")
    writer.flush()
    seen = []
    with pytest.raises(DataLossError, match="truncated"):
        for record in tf.python_io.tf_record_iterator(path, "GZIP"):
            seen.append(record)
    assert seen == [b"first"]
    writer.close()
    assert list(tf.python_io.tf_record_iterator(path, "GZIP")) == [b"first"]

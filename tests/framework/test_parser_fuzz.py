"""File parsers reachable from user data, fed truncated, bit-flipped and spliced copies of
valid files: TFRecord framing, Example protos, PNG, GraphDef, and TF checkpoint bundles
(index and data). Each must give its value or a typed error, nothing else, and quickly."""

import io
import random
import struct
import time
import zlib
from pathlib import Path

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats import example_proto, tfrecord
from zmtf.framework.errors import OpError
from zmtf.formats.graph_def_proto import GraphDef
from zmtf.formats.images import ImageError
from zmtf.kernels.cpu import image_codecs
from zmtf.training import tensor_bundle

CASES = 300
FIXTURES = Path(__file__).parent / "graph_def_fixtures"


def damaged(rng, data):
    """``data`` with one to three cuts, bit flips, inserted random bytes or extreme bytes."""
    data = bytearray(data)
    for _ in range(rng.randrange(1, 4)):
        roll, at = rng.random(), rng.randrange(len(data) + 1)
        if roll < 0.3:
            del data[at:]
        elif roll < 0.7 and at < len(data):
            data[at] ^= 1 << rng.randrange(8)
        elif roll < 0.85:
            data[at:at] = rng.randbytes(rng.randrange(1, 9))
        elif at < len(data):
            data[at] = rng.choice([0x00, 0x7F, 0x80, 0xFF])
    return bytes(data)


def example_bytes():
    feature = tf.train.Feature
    return tf.train.Example(features=tf.train.Features(feature={
        "a": feature(int64_list=tf.train.Int64List(value=[1, -2, 3])),
        "b": feature(bytes_list=tf.train.BytesList(value=[b"xy"])),
        "c": feature(float_list=tf.train.FloatList(value=[1.5]))})).SerializeToString()


def png_bytes():
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    image = b"".join(b"\x01" + bytes(range(9)) for _ in range(3))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 3, 3, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(image)) + chunk(b"IEND", b""))


def jpeg_bytes():
    from zmtf.formats.images import encode_jpeg
    y, x = np.mgrid[0:16, 0:24]
    return encode_jpeg(np.stack([x * 9, y * 13, x + y], axis=-1).astype(np.uint8), 80)


def bundle_reader(tmp_path, index, data):
    prefix = str(tmp_path / f"ckpt{random.random()}")
    Path(tensor_bundle.index_filename(prefix)).write_bytes(index)
    Path(tensor_bundle.data_filename(prefix, 0, 1)).write_bytes(data)
    reader = tensor_bundle.BundleReader(prefix)
    return [reader.tensor(name) for name in ("w", "s")]


@pytest.fixture
def bundle(tmp_path):
    prefix = str(tmp_path / "valid")
    tensor_bundle.write_bundle(prefix, {"w": np.arange(6.0).reshape(2, 3),
                                        "s": np.array([b"ab", b"c"], dtype=object)})
    return (Path(tensor_bundle.index_filename(prefix)).read_bytes(),
            Path(tensor_bundle.data_filename(prefix, 0, 1)).read_bytes())


PARSERS = {
    "tfrecord": (lambda: tfrecord.encode_record(example_bytes()) * 3,
                 lambda data, _: list(tfrecord.read_records(io.BytesIO(data), "f", len(data)))),
    "example": (example_bytes, lambda data, _: example_proto.parse_example(data)),
    "png": (png_bytes, lambda data, _: image_codecs.decode_png(data, 0, False)),
    "jpeg": (jpeg_bytes, lambda data, _: image_codecs.decode_jpeg(data, 0, 1, "DecodeJpeg")),
    "graph_def": (lambda: (FIXTURES / "mlp.pb").read_bytes(), lambda data, _: GraphDef.FromString(data)),
}


def assert_fuzz_gives_typed_errors(parse, valid, seed, tmp_path):
    parse(valid, tmp_path)   # the valid file parses
    rng = random.Random(seed)
    refused = 0
    for case in range(CASES):
        data = damaged(rng, valid)
        started = time.monotonic()
        try:
            parse(data, tmp_path)
        except (OpError, ImageError):   # ImageError: the kernel's InvalidArgumentError
            refused += 1
        assert time.monotonic() - started < 2.0, f"case {case} took too long"
    assert refused > CASES // 2


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_damaged_files_give_values_or_typed_errors(name, tmp_path):
    make, parse = PARSERS[name]
    assert_fuzz_gives_typed_errors(parse, make(), sum(map(ord, name)), tmp_path)


@pytest.mark.parametrize("part", ["index", "data"])
def test_damaged_checkpoint_bundles_give_values_or_typed_errors(part, bundle, tmp_path):
    index, data = bundle
    if part == "index":
        assert_fuzz_gives_typed_errors(lambda damaged_index, path: bundle_reader(path, damaged_index, data), index, 1, tmp_path)
    else:
        assert_fuzz_gives_typed_errors(lambda damaged_data, path: bundle_reader(path, index, damaged_data), data, 2, tmp_path)


def test_damaged_csv_lines_give_values_or_typed_errors():
    lines = tf.placeholder(tf.string, [None])
    columns = tf.io.decode_csv(lines, [[0], [0.0], [""], [np.int64(0)]])
    valid = b'1,2.5,"a,b",7'
    rng = random.Random(3)
    refused = 0
    with tf.Session() as sess:
        assert sess.run(columns, {lines: [valid]})[2][0] == b"a,b"
        for _ in range(CASES):
            try:
                sess.run(columns, {lines: [damaged(rng, valid) for _ in range(3)]})
            except OpError:
                refused += 1
    assert refused > CASES // 2

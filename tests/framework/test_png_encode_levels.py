"""tf.image.encode_png at every compression level TF takes (-1 to 9), 8 and 16 bits, 1 to 4
channels: the pixels come back exactly (through zmtf's decode_png and through Pillow, a reader
of its own), zlib is asked for TF's level, and rows are stored unfiltered (the encode cost of
the encoder zmtf had before Pillow, not Pillow's per-row filter search)."""

from __future__ import annotations

import io
import struct
import zlib

import numpy as np
from PIL import Image

import zmtf as tf

LEVELS = range(-1, 10)
RNG = np.random.default_rng(2801)


def _chunks(png: bytes) -> dict[bytes, bytes]:
    chunks, pos = {}, 8
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind = png[pos + 4:pos + 8]
        chunks[kind] = chunks.get(kind, b"") + png[pos + 8:pos + 8 + length]
        pos += 12 + length
    return chunks


def _zlib_level_class(level: int) -> int:
    """The FLEVEL bits zlib writes into its header for a compression level."""
    level = 6 if level < 0 else level
    return 0 if level < 2 else 1 if level < 6 else 2 if level == 6 else 3


def _encoded_images() -> list[tuple[np.ndarray, int, bytes]]:
    """(pixels, level, PNG) for every dtype, channel count and level, from one session."""
    cases = []
    with tf.Graph().as_default(), tf.Session() as sess:
        for dtype in (np.uint8, np.uint16):
            pixels = tf.placeholder(tf.as_dtype(dtype), [None, None, None])
            encoders = {level: tf.image.encode_png(pixels, compression=level) for level in LEVELS}
            for channels in (1, 2, 3, 4):
                image = RNG.integers(0, np.iinfo(dtype).max + 1, (9, 13, channels)).astype(dtype)
                image[:4] = image[0]   # some repeats, so the levels have something to do
                encoded = sess.run(encoders, {pixels: image})
                cases.extend((image, level, encoded[level]) for level in LEVELS)
    return cases


def test_every_level_round_trips_exactly_and_asks_zlib_for_that_level():
    cases = _encoded_images()
    assert len(cases) == 2 * 4 * len(LEVELS)
    with tf.Graph().as_default(), tf.Session() as sess:
        data = tf.placeholder(tf.string, [])
        decoders = {dtype: tf.image.decode_png(data, dtype=tf.as_dtype(dtype))
                    for dtype in (np.uint8, np.uint16)}
        for image, level, png in cases:
            decoded = sess.run(decoders[image.dtype.type], {data: png})
            assert decoded.dtype == image.dtype and np.array_equal(decoded, image), level
            chunks = _chunks(png)
            assert (chunks[b"IDAT"][1] >> 6) == _zlib_level_class(level)
            height, width, channels = image.shape
            rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(height, -1)
            assert not rows[:, 0].any()   # filter type 0 on every row
            samples = image.astype(">u2") if image.dtype == np.uint16 else image
            assert rows[:, 1:].tobytes() == samples.tobytes()


def test_pillow_reads_the_files_as_written():
    for image, level, png in _encoded_images():
        with Image.open(io.BytesIO(png)) as opened:
            opened.load()   # Pillow checks the chunk CRCs and inflates the rows
            if image.dtype == np.uint8:
                pixels = np.asarray(opened)
                assert np.array_equal(pixels.reshape(image.shape), image), level
            elif image.shape[2] == 1:
                assert np.array_equal(np.asarray(opened).astype(np.uint16), image[..., 0])

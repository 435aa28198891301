"""PNG headers are data: a claim of gigapixels is refused before inflating, and an IDAT stream
that inflates past the image its header describes is not inflated without end."""

import struct
import tracemalloc
import zlib

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.errors import InvalidArgumentError, ResourceExhaustedError
from zmtf.kernels.cpu import common as _common
from zmtf.testing import run_fetches as run


def png(width, height, stream):
    """An 8-bit RGB PNG with the given header size and (already compressed) IDAT data."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", stream)
            + chunk(b"IEND", b""))


def rows(width, height):
    return b"".join(b"\x00" + bytes(range(3 * width)) for _ in range(height))


def test_a_header_claiming_a_billion_pixels_is_refused_as_tf_does():
    data = png(40000, 40000, zlib.compress(rows(4, 4)))
    with pytest.raises(InvalidArgumentError, match="PNG size too large for int: 40000 by 40000"):
        run(tf.image.decode_png(tf.constant(data)))


def test_a_header_past_the_output_limit_is_refused_before_inflating(monkeypatch):
    monkeypatch.setattr(_common, "MAX_OUTPUT_BYTES", 1 << 20)
    data = png(1000, 1000, zlib.compress(rows(4, 4)))
    with pytest.raises(ResourceExhaustedError, match="decoded image.*DecodePng.*past the limit"):
        run(tf.image.decode_png(tf.constant(data)))


def test_a_stream_inflating_far_past_its_header_is_not_inflated_whole():
    pixels = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    image = b"".join(b"\x00" + r.tobytes() for r in pixels)
    bomb = zlib.compress(image + b"\x00" * (64 << 20), 9)   # 64 MiB past a 4x4 image
    decode = tf.image.decode_png(tf.constant(png(4, 4, bomb)))
    run(tf.image.decode_png(tf.constant(png(4, 4, zlib.compress(image)))))   # JIT compiled first
    tracemalloc.start()
    try:
        np.testing.assert_array_equal(run(decode), pixels)   # TF reads it too, extra ignored
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, peak


def test_a_little_data_past_the_image_is_still_read():
    pixels = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    stream = zlib.compress(b"".join(b"\x00" + r.tobytes() for r in pixels) + b"\x00" * 10)
    np.testing.assert_array_equal(run(tf.image.decode_png(tf.constant(png(4, 4, stream)))), pixels)

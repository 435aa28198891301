"""tf.image.decode_png / encode_png / decode_image (over Pillow): round trips at 8 and 16 bits, every colour
type (palettes, low-bit grey, tRNS), Adam7 interlacing and all five row filters, TF's channel
and depth conversions, and the errors for corrupt, empty and non-PNG data."""

import struct
import zlib

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError, UnimplementedError
from zmtf.testing import run_fetches as run

RNG = np.random.default_rng(6)
ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2)]


def chunk(kind, data):
    """A PNG chunk: length, type, data, CRC-32 of type + data (big-endian)."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _filtered_rows(samples, depth, cycle_filters):
    """PNG scanlines of [h, w, c] samples, filter type 0, or cycling through 0-4."""
    h = samples.shape[0]
    if depth == 16:
        rows = samples.astype(">u2").reshape(h, -1).view(np.uint8)
    elif depth == 8:
        rows = samples.astype(np.uint8).reshape(h, -1)
    else:
        shifts = np.arange(depth - 1, -1, -1)
        bits = ((samples.reshape(h, -1, 1) >> shifts) & 1).astype(np.uint8).reshape(h, -1)
        rows = np.packbits(bits, axis=1)
    bpp = max(1, samples.shape[2] * depth // 8)
    previous = np.zeros(rows.shape[1], np.int64)
    out = b""
    for index, row in enumerate(rows.astype(np.int64)):
        kind = index % 5 if cycle_filters else 0
        left = np.concatenate([np.zeros(bpp, np.int64), row[:-bpp]])
        corner = np.concatenate([np.zeros(bpp, np.int64), previous[:-bpp]])
        p = left + previous - corner
        pa, pb, pc = abs(p - left), abs(p - previous), abs(p - corner)
        paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, previous, corner))
        predictor = [0, left, previous, (left + previous) // 2, paeth][kind]
        out += bytes([kind]) + ((row - predictor) & 0xFF).astype(np.uint8).tobytes()
        previous = row
    return out


def _png(samples, depth, color, palette=None, trns=None, interlace=False, cycle_filters=False):
    h, w, _ = samples.shape
    if interlace:
        raw = b"".join(_filtered_rows(samples[y::dy, x::dx], depth, cycle_filters)
                       for x, y, dx, dy in ADAM7 if samples[y::dy, x::dx].size)
    else:
        raw = _filtered_rows(samples, depth, cycle_filters)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0,
                                                               0, int(interlace)))
    if palette is not None:
        data += chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes())
    if trns is not None:
        data += chunk(b"tRNS", trns)
    return data + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_encode_decode_round_trip(channels, dtype):
    image = RNG.integers(0, np.iinfo(dtype).max + 1, (5, 7, channels)).astype(dtype)
    encoded = tf.image.encode_png(image)
    assert encoded.dtype == tf.string and encoded.shape.as_list() == []
    data = run(encoded)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    decoded = tf.image.decode_png(data, dtype=tf.as_dtype(dtype))
    assert decoded.shape.as_list() == [None, None, None]
    np.testing.assert_array_equal(run(decoded), image)


@pytest.mark.parametrize("interlace", [False, True])
def test_filters_and_interlacing_decode_to_the_same_pixels(interlace):
    image = RNG.integers(0, 256, (9, 11, 3)).astype(np.uint8)
    data = _png(image, 8, 2, interlace=interlace, cycle_filters=True)
    np.testing.assert_array_equal(run(tf.image.decode_png(data)), image)


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_low_bit_grey_scales_to_8_bits(depth):
    samples = RNG.integers(0, 1 << depth, (6, 9, 1))
    got = run(tf.image.decode_png(_png(samples, depth, 0, interlace=depth == 2)))
    np.testing.assert_array_equal(got, samples * (255 // ((1 << depth) - 1)))


def test_palette_with_transparency():
    palette = RNG.integers(0, 256, (5, 3))
    indices = RNG.integers(0, 5, (4, 6, 1))
    data = _png(indices, 4, 3, palette=palette, trns=bytes([0, 100]))
    rgba, rgb = run([tf.image.decode_png(data), tf.image.decode_png(data, channels=3)])
    np.testing.assert_array_equal(rgba[..., :3], palette[indices[..., 0]])
    np.testing.assert_array_equal(rgba[..., 3], np.array([0, 100, 255, 255, 255])[indices[..., 0]])
    np.testing.assert_array_equal(rgb, rgba[..., :3])


def test_channel_and_depth_conversions_follow_tf():
    rgb = RNG.integers(0, 256, (3, 4, 3)).astype(np.uint8)
    rgb[0, 0] = [9, 9, 9]
    data = run(tf.image.encode_png(rgb))
    grey, rgba, wide = run([tf.image.decode_png(data, channels=1),
                            tf.image.decode_png(data, channels=4),
                            tf.image.decode_png(data, dtype=tf.uint16)])
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    weighted = (9797 * r + 19234 * g + 3737 * b) >> 15
    np.testing.assert_array_equal(grey[..., 0], weighted)       # libpng's truncating weights
    assert grey[0, 0, 0] == 9
    np.testing.assert_array_equal(rgba[..., 3], 255)
    np.testing.assert_array_equal(wide, rgb.astype(np.uint16) * 257)
    deep = RNG.integers(0, 65536, (2, 3, 1)).astype(np.uint16)
    shallow = run(tf.image.decode_png(run(tf.image.encode_png(deep)), channels=3))
    np.testing.assert_array_equal(shallow, np.repeat(deep >> 8, 3, axis=-1))
    grey_trns = _png(np.array([[[3], [7]]]), 8, 0, trns=struct.pack(">H", 7))
    assert run(tf.image.decode_png(grey_trns)).shape == (1, 2, 1)   # tRNS: alpha on request
    np.testing.assert_array_equal(run(tf.image.decode_png(grey_trns, channels=4))[0, :, 3],
                                  [255, 0])


def test_decode_image_sniffs_png_and_converts_dtype():
    image = RNG.integers(0, 65536, (4, 5, 3)).astype(np.uint16)
    data = run(tf.image.encode_png(image))
    floats = tf.image.decode_image(data, dtype=tf.float32)
    assert floats.shape.ndims is None
    fixed = tf.image.decode_image(data, channels=3, expand_animations=False)
    assert fixed.shape.as_list() == [None, None, 3]
    got_floats, got_fixed = run([floats, fixed])
    np.testing.assert_allclose(got_floats, image / 65535.0, rtol=1e-6)
    np.testing.assert_array_equal(got_fixed, image >> 8)


@pytest.mark.parametrize("mangle,message", [
    (lambda d: b"", "Input is empty."),
    (lambda d: d[:40], "Failed to initialize decoder"),
    (lambda d: d[:30] + b"\x00" + d[31:], "Failed to initialize decoder"),   # IHDR CRC
    (lambda d: d[:-5], "Invalid PNG data, size"),
    (lambda d: d[:50] + b"\x00\x01" + d[52:], "Invalid PNG data, size"),   # IDAT CRC
    (lambda d: b"hello world", "Unknown image file format"),
])
def test_corrupt_data_raises_invalid_argument(mangle, message):
    data = run(tf.image.encode_png(RNG.integers(0, 256, (5, 7, 3)).astype(np.uint8)))
    contents = tf.placeholder(tf.string, [])
    with pytest.raises(InvalidArgumentError, match=message):
        run(tf.image.decode_png(contents), {contents: mangle(data)})


def test_gif_and_bmp_are_not_built():
    contents = tf.placeholder(tf.string, [])
    with pytest.raises(UnimplementedError, match="GIF image and zmtf decodes PNG and JPEG"):
        run(tf.image.decode_image(contents), {contents: b"GIF89a" + b"0" * 40})
    for fn, what in [(tf.image.decode_bmp, "BMP"), (tf.image.decode_gif, "GIF")]:
        with pytest.raises(UnimplementedError, match=f"no {what} codec.*tf.image.decode_png"):
            fn(contents)
    jpeg_bytes = b"\xff\xd8\xff\xe0" + b"0" * 40
    assert run(tf.image.is_jpeg(contents), {contents: jpeg_bytes})
    assert not run(tf.image.is_jpeg(contents), {contents: b"\x89PNG"})


def test_encode_png_errors():
    with pytest.raises(TypeError, match="uint8, uint16"):
        tf.image.encode_png(np.zeros((2, 2, 3), np.float32))
    image = tf.placeholder(tf.uint8, [None, None, None])
    with pytest.raises(InvalidArgumentError, match="1, 2, 3, or 4 channels, got 5"):
        run(tf.image.encode_png(image), {image: np.zeros((2, 2, 5), np.uint8)})
    with pytest.raises(ValueError, match="channels must be one of"):
        tf.image.decode_png(b"", channels=2)

"""PNG encoding, written by hand (pure: pixels in, bytes out; zlib and struct only): 8 or 16
bits per channel, no interlace, every row stored with filter type 0. Image summaries and
tf.image.encode_png use it; the decoder is kernels/cpu/png_decode.py."""

from __future__ import annotations

import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
# channels -> PNG colour type: grey, grey + alpha, RGB, RGBA
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}


def chunk(kind: bytes, data: bytes) -> bytes:
    """Length, type, data, CRC-32 of type + data (big-endian, as PNG wants)."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(pixels: np.ndarray, compression: int = -1) -> bytes:
    """A ``[height, width, channels]`` uint8 or uint16 array (1 to 4 channels) as PNG bytes;
    ``compression`` is zlib's level (-1: its default)."""
    if pixels.dtype not in (np.uint8, np.uint16) or pixels.ndim != 3 or \
            pixels.shape[2] not in _COLOR_TYPES:
        raise ValueError(f"encode_png takes [height, width, 1-4] uint8 or uint16 pixels, got "
                         f"{pixels.dtype}{list(pixels.shape)}")
    height, width, channels = pixels.shape
    if height == 0 or width == 0:
        raise ValueError(f"a PNG has at least one pixel, got a {height}x{width} image")
    depth = 8 * pixels.dtype.itemsize
    header = struct.pack(">IIBBBBB", width, height, depth, _COLOR_TYPES[channels], 0, 0, 0)
    samples = pixels.astype(">u2") if depth == 16 else pixels
    raw = samples.reshape(height, -1).view(np.uint8)
    rows = np.zeros((height, 1 + raw.shape[1]), np.uint8)   # column 0: filter type 0
    rows[:, 1:] = raw
    return (SIGNATURE + chunk(b"IHDR", header) +
            chunk(b"IDAT", zlib.compress(rows.tobytes(), compression)) + chunk(b"IEND", b""))

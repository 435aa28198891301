"""A PNG decoder (zlib + numpy + one numba loop for the row filters) giving what TF's
libpng-based DecodePng gives: every colour type and bit depth, Adam7 interlacing, palettes
and tRNS transparency, then TF's conversions to the requested channels (1, 3 or 4; 0: as
stored) and depth (8 or 16 bits).

libpng's rules are kept where they show in the pixels: RGB to grey uses the fixed-point
weights 9797 / 19234 / 3737 (of 32768) and truncates at 8 bits, rounds at 16; identical
R, G and B stay as they are; 16 to 8 bits keeps the high byte, 8 to 16 multiplies by 257;
low-bit grey is scaled to 8 bits; an added alpha is opaque.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from zmtf.formats.png import SIGNATURE
from zmtf.kernels.cpu.common import check_output_size
from zmtf.kernels.cpu._jit import jit

#: colour type -> samples per pixel: grey, RGB, palette, grey + alpha, RGBA
_SAMPLES = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
_DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
_ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
          (0, 1, 1, 2)]
_GREY_WEIGHTS = (9797, 19234, 3737)


class PngError(ValueError):
    """Malformed PNG input; the kernel turns it into InvalidArgumentError."""


def _header_error() -> PngError:
    return PngError("Invalid PNG. Failed to initialize decoder.")


def _chunks(data: bytes) -> tuple[dict, bytes, bool]:
    """(header fields and ancillary chunks, IDAT bytes, whether IEND was reached)."""
    info: dict = {}
    idat: list[bytes] = []
    pos = len(SIGNATURE)
    while True:
        if pos + 8 > len(data):
            if not idat:
                raise _header_error()
            return info, b"".join(idat), False
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        crc = data[pos + 8 + length:pos + 12 + length]
        critical = not kind[0] & 0x20
        ok = len(body) == length and len(crc) == 4 and \
            struct.unpack(">I", crc)[0] == zlib.crc32(kind + body)
        if not ok and (critical or len(body) < length):
            if "width" not in info or (not idat and kind != b"IDAT"):
                raise _header_error()
            return info, b"".join(idat), False
        pos += 12 + length
        if "width" not in info:
            if kind != b"IHDR" or length != 13:
                raise _header_error()
            _parse_header(body, info)
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"PLTE" and ok:   # libpng drops entries a low bit depth cannot index
            entries = np.frombuffer(body[:len(body) - len(body) % 3], np.uint8).reshape(-1, 3)
            limit = 1 << info["depth"] if info["color"] == 3 else 256
            info["palette"] = entries[:limit]
        elif kind == b"tRNS" and ok:
            info["trns"] = body
        elif kind == b"IEND":
            return info, b"".join(idat), True


def _parse_header(body: bytes, info: dict) -> None:
    width, height, depth, color, compression, filtering, interlace = struct.unpack(">IIBBBBB",
                                                                                   body)
    if (width == 0 or height == 0 or color not in _SAMPLES or depth not in _DEPTHS[color]
            or compression or filtering or interlace > 1):
        raise _header_error()
    info.update(width=width, height=height, depth=depth, color=color, interlace=interlace)


@jit()
def _unfilter(raw, rows, row_bytes, bpp):  # type: ignore[no-untyped-def]
    """Undo the per-row filters in place of ``raw`` [rows, 1 + row_bytes]; -1 on a bad type."""
    out = np.zeros((rows, row_bytes), np.uint8)
    for r in range(rows):
        kind = raw[r, 0]
        for i in range(row_bytes):
            left = np.int32(out[r, i - bpp]) if i >= bpp else np.int32(0)
            up = np.int32(out[r - 1, i]) if r > 0 else np.int32(0)
            corner = np.int32(out[r - 1, i - bpp]) if r > 0 and i >= bpp else np.int32(0)
            value = np.int32(raw[r, 1 + i])
            if kind == 0:
                pred = np.int32(0)
            elif kind == 1:
                pred = left
            elif kind == 2:
                pred = up
            elif kind == 3:
                pred = (left + up) // 2
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else (up if pb <= pc else corner)
            else:
                return out, -1
            out[r, i] = np.uint8((value + pred) & 0xFF)
    return out, 0


def _samples(stream: bytes, offset: int, width: int, height: int, info: dict,
             size: int) -> tuple[np.ndarray, int]:
    """[height, width, samples] of one (sub)image starting at ``offset``; the next offset."""
    per_pixel = _SAMPLES[info["color"]]
    depth = info["depth"]
    row_bytes = (width * per_pixel * depth + 7) // 8
    end = offset + height * (row_bytes + 1)
    if end > len(stream):
        raise PngError(f"Invalid PNG data, size {size}")
    raw = np.frombuffer(stream, np.uint8, count=end - offset, offset=offset)
    rows, status = _unfilter(raw.reshape(height, row_bytes + 1), height, row_bytes,
                             max(1, per_pixel * depth // 8))
    if status < 0:
        raise PngError(f"Invalid PNG data, size {size}")
    if depth == 16:
        values = rows.view(">u2").astype(np.uint16)
    elif depth == 8:
        values = rows.astype(np.uint16)
    else:
        bits = np.unpackbits(rows, axis=1)[:, :width * per_pixel * depth]
        weights = (1 << np.arange(depth - 1, -1, -1)).astype(np.uint16)
        values = bits.reshape(height, -1, depth).astype(np.uint16) @ weights
    return values.reshape(height, width, per_pixel), end


def _pixels(stream: bytes, info: dict, size: int) -> np.ndarray:
    width, height = info["width"], info["height"]
    if not info["interlace"]:
        return _samples(stream, 0, width, height, info, size)[0]
    image = np.zeros((height, width, _SAMPLES[info["color"]]), np.uint16)
    offset = 0
    for x0, y0, dx, dy in _ADAM7:
        sub_w, sub_h = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if sub_w <= 0 or sub_h <= 0:
            continue
        sub, offset = _samples(stream, offset, sub_w, sub_h, info, size)
        image[y0::dy, x0::dx] = sub
    return image


def _transparency(samples: np.ndarray, info: dict) -> np.ndarray | None:
    """The alpha channel tRNS gives a grey or RGB image (None without tRNS)."""
    trns = info.get("trns")
    if trns is None or info["color"] not in (0, 2):
        return None
    key = np.frombuffer(trns, ">u2").astype(np.uint16)[:samples.shape[2]]
    if key.size < samples.shape[2]:
        return None
    match = (samples == key).all(axis=-1, keepdims=True)
    return np.where(match, 0, (1 << info["depth"]) - 1).astype(np.uint16)


def _expanded(samples: np.ndarray, info: dict) -> tuple[np.ndarray, int, bool]:
    """Palette to RGB(A), low-bit grey to 8 bits, tRNS to alpha: (samples, depth, has alpha)."""
    depth, color = info["depth"], info["color"]
    if color == 3:
        palette = info.get("palette")
        if palette is None or samples.max(initial=0) >= len(palette):
            raise PngError("Invalid PNG data: palette index out of range or no PLTE chunk")
        rgb = palette[samples[..., 0]].astype(np.uint16)
        trns = info.get("trns")
        if trns is None or len(trns) > len(palette):   # libpng ignores an oversized tRNS
            info.pop("trns", None)
            return rgb, 8, False
        alpha = np.full(256, 255, np.uint16)
        alpha[:min(len(trns), 256)] = np.frombuffer(trns[:256], np.uint8)
        return np.concatenate([rgb, alpha[samples]], axis=-1), 8, True
    alpha = _transparency(samples, info)
    if color == 0 and depth < 8:
        samples = samples * np.uint16(255 // ((1 << depth) - 1))
        depth = 8
    if alpha is not None:
        alpha = np.where(alpha > 0, (1 << depth) - 1, 0).astype(np.uint16)
        return np.concatenate([samples, alpha], axis=-1), depth, True
    return samples, depth, color in (4, 6)


def _to_grey(rgb: np.ndarray, depth: int) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    weighted = _GREY_WEIGHTS[0] * r + _GREY_WEIGHTS[1] * g + _GREY_WEIGHTS[2] * b
    grey = (weighted + (16384 if depth == 16 else 0)) >> 15
    return np.where((r == g) & (r == b), r, grey).astype(np.uint16)[..., None]


def _stream_bytes(info: dict) -> int:
    """How many bytes the inflated image data of the header's image takes (filter bytes too)."""
    width, height, bits = info["width"], info["height"], _SAMPLES[info["color"]] * info["depth"]
    passes = _ADAM7 if info["interlace"] else [(0, 0, 1, 1)]
    total = 0
    for x0, y0, dx, dy in passes:
        sub_w, sub_h = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if sub_w > 0 and sub_h > 0:
            total += sub_h * ((sub_w * bits + 7) // 8 + 1)
    return total


def decode_png(data: bytes, channels: int, sixteen_bits: bool, node: str = "DecodePng") -> np.ndarray:
    """[height, width, channels] uint8 (uint16 with ``sixteen_bits``) pixels of a PNG; an image
    too large to decode is a ResourceExhaustedError naming ``node``, before any inflating."""
    if not data:
        raise PngError("Input is empty.")
    if not data.startswith(SIGNATURE):
        raise _header_error()
    info, stream_z, complete = _chunks(data)
    # the header's claim is checked before inflating: a few MB of zlib can claim gigapixels
    width, height = info["width"], info["height"]
    if not 0 < width < 1 << 27 or not 0 < height < 1 << 27 or width * height >= 1 << 29:
        raise PngError(f"PNG size too large for int: {width} by {height}")   # TF's limits
    check_output_size((height, width, 4), np.uint16, node, "the decoded image")
    try:
        inflater = zlib.decompressobj()
        expected = _stream_bytes(info)
        stream = inflater.decompress(stream_z, expected)   # what follows is ignored, as libpng does
    except zlib.error:
        raise PngError(f"Invalid PNG data, size {len(data)}") from None
    whole = inflater.eof or (len(stream) == expected and inflater.unconsumed_tail)
    if not complete or not whole:
        raise PngError(f"Invalid PNG data, size {len(data)}")
    samples, depth, has_alpha = _expanded(_pixels(stream, info, len(data)), info)
    colour_channels = samples.shape[2] - has_alpha
    if not channels:    # as stored: tRNS adds an alpha channel to palettes only
        channels = 3 + has_alpha if info["color"] == 3 else _SAMPLES[info["color"]]
    want_alpha, want_grey = channels % 2 == 0, channels < 3
    colour, alpha = samples[..., :colour_channels], samples[..., colour_channels:]
    if want_grey and colour_channels == 3:
        colour = _to_grey(colour, depth)
    elif not want_grey and colour_channels == 1:
        colour = np.repeat(colour, 3, axis=-1)
    if want_alpha and not has_alpha:
        # TF asks libpng for the filler (1 << file bit depth) - 1, so a 1-, 2- or 4-bit file
        # gets alpha 1, 3 or 15 rather than opaque; kept for identical pixels
        filler = ((1 << info["depth"]) - 1) & ((1 << depth) - 1)
        alpha = np.full(colour.shape[:2] + (1,), filler, np.uint16)
    out = np.concatenate([colour, alpha], axis=-1) if want_alpha else colour
    if sixteen_bits:
        return (out * np.uint16(257)).astype(np.uint16) if depth == 8 else out.astype(np.uint16)
    return (out >> 8).astype(np.uint8) if depth == 16 else out.astype(np.uint8)

"""PNG and JPEG over Pillow (PNG encoding is zlib's, see encode_png): pixels in, bytes out,
and bytes in, the samples as stored out.

TF's own conversions (channel counts, libpng's grey weights, 8 <-> 16 bits) are the kernels'
(kernels/cpu/image_codecs.py); what is here is the codec. Decoding is two steps, so that the
caller can refuse an image by its header before anything is inflated: ``open_png`` /
``open_jpeg`` read the header (Pillow is lazy), ``png_samples`` / ``jpeg_samples`` decode.
Malformed input raises ImageError with TF's wording.

Pillow keeps 16-bit colour in 8-bit modes; the samples of a 16-bit RGB(A) PNG are therefore
decoded twice, the high bytes and the low bytes (its raw modes ``;16B`` and ``;16L``), and
16-bit grey + alpha as the 4 bytes of each pixel. Encoding is not Pillow's encoder (see
encode_png: its per-row filter search doubles the time): the PNG is its IHDR, one IDAT of
unfiltered rows deflated by zlib at TF's level, and IEND, framed by Pillow's ``putchunk``.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
from PIL import Image, PngImagePlugin

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
JPEG_SIGNATURE = b"\xff\xd8\xff"
_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"
_PNG_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}
_COLOR_TYPES = {1: 0, 2: 4, 3: 2, 4: 6}   # channels -> PNG colour type


class ImageError(ValueError):
    """Malformed image bytes; the kernels turn it into InvalidArgumentError."""


@dataclass
class Opened:
    """A parsed header: the size, and the PNG's bit depth and colour type (JPEG: 8, None)."""

    data: bytes
    width: int
    height: int
    depth: int
    color: int | None
    image: Any


def _open(data: bytes, kind: str) -> Any:
    try:
        return Image.open(io.BytesIO(data), formats=[kind])
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
        # the warning is raised only where warnings are errors (Pillow's 89M-pixel notice)
        raise ImageError(f"image too large to decode: {error}") from None
    except (OSError, SyntaxError, ValueError, struct.error):
        raise ImageError(f"Invalid {kind}. Failed to initialize decoder.") from None


# ---- PNG ----------------------------------------------------------------------------------
def open_png(data: bytes, check: Callable[[int, int], None]) -> Opened:
    """The header of a PNG (nothing inflated yet); ``check(width, height)`` sees the size the
    IHDR claims before Pillow does (Pillow refuses past its own pixel limit at once)."""
    if not data:
        raise ImageError("Input is empty.")
    if data.startswith(PNG_SIGNATURE) and data[12:16] == b"IHDR" and len(data) >= 24:
        check(*struct.unpack(">II", data[16:24]))
    image = _open(data, "PNG")
    depth, color = data[24], data[25]   # IHDR is the first chunk: Pillow has checked it
    return Opened(data, image.width, image.height, depth, color, image)


def _load(opened: Opened, rawmode: str | None = None) -> np.ndarray:
    """The pixels Pillow decodes, with ``rawmode`` in place of the file's own if given."""
    image = opened.image if rawmode is None else _open(opened.data, "PNG")
    if rawmode is not None:
        image.tile = [image.tile[0]._replace(args=rawmode)]
    try:
        image.load()
    except (OSError, SyntaxError, ValueError, struct.error, zlib.error, EOFError):
        raise ImageError(f"Invalid PNG data, size {len(opened.data)}") from None
    if opened.data.rfind(_IEND) < 0:   # as libpng's png_read_end: a cut file is invalid
        raise ImageError(f"Invalid PNG data, size {len(opened.data)}")
    return np.asarray(image.convert("L") if image.mode == "1" else image)


def _wide(opened: Opened, high: str, low: str) -> np.ndarray:
    """16-bit samples from two decodes: the high bytes and the low bytes."""
    return (_load(opened, high).astype(np.uint16) << 8) | _load(opened, low)


def png_samples(opened: Opened) -> tuple[np.ndarray, int, bool]:
    """([height, width, samples] uint16 pixels, their bit depth (8 or 16), whether the last
    sample is alpha): palettes expanded to RGB(A), low-bit grey scaled to 8 bits, and a tRNS
    colour key made an alpha channel, as libpng's transformations for TF make them."""
    depth, color = opened.depth, opened.color
    transparency = opened.image.info.get("transparency")
    if color == 3:
        return _expanded_palette(opened, _load(opened), transparency)
    if depth == 16 and color == 2:
        samples = _wide(opened, "RGB;16B", "RGB;16L")
    elif depth == 16 and color == 6:
        samples = _wide(opened, "RGBA;16B", "RGBA;16L")
    elif depth == 16 and color == 4:   # bytes L-high, L-low, A-high, A-low as "RGBA"
        quads = _load(opened, "RGBA").astype(np.uint16)
        samples = np.stack([quads[..., 0] << 8 | quads[..., 1],
                            quads[..., 2] << 8 | quads[..., 3]], axis=-1)
    else:
        samples = _load(opened).astype(np.uint16)
    if samples.ndim == 2:
        samples = samples[..., None]
    out_depth = 16 if depth == 16 else 8
    if transparency is None or color not in (0, 2):
        return samples, out_depth, color in (4, 6)
    key = np.atleast_1d(np.asarray(transparency, np.int64))
    if depth < 8:   # Pillow has scaled low-bit grey to 8 bits; the key is in file units
        key = key * (255 // ((1 << depth) - 1))
    opaque = (1 << out_depth) - 1
    alpha = np.where((samples == key).all(axis=-1, keepdims=True), 0, opaque)
    return np.concatenate([samples, alpha.astype(np.uint16)], axis=-1), out_depth, True


def _expanded_palette(opened: Opened, indices: np.ndarray, transparency: Any
                      ) -> tuple[np.ndarray, int, bool]:
    palette_bytes = opened.image.palette.palette if opened.image.palette else b""
    palette = np.frombuffer(palette_bytes[:len(palette_bytes) - len(palette_bytes) % 3],
                            np.uint8).reshape(-1, 3)[:1 << opened.depth]
    if not len(palette) or int(indices.max(initial=0)) >= len(palette):
        raise ImageError("Invalid PNG data: palette index out of range or no PLTE chunk")
    rgb = palette[indices].astype(np.uint16)
    if isinstance(transparency, int):   # Pillow's form of "one entry fully transparent"
        transparency = b"\xff" * transparency + b"\x00"
    if not isinstance(transparency, bytes) or len(transparency) > len(palette):
        return rgb, 8, False   # no tRNS, or one libpng ignores (longer than the palette)
    alpha = np.full(256, 255, np.uint16)
    alpha[:len(transparency)] = np.frombuffer(transparency, np.uint8)
    return np.concatenate([rgb, alpha[indices][..., None]], axis=-1), 8, True


def encode_png(pixels: np.ndarray, compression: int = -1) -> bytes:
    """A ``[height, width, channels]`` uint8 or uint16 array (1 to 4 channels) as PNG bytes;
    ``compression`` is zlib's level, as TF's (-1: zlib's default, 6; 0: stored).

    Every row is stored with filter type 0 (none) and the rows deflated by zlib at that
    level: Pillow's encoder picks one of five filters for every row, which costs 1.5-2.5x
    the encode time on photos, screenshots and charts alike (and Pillow has no 16-bit
    colour modes); the files are then those zmtf wrote before Pillow, decoded alike by any
    PNG reader, larger than libpng's on photos and smaller on screenshots."""
    if pixels.dtype not in (np.uint8, np.uint16) or pixels.ndim != 3 or \
            pixels.shape[2] not in _PNG_MODES:
        raise ValueError(f"encode_png takes [height, width, 1-4] uint8 or uint16 pixels, got "
                         f"{pixels.dtype}{list(pixels.shape)}")
    height, width, channels = pixels.shape
    if height == 0 or width == 0:
        raise ValueError(f"a PNG has at least one pixel, got a {height}x{width} image")
    if not -1 <= compression <= 9:
        raise ValueError(f"encode_png: compression is zlib's level, -1 to 9, got {compression}")
    depth = 8 * pixels.dtype.itemsize
    samples = pixels.astype(">u2", copy=False) if depth == 16 else pixels
    rows = np.zeros((height, 1 + width * channels * pixels.dtype.itemsize), np.uint8)
    rows[:, 1:] = samples.reshape(height, -1).view(np.uint8)   # column 0: filter type 0
    out = io.BytesIO()
    out.write(PNG_SIGNATURE)
    PngImagePlugin.putchunk(out, b"IHDR", struct.pack(">IIBBBBB", width, height, depth,
                                                      _COLOR_TYPES[channels], 0, 0, 0))
    PngImagePlugin.putchunk(out, b"IDAT", zlib.compress(rows.tobytes(), compression))
    PngImagePlugin.putchunk(out, b"IEND", b"")
    return out.getvalue()


# ---- JPEG ---------------------------------------------------------------------------------
def open_jpeg(data: bytes, check: Callable[[int, int], None]) -> Opened:
    """The header of a JPEG (nothing decoded yet), its size given to ``check``."""
    if not data:
        raise ImageError("Input is empty.")
    image = _open(data, "JPEG")
    check(image.width, image.height)
    return Opened(data, image.width, image.height, 8, None, image)


def jpeg_samples(opened: Opened, channels: int, ratio: int, accurate_dct: bool = False
                 ) -> np.ndarray:
    """[height, width, channels] uint8 pixels; ``channels`` 0: as stored (1 or 3); ``ratio``
    (1, 2, 4, 8) downscales while decoding, as libjpeg's scale_denom does for TF.

    TF decodes with libjpeg's fast integer DCT unless asked for the accurate one; Pillow's
    decoder takes that choice as the second item of its ``decoderconfig`` (its "draft" flag:
    fast DCT, and chroma upsampled without libjpeg's "fancy" smoothing). The pixels are then
    TF's exactly for grey output, 4:4:4 files, ``ratio`` > 1 and ``INTEGER_ACCURATE``; a 4:2:0
    file at full size differs from TF's fancy upsampling by a few levels in colour."""
    image = opened.image
    grey = channels == 1 or (channels == 0 and image.mode == "L")
    if ratio > 1 or grey:   # libjpeg scales and outputs the luma plane itself
        image.draft("L" if grey else "RGB",
                    (-(-image.width // ratio), -(-image.height // ratio)))
    scale = image.decoderconfig[0] if image.decoderconfig else 1
    image.decoderconfig = (scale, 0 if accurate_dct else 1)
    try:
        image.load()
    except (OSError, SyntaxError, ValueError, struct.error):
        raise ImageError(f"Invalid JPEG data or crop window, data size {len(opened.data)}"
                         ) from None
    wanted = "L" if grey else "RGB"
    pixels = np.asarray(image if image.mode == wanted else image.convert(wanted))
    if pixels.ndim == 2:
        pixels = pixels[..., None]
    return np.repeat(pixels, 3, axis=-1) if channels == 3 and pixels.shape[2] == 1 else pixels


def encode_jpeg(pixels: np.ndarray, quality: int = 95, progressive: bool = False,
                optimize_size: bool = False, chroma_downsampling: bool = True,
                density: tuple[int, int] | None = (300, 300)) -> bytes:
    """A ``[height, width, 1 or 3]`` uint8 array as JPEG bytes (baseline unless
    ``progressive``; 4:2:0 chroma unless ``chroma_downsampling`` is False; ``density`` in
    dots per inch, None for none)."""
    channels = pixels.shape[2]
    image = Image.fromarray(np.ascontiguousarray(pixels[..., 0] if channels == 1 else pixels),
                            "L" if channels == 1 else "RGB")
    out = io.BytesIO()
    options: dict[str, Any] = {"quality": int(quality), "progressive": bool(progressive),
                               "optimize": bool(optimize_size),
                               "subsampling": 2 if chroma_downsampling else 0}
    if density is not None:
        options["dpi"] = density
    image.save(out, "JPEG", **options)
    return out.getvalue()


__all__ = ["ImageError", "JPEG_SIGNATURE", "Opened", "PNG_SIGNATURE", "encode_jpeg",
           "encode_png", "jpeg_samples", "open_jpeg", "open_png", "png_samples"]

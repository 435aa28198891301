"""DecodePng, DecodeJpeg, DecodeImage, EncodePng and EncodeJpeg on CPU, over Pillow
(formats/images.py). Like TF's, DecodeImage (and DecodePng, given a JPEG) sniffs the format
from the first bytes; GIF, BMP and WebP, which zmtf does not decode, raise
UnimplementedError naming the alternative.

The codec is Pillow's; TF's conversions on top of libpng are kept here where they show in
the pixels: RGB to grey uses libpng's fixed-point weights 9797 / 19234 / 3737 (of 32768) and
truncates at 8 bits, rounds at 16; identical R, G and B stay as they are; 16 to 8 bits keeps
the high byte, 8 to 16 multiplies by 257; an added alpha is libpng's filler. A header is
checked against TF's size limits and zmtf's output limit before anything is inflated: a few
KB of zlib can claim gigapixels.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.formats.images import (JPEG_SIGNATURE, PNG_SIGNATURE, ImageError, encode_jpeg,
                                 encode_png, jpeg_samples, open_jpeg, open_png, png_samples)
from zmtf.kernels.cpu.common import check_output_size, shape_str
from zmtf.kernels.registry import register

_OTHER_FORMATS = [(b"GIF8", "GIF"), (b"BM", "BMP")]
_GREY_WEIGHTS = (9797, 19234, 3737)
_AS_STORED = {0: 1, 2: 3, 4: 2, 6: 4}   # PNG colour type -> channels (palettes: 3 or 4)


def _bytes(value: Any, node: str) -> bytes:
    data = value.item() if isinstance(value, np.ndarray) else value
    if isinstance(data, str):
        data = data.encode()
    if not isinstance(data, bytes):
        raise InvalidArgumentError(f"contents must be a scalar string (node '{node}')")
    return data


def _other_format(data: bytes) -> str | None:
    """The name of a known image format zmtf does not decode, else None."""
    for magic, name in _OTHER_FORMATS:
        if data.startswith(magic):
            return name
    return "WebP" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else None


def _header_check(node: str) -> Callable[[int, int], None]:
    """TF's limits on a header's size, then the output limit, checked before decoding."""
    def check(width: int, height: int) -> None:
        if not 0 < width < 1 << 27 or not 0 < height < 1 << 27 or width * height >= 1 << 29:
            raise ImageError(f"PNG size too large for int: {width} by {height}")   # TF's limits
        check_output_size((height, width, 4), np.uint16, node, "the decoded image")
    return check


def _to_grey(rgb: np.ndarray, depth: int) -> np.ndarray:
    r, g, b = (rgb[..., i].astype(np.int64) for i in range(3))
    weighted = _GREY_WEIGHTS[0] * r + _GREY_WEIGHTS[1] * g + _GREY_WEIGHTS[2] * b
    grey = (weighted + (16384 if depth == 16 else 0)) >> 15
    return np.where((r == g) & (r == b), r, grey).astype(np.uint16)[..., None]


def decode_png(data: bytes, channels: int, sixteen_bits: bool, node: str = "DecodePng"
               ) -> np.ndarray:
    """[height, width, channels] uint8 (uint16 with ``sixteen_bits``) pixels of a PNG."""
    opened = open_png(data, _header_check(node))
    samples, depth, has_alpha = png_samples(opened)
    colour_channels = samples.shape[2] - has_alpha
    if not channels:    # as stored: tRNS adds an alpha channel to palettes only
        channels = 3 + has_alpha if opened.color == 3 else _AS_STORED[opened.color or 0]
    want_alpha, want_grey = channels % 2 == 0, channels < 3
    colour, alpha = samples[..., :colour_channels], samples[..., colour_channels:]
    if want_grey and colour_channels == 3:
        colour = _to_grey(colour, depth)
    elif not want_grey and colour_channels == 1:
        colour = np.repeat(colour, 3, axis=-1)
    if want_alpha and not has_alpha:
        # TF asks libpng for the filler (1 << file bit depth) - 1, so a 1-, 2- or 4-bit file
        # gets alpha 1, 3 or 15 rather than opaque; kept for identical pixels
        filler = ((1 << opened.depth) - 1) & ((1 << depth) - 1)
        alpha = np.full(colour.shape[:2] + (1,), filler, np.uint16)
    out = np.concatenate([colour, alpha], axis=-1) if want_alpha else colour
    if sixteen_bits:
        return (out * np.uint16(257)).astype(np.uint16) if depth == 8 else out.astype(np.uint16)
    return (out >> 8).astype(np.uint8) if depth == 16 else out.astype(np.uint8)


def decode_jpeg(data: bytes, channels: int, ratio: int, node: str, accurate_dct: bool = False
                ) -> np.ndarray:
    """[height, width, channels] uint8 pixels of a JPEG (``channels`` 0, 1 or 3)."""
    opened = open_jpeg(data, _header_check(node))
    return jpeg_samples(opened, channels, ratio, accurate_dct)


def _decode(data: bytes, channels: int, sixteen: bool, node: str) -> np.ndarray:
    """Any PNG or JPEG, sniffed, as TF's DecodeImage (a JPEG at 16 bits is scaled by 257)."""
    if channels not in (0, 1, 3, 4):
        raise InvalidArgumentError(f"`channels` must be 0, 1, 3 or 4 but got {channels} (node "
                                   f"'{node}')")
    try:
        if data.startswith(JPEG_SIGNATURE):
            if channels == 4:
                raise InvalidArgumentError(f"channels attribute 4 is not supported for a JPEG "
                                           f"image: use 0, 1 or 3 (node '{node}')")
            pixels = decode_jpeg(data, channels, 1, node)
            return pixels.astype(np.uint16) * np.uint16(257) if sixteen else pixels
        if data and not data.startswith(PNG_SIGNATURE):
            other = _other_format(data)
            if other is not None:
                raise UnimplementedError(
                    f"this is a {other} image and zmtf decodes PNG and JPEG only: decode the "
                    f"images before feeding them (e.g. numpy.asarray(PIL.Image.open(path))) "
                    f"or convert them to PNG (node '{node}')")
            raise InvalidArgumentError(f"Unknown image file format. One of JPEG, PNG, GIF, BMP "
                                       f"required. zmtf decodes PNG and JPEG (node '{node}')")
        return decode_png(data, channels, sixteen, node)
    except ImageError as error:
        raise InvalidArgumentError(f"{error} (node '{node}')") from None


@register("DecodePng", dtypes=["string"])
def decode_png_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    sixteen = attrs["dtype"] == "uint16"
    return [_decode(_bytes(inputs[0], node), int(attrs["channels"]), sixteen, node)]


@register("DecodeJpeg", dtypes=["string"])
def decode_jpeg_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    channels, ratio = int(attrs["channels"]), int(attrs.get("ratio", 1))
    if channels not in (0, 1, 3):
        raise InvalidArgumentError(f"channels must be 0, 1, or 3 in decode_jpeg, got "
                                   f"{channels} (node '{node}')")
    if ratio not in (1, 2, 4, 8):
        raise InvalidArgumentError(f"ratio must be 1, 2, 4, or 8, got {ratio} (node '{node}')")
    data = _bytes(inputs[0], node)
    if not data.startswith(JPEG_SIGNATURE):   # TF's DecodeJpeg decodes any image it knows
        return [_decode(data, channels, False, node)]
    try:
        accurate = attrs.get("dct_method", "") == "INTEGER_ACCURATE"
        return [decode_jpeg(data, channels, ratio, node, accurate)]
    except ImageError as error:
        raise InvalidArgumentError(f"{error} (node '{node}')") from None


@register("DecodeImage", dtypes=["string"])
def decode_image_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    dtype = attrs["dtype"]
    pixels = _decode(_bytes(inputs[0], node), int(attrs["channels"]), dtype != "uint8", node)
    if dtype == "float32":   # decoded at 16 bits, so 16-bit files keep their precision
        return [(pixels / np.float32(65535)).astype(np.float32)]
    return [pixels]


def _image(image: Any, node: str, channels: tuple[int, ...]) -> np.ndarray:
    if image.ndim != 3:
        raise InvalidArgumentError(f"image must be 3-dimensional, got shape "
                                   f"{shape_str(image.shape)} (node '{node}')")
    if image.shape[2] not in channels:
        raise InvalidArgumentError(f"image must have {', '.join(map(str, channels[:-1]))}, or "
                                   f"{channels[-1]} channels, got {image.shape[2]} (node "
                                   f"'{node}')")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise InvalidArgumentError(f"image must have at least one pixel, got shape "
                                   f"{shape_str(image.shape)} (node '{node}')")
    return np.ascontiguousarray(image)


@register("EncodePng", dtypes=["uint8", "uint16"])
def encode_png_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    image = _image(inputs[0], node, (1, 2, 3, 4))
    level = attrs.get("compression", -1)
    if type(level) is not int or not -1 <= level <= 9:
        raise InvalidArgumentError(f"compression must be an int in [-1, 9], got {level!r:.40} "
                                   f"(node '{node}')")
    return [np.array(encode_png(image, level), dtype=object)]


@register("EncodeJpeg", dtypes=["uint8"])
def encode_jpeg_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    image = _image(inputs[0], node, (1, 3))
    wanted = {"": image.shape[2], "grayscale": 1, "rgb": 3}.get(attrs.get("format", ""))
    if wanted != image.shape[2]:
        raise InvalidArgumentError(f"format '{attrs.get('format')}' needs {wanted or '1 or 3'} "
                                   f"channels, the image has {image.shape[2]} (node '{node}')")
    quality = attrs.get("quality", 95)
    if type(quality) is not int or not 0 <= quality <= 100:
        raise InvalidArgumentError(f"quality must be in [0,100], got {quality!r:.40} (node "
                                   f"'{node}')")
    unit = attrs.get("density_unit", "in")
    density = (int(attrs.get("x_density", 300)), int(attrs.get("y_density", 300)))
    if unit == "cm":   # Pillow writes dots per inch
        density = (round(density[0] * 2.54), round(density[1] * 2.54))
    data = encode_jpeg(image, quality, bool(attrs.get("progressive", False)),
                       bool(attrs.get("optimize_size", False)),
                       bool(attrs.get("chroma_downsampling", True)), density)
    return [np.array(data, dtype=object)]

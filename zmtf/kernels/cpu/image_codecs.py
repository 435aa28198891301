"""DecodePng, DecodeImage and EncodePng on CPU, over png_decode.py and formats/png.py.
Like TF's, the decoders sniff the format from the first bytes; formats without a codec in
zmtf (JPEG, GIF, BMP, WebP) raise UnimplementedError naming the alternative."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.formats.png import SIGNATURE, encode_png
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.cpu.png_decode import PngError, decode_png
from zmtf.kernels.registry import register

_OTHER_FORMATS = [(b"\xff\xd8\xff", "JPEG"), (b"GIF8", "GIF"), (b"BM", "BMP")]


def _bytes(value: Any, node: str) -> bytes:
    data = value.item() if isinstance(value, np.ndarray) else value
    if isinstance(data, str):
        data = data.encode()
    if not isinstance(data, bytes):
        raise InvalidArgumentError(f"contents must be a scalar string (node '{node}')")
    return data


def _other_format(data: bytes) -> str | None:
    """The name of a known non-PNG image format the bytes start with, else None."""
    for magic, name in _OTHER_FORMATS:
        if data.startswith(magic):
            return name
    return "WebP" if data[:4] == b"RIFF" and data[8:12] == b"WEBP" else None


def _decode(data: bytes, channels: int, sixteen: bool, node: str) -> np.ndarray:
    if channels not in (0, 1, 3, 4):
        raise InvalidArgumentError(f"`channels` must be 0, 1, 3 or 4 but got {channels} (node "
                                   f"'{node}')")
    if data and not data.startswith(SIGNATURE):
        other = _other_format(data)
        if other is not None:
            raise UnimplementedError(
                f"this is a {other} image and zmtf decodes PNG only: decode the images before "
                f"feeding them (e.g. numpy.asarray(PIL.Image.open(path))) or convert them "
                f"to PNG (node '{node}')")
        raise InvalidArgumentError(f"Unknown image file format. One of JPEG, PNG, GIF, BMP "
                                   f"required. zmtf decodes PNG only (node '{node}')")
    try:
        return decode_png(data, channels, sixteen, node)
    except PngError as error:
        raise InvalidArgumentError(f"{error} (node '{node}')") from None


@register("DecodePng", dtypes=["string"])
def decode_png_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    sixteen = attrs["dtype"] == "uint16"
    return [_decode(_bytes(inputs[0], node), int(attrs["channels"]), sixteen, node)]


@register("DecodeImage", dtypes=["string"])
def decode_image_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    dtype = attrs["dtype"]
    pixels = _decode(_bytes(inputs[0], node), int(attrs["channels"]), dtype != "uint8", node)
    if dtype == "float32":   # decoded at 16 bits, so 16-bit files keep their precision
        return [(pixels / np.float32(65535)).astype(np.float32)]
    return [pixels]


@register("EncodePng", dtypes=["uint8", "uint16"])
def encode_png_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    image = inputs[0]
    node = attrs["_node_name"]
    if image.ndim != 3:
        raise InvalidArgumentError(f"image must be 3-dimensional, got shape "
                                   f"{shape_str(image.shape)} (node '{node}')")
    if image.shape[2] not in (1, 2, 3, 4):
        raise InvalidArgumentError(f"image must have 1, 2, 3, or 4 channels, got "
                                   f"{image.shape[2]} (node '{node}')")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise InvalidArgumentError(f"image must have at least one pixel, got shape "
                                   f"{shape_str(image.shape)} (node '{node}')")
    level = attrs.get("compression", -1)
    if type(level) is not int or not -1 <= level <= 9:
        raise InvalidArgumentError(f"compression must be an int in [-1, 9], got {level!r:.40} "
                                   f"(node '{node}')")
    data = encode_png(np.ascontiguousarray(image), level)
    return [np.array(data, dtype=object)]

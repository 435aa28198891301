"""Image file codecs on tf.string tensors: decode_png / encode_png (a pure-Python codec, 8 or
16 bits, grey / grey+alpha / RGB / RGBA, palettes, interlacing) and decode_image (PNG; the
format is sniffed from the bytes). JPEG, GIF and BMP need codecs zmtf does not have:
decode_jpeg / encode_jpeg raise UnimplementedError when built, and decode_image (or
decode_png) given such bytes raises it when run, naming the alternatives.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.errors import UnimplementedError
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops import math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.image_functions import convert_image_dtype
from zmtf.ops.text_ops import substr
from zmtf.framework.tensor_shape import TensorShape

STRING_INPUT_OPS.update({"DecodePng", "DecodeImage"})
not_differentiable("DecodePng", "DecodeImage", "EncodePng")

_NO_CODEC = ("zmtf has no {what} codec: decode the images before feeding them (for example "
             "with PIL, numpy.asarray(PIL.Image.open(path))), or store them as PNG and use "
             "tf.image.decode_png")


def _contents(contents: Any, what: str) -> Tensor:
    tensor = convert_to_tensor(contents, dtype=dtypes.string, name="contents") \
        if not isinstance(contents, Tensor) else contents
    if tensor.dtype != dtypes.string or tensor.shape.ndims not in (None, 0):
        raise ValueError(f"{what}: contents must be a scalar tf.string, got {tensor.dtype.name} "
                         f"of shape {tensor.shape}")
    return tensor


def _channels(channels: Any, allowed: tuple[int, ...], what: str) -> int:
    value = 0 if channels is None else int(channels)
    if value not in allowed:
        raise ValueError(f"{what}: channels must be one of {allowed}, got {value}")
    return value


@op_def("DecodePng")
def _decode_png_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    channels = attrs["channels"] or None
    return [(dtypes.as_dtype(attrs["dtype"]), TensorShape([None, None, channels]))]


@op_def("DecodeImage")
def _decode_image_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    shape = TensorShape(None) if attrs["expand_animations"] else \
        TensorShape([None, None, attrs["channels"] or None])
    return [(dtypes.as_dtype(attrs["dtype"]), shape)]


@op_def("EncodePng")
def _encode_png_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    image = inputs[0]
    if image.dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"Value passed to parameter 'image' has DataType {image.dtype.name} not "
                        f"in list of allowed values: uint8, uint16")
    if image.shape.ndims not in (None, 3):
        raise ValueError(f"Shape must be rank 3 but is rank {image.shape.ndims} for 'EncodePng' "
                         f"(image {image.name} of shape {image.shape})")
    return [(dtypes.string, TensorShape([]))]


def decode_png(contents: Any, channels: int = 0, dtype: Any = dtypes.uint8,
               name: str | None = None) -> Tensor:
    """The [height, width, channels] pixels of a PNG (``channels`` 0: as stored, or 1, 3, 4),
    uint8 or uint16."""
    out_dtype = dtypes.as_dtype(dtype)
    if out_dtype not in (dtypes.uint8, dtypes.uint16):
        raise TypeError(f"decode_png: dtype must be uint8 or uint16, got {out_dtype.name}")
    attrs = {"channels": _channels(channels, (0, 1, 3, 4), "decode_png"),
             "dtype": out_dtype.name}
    return apply_op("DecodePng", [_contents(contents, "decode_png")], attrs,
                    name=name or "DecodePng").outputs[0]


def encode_png(image: Any, compression: int = -1, name: str | None = None) -> Tensor:
    """PNG bytes (a scalar tf.string) of a [height, width, 1-4] uint8 or uint16 image;
    ``compression`` is zlib's level, -1 its default."""
    if not -1 <= int(compression) <= 9:
        raise ValueError(f"encode_png: compression must be in [-1, 9], got {compression}")
    image_t = convert_to_tensor(image, name="image")
    return apply_op("EncodePng", [image_t], {"compression": int(compression)},
                    name=name or "EncodePng").outputs[0]


def decode_image(contents: Any, channels: Any = None, dtype: Any = dtypes.uint8,
                 name: str | None = None, expand_animations: bool = True) -> Tensor:
    """Decode an image whose format is sniffed from its bytes (PNG in zmtf), as uint8,
    uint16 or float32 in [0, 1] (other dtypes through convert_image_dtype)."""
    target = dtypes.as_dtype(dtype)
    with get_default_graph().name_scope(name or "decode_image"):
        op_dtype = target if target in (dtypes.uint8, dtypes.uint16, dtypes.float32) \
            else dtypes.uint16
        attrs = {"channels": _channels(channels, (0, 1, 3, 4), "decode_image"),
                 "dtype": op_dtype.name, "expand_animations": bool(expand_animations)}
        decoded = apply_op("DecodeImage", [_contents(contents, "decode_image")], attrs).outputs[0]
        return decoded if op_dtype == target else convert_image_dtype(decoded, target)


def is_jpeg(contents: Any, name: str | None = None) -> Tensor:
    """Whether the bytes start like a JPEG file (FF D8 FF)."""
    with get_default_graph().name_scope(name or "is_jpeg"):
        head = substr(_contents(contents, "is_jpeg"), 0, 3)
        return math_ops.equal(head, convert_to_tensor(b"\xff\xd8\xff", dtype=dtypes.string))


def decode_jpeg(contents: Any, channels: int = 0, ratio: int = 1, fancy_upscaling: bool = True,
                try_recover_truncated: bool = False, acceptable_fraction: float = 1,
                dct_method: str = "", name: str | None = None) -> Tensor:
    """Not built: zmtf has no JPEG decoder (raises UnimplementedError saying what to do)."""
    raise UnimplementedError(f"tf.image.decode_jpeg: {_NO_CODEC.format(what='JPEG')}")


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """Not built: zmtf has no BMP decoder (raises UnimplementedError saying what to do)."""
    raise UnimplementedError(f"tf.image.decode_bmp: {_NO_CODEC.format(what='BMP')}")


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """Not built: zmtf has no GIF decoder (raises UnimplementedError saying what to do)."""
    raise UnimplementedError(f"tf.image.decode_gif: {_NO_CODEC.format(what='GIF')}")


def encode_jpeg(image: Any, *args: Any, **kwargs: Any) -> Tensor:
    """Not built: zmtf has no JPEG encoder (raises UnimplementedError)."""
    raise UnimplementedError("tf.image.encode_jpeg: zmtf has no JPEG codec; encode images as "
                             "PNG with tf.image.encode_png")

"""Image file codecs on tf.string tensors, over Pillow: decode_png / encode_png (8 or 16
bits, grey / grey+alpha / RGB / RGBA, palettes, interlacing), decode_jpeg / encode_jpeg, and
decode_image (PNG or JPEG, sniffed from the bytes). GIF and BMP need codecs zmtf does not
have: decode_gif / decode_bmp raise UnimplementedError when built, and decode_image given
such bytes raises it when run, naming the alternatives.
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

STRING_INPUT_OPS.update({"DecodePng", "DecodeJpeg", "DecodeImage"})
not_differentiable("DecodePng", "DecodeJpeg", "DecodeImage", "EncodePng", "EncodeJpeg")

_NO_CODEC = ("zmtf has no {what} codec: decode the images before feeding them (for example "
             "with PIL, numpy.asarray(PIL.Image.open(path))), or store them as PNG or JPEG and "
             "use tf.image.decode_png / decode_jpeg")


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


@op_def("DecodeJpeg")
def _decode_jpeg_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.uint8, TensorShape([None, None, attrs["channels"] or None]))]


def _encoded_image(op: str, allowed: tuple[dtypes.DType, ...]) -> Any:
    """The shape function of an encoder: a scalar string from a rank-3 image."""
    def outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
        image = inputs[0]
        if image.dtype not in allowed:
            raise TypeError(f"Value passed to parameter 'image' has DataType {image.dtype.name} "
                            f"not in list of allowed values: "
                            f"{', '.join(d.name for d in allowed)}")
        if image.shape.ndims not in (None, 3):
            raise ValueError(f"Shape must be rank 3 but is rank {image.shape.ndims} for '{op}' "
                             f"(image {image.name} of shape {image.shape})")
        return [(dtypes.string, TensorShape([]))]
    return outputs


op_def("EncodePng")(_encoded_image("EncodePng", (dtypes.uint8, dtypes.uint16)))
op_def("EncodeJpeg")(_encoded_image("EncodeJpeg", (dtypes.uint8,)))


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
    """The [height, width, channels] uint8 pixels of a JPEG (``channels`` 0: as stored, 1 or
    3; ``ratio`` 1, 2, 4 or 8 downscales while decoding; ``dct_method`` "" or
    "INTEGER_FAST": libjpeg's fast integer DCT, TF's default, or "INTEGER_ACCURATE"). Pixels
    are TF's except for a 4:2:0 file decoded at full size with the fast DCT, whose colour
    differs by a few levels (no "fancy" chroma upsampling there: see formats/images.py).
    ``fancy_upscaling``, ``try_recover_truncated`` and ``acceptable_fraction`` are recorded on
    the node and change nothing (a truncated file is InvalidArgumentError)."""
    if dct_method not in ("", "INTEGER_FAST", "INTEGER_ACCURATE"):
        raise ValueError(f"decode_jpeg: dct_method must be '', 'INTEGER_FAST' or "
                         f"'INTEGER_ACCURATE', got {dct_method!r}")
    if int(ratio) not in (1, 2, 4, 8):
        raise ValueError(f"decode_jpeg: ratio must be 1, 2, 4 or 8, got {ratio}")
    attrs = {"channels": _channels(channels, (0, 1, 3), "decode_jpeg"), "ratio": int(ratio),
             "fancy_upscaling": bool(fancy_upscaling),
             "try_recover_truncated": bool(try_recover_truncated),
             "acceptable_fraction": float(acceptable_fraction), "dct_method": str(dct_method)}
    return apply_op("DecodeJpeg", [_contents(contents, "decode_jpeg")], attrs,
                    name=name or "DecodeJpeg").outputs[0]


def decode_bmp(contents: Any, channels: int = 0, name: str | None = None) -> Tensor:
    """Not built: zmtf has no BMP decoder (raises UnimplementedError saying what to do)."""
    raise UnimplementedError(f"tf.image.decode_bmp: {_NO_CODEC.format(what='BMP')}")


def decode_gif(contents: Any, name: str | None = None) -> Tensor:
    """Not built: zmtf has no GIF decoder (raises UnimplementedError saying what to do)."""
    raise UnimplementedError(f"tf.image.decode_gif: {_NO_CODEC.format(what='GIF')}")


def encode_jpeg(image: Any, format: str = "", quality: int = 95, progressive: bool = False,
                optimize_size: bool = False, chroma_downsampling: bool = True,
                density_unit: str = "in", x_density: int = 300, y_density: int = 300,
                xmp_metadata: str = "", name: str | None = None) -> Tensor:
    """JPEG bytes (a scalar tf.string) of a [height, width, 1 or 3] uint8 image, as TF's
    EncodeJpeg: ``format`` "" (by the channels), "grayscale" or "rgb"; ``quality`` 0-100;
    ``chroma_downsampling`` 4:2:0 (else 4:4:4); the density in the JFIF header.
    ``xmp_metadata`` is not written (Pillow's encoder has no XMP for JPEG)."""
    if format not in ("", "grayscale", "rgb"):
        raise ValueError(f"encode_jpeg: format must be '', 'grayscale' or 'rgb', got {format!r}")
    if not 0 <= int(quality) <= 100:
        raise ValueError(f"encode_jpeg: quality must be in [0, 100], got {quality}")
    if density_unit not in ("in", "cm"):
        raise ValueError(f"encode_jpeg: density_unit must be 'in' or 'cm', got {density_unit!r}")
    attrs = {"format": format, "quality": int(quality), "progressive": bool(progressive),
             "optimize_size": bool(optimize_size),
             "chroma_downsampling": bool(chroma_downsampling), "density_unit": density_unit,
             "x_density": int(x_density), "y_density": int(y_density),
             "xmp_metadata": str(xmp_metadata)}
    return apply_op("EncodeJpeg", [convert_to_tensor(image, name="image")], attrs,
                    name=name or "EncodeJpeg").outputs[0]

"""CPU kernels for tf.string tensors (object arrays of bytes); strings have no GPU kernels.

The generic array kernels (Reshape, Gather, ConcatV2, ...) are plain numpy and work on
object arrays unchanged, so they are registered again for "string" from one table here
rather than widening their dtype lists. The string ops proper follow.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu import array, selection, sequence
from zmtf.kernels.cpu.common import dtype_attr, shape_str, str_attr
from zmtf.kernels.cpu.string_hashes import fingerprint64, legacy_hash64, siphash24
from zmtf.kernels.registry import register

_GENERIC = {
    "Reshape": array.reshape, "Shape": array.shape, "Size": array.size, "Rank": array.rank,
    "Transpose": array.transpose, "ExpandDims": array.expand_dims, "Squeeze": array.squeeze,
    "ConcatV2": array.concat_v2, "Pack": array.pack, "GatherV2": selection.gather,
    "Tile": selection.tile, "Slice": selection.slice_, "GatherNd": sequence.gather_nd,
}


def _scalar(value: bytes) -> np.ndarray:
    out = np.empty((), dtype=object)
    out[()] = value
    return out


def _keeping_arrays(kernel: Any) -> Any:
    """The kernel, with an element it picks out (np.take of a 0-d index gives the bytes
    object itself) handed on as a 0-d object array, as every tensor value is an array."""
    def run(ctx: Any, inputs: list, attrs: dict) -> list:
        return [_scalar(o) if isinstance(o, bytes) else o for o in kernel(ctx, inputs, attrs)]

    run.__doc__ = kernel.__doc__
    return run


for _op_type, _kernel in _GENERIC.items():
    register(_op_type, dtypes=["string"])(_keeping_arrays(_kernel))


@register("StridedSlice", dtypes=["string"])
def strided_slice(ctx: Any, inputs: list, attrs: dict) -> list:
    """StridedSlice(x) of strings: an object array, never numpy's NUL-trimming ``S`` dtype."""
    x = inputs[0]
    try:
        out = x[selection.spec_key(attrs["spec"], inputs[1:], attrs["_node_name"])]
    except IndexError as error:
        raise InvalidArgumentError(f"slice (node '{_node(attrs)}') of shape "
                                   f"{shape_str(x.shape)}: {error}") from None
    return [_scalar(out) if isinstance(out, bytes) else np.array(out, dtype=object, copy=True)]


def _node(attrs: dict) -> str:
    return attrs.get("_node_name", "?")


@register("Equal", dtypes=["string"])
def equal(ctx: Any, inputs: list, attrs: dict) -> list:
    return [_compare(inputs, attrs, np.equal)]


@register("NotEqual", dtypes=["string"])
def not_equal(ctx: Any, inputs: list, attrs: dict) -> list:
    return [_compare(inputs, attrs, np.not_equal)]


def _compare(inputs: list, attrs: dict, ufunc: np.ufunc) -> np.ndarray:
    x, y = inputs
    try:
        shape = np.broadcast_shapes(np.shape(x), np.shape(y))
    except ValueError:
        raise InvalidArgumentError(f"Incompatible shapes: {shape_str(np.shape(x))} vs. "
                                   f"{shape_str(np.shape(y))} (node '{_node(attrs)}')") from None
    return np.asarray(ufunc(x, y), dtype=bool).reshape(shape)


# ---- numbers <-> strings ------------------------------------------------------------------
def _number_format(attrs: dict, kind: str) -> str:
    width = str(attrs["width"]) if attrs["width"] > -1 else ""
    flag = "0" if attrs["fill"] == "0" else ""
    if kind == "f":
        precision = f".{attrs['precision']}" if attrs["precision"] > -1 else ""
        letter = "e" if attrs["scientific"] else "g" if attrs["shortest"] else "f"
        return f"%{flag}{width}{precision}{letter}"
    return f"%{flag}{width}d"


@register("AsString")
def as_string(ctx: Any, inputs: list, attrs: dict) -> list:
    """AsString(x): TF's printf formats; ``fill`` other than "0" pads on the left."""
    x = np.asarray(inputs[0])
    out = np.empty(x.shape, dtype=object)
    flat_out = out.reshape(-1)
    if x.dtype == np.bool_:
        for i, v in enumerate(x.flat):
            flat_out[i] = b"true" if v else b"false"
        return [out]
    fmt = _number_format(attrs, "f" if x.dtype.kind == "f" else "d")
    fill = attrs["fill"]
    width = attrs["width"]
    for i, v in enumerate(x.flat):
        text = fmt % (float(v) if x.dtype.kind == "f" else int(v))
        if fill and fill != "0" and width > len(text):
            text = fill * (width - len(text)) + text
        flat_out[i] = text.encode()
    return [out]


_INT_TEXT = re.compile(rb"\s*[-+]?\d+\s*\Z")
_INT_LIMITS = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


@register("StringToNumber", dtypes=["string"])
def string_to_number(ctx: Any, inputs: list, attrs: dict) -> list:
    """StringToNumber(s): each string parsed; InvalidArgumentError names one that is not."""
    strings = inputs[0]
    out_type = attrs["out_type"]
    out = np.empty(np.shape(strings), dtype=out_type)
    flat = out.reshape(-1)
    for i, text in enumerate(np.asarray(strings, dtype=object).flat):
        flat[i] = _parse_number(text, out_type, attrs)
    return [out]


def _parse_number(text: bytes, out_type: str, attrs: dict) -> Any:
    fail = InvalidArgumentError(f"StringToNumberOp could not correctly convert string: "
                                f"{text[:100]!r} (node '{_node(attrs)}')")
    if out_type in _INT_LIMITS:
        if not _INT_TEXT.match(text):
            raise fail
        value = int(text)
        low, high = _INT_LIMITS[out_type]
        if not low <= value <= high:
            raise fail
        return value
    try:
        return float(text)
    except ValueError:
        raise fail from None


@register("StringLength", dtypes=["string"])
def string_length(ctx: Any, inputs: list, attrs: dict) -> list:
    strings = np.asarray(inputs[0], dtype=object)
    if attrs["unit"] == "BYTE":
        measure = len
    else:
        def measure(text: bytes) -> int:   # code points: bytes that do not continue a character
            return sum(1 for b in text if b & 0xC0 != 0x80)
    out = np.fromiter((measure(s) for s in strings.flat), dtype=np.int32, count=strings.size)
    return [out.reshape(strings.shape)]


@register("StringJoin", dtypes=["string"])
def string_join(ctx: Any, inputs: list, attrs: dict) -> list:
    arrays = [np.asarray(t, dtype=object) for t in inputs]
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) > 1:
        raise InvalidArgumentError(f"StringJoin (node '{_node(attrs)}'): inputs must be scalars "
                                   f"or have one shape, got {[shape_str(a.shape) for a in arrays]}")
    shape = shapes.pop() if shapes else ()
    separator = str_attr(attrs, "separator", attrs["_node_name"]).encode()
    columns = [np.broadcast_to(a, shape).reshape(-1) for a in arrays]
    out = np.empty(shape, dtype=object)
    flat = out.reshape(-1)
    for i in range(flat.size):
        flat[i] = separator.join(column[i] for column in columns)
    return [out]


@register("DecodeRaw", dtypes=["string"])
def decode_raw(ctx: Any, inputs: list, attrs: dict) -> list:
    """DecodeRaw(s): each string's bytes as numbers; all strings the same length."""
    strings = np.asarray(inputs[0], dtype=object)
    dtype = dtype_attr(attrs, "out_type", attrs["_node_name"]).newbyteorder("<" if attrs["little_endian"] else ">")
    lengths = {len(s) for s in strings.flat}
    if len(lengths) > 1:
        raise InvalidArgumentError(f"DecodeRaw requires input strings to all be the same size, "
                                   f"got sizes {sorted(lengths)[:8]} (node '{_node(attrs)}')")
    size = lengths.pop() if lengths else 0
    if size % dtype.itemsize:
        raise InvalidArgumentError(f"Input to DecodeRaw has length {size} that is not a multiple "
                                   f"of {dtype.itemsize}, the size of {dtype.name} "
                                   f"(node '{_node(attrs)}')")
    values = np.frombuffer(b"".join(strings.flat), dtype=dtype)
    return [values.astype(dtype.newbyteorder("="))
            .reshape(strings.shape + (size // dtype.itemsize,))]


# ---- hash buckets -------------------------------------------------------------------------
def _buckets(strings: Any, hash_fn: Any, num_buckets: int) -> np.ndarray:
    strings = np.asarray(strings, dtype=object)
    out = np.fromiter((hash_fn(s) % num_buckets for s in strings.flat), dtype=np.int64,
                      count=strings.size)
    return out.reshape(strings.shape)


@register("StringToHashBucketFast", dtypes=["string"])
def string_to_hash_bucket_fast(ctx: Any, inputs: list, attrs: dict) -> list:
    """FarmHash Fingerprint64 % num_buckets (TF's exact bucket ids)."""
    return [_buckets(inputs[0], fingerprint64, int(attrs["num_buckets"]))]


@register("StringToHashBucket", dtypes=["string"])
def string_to_hash_bucket(ctx: Any, inputs: list, attrs: dict) -> list:
    """TF's legacy Hash64 % num_buckets."""
    return [_buckets(inputs[0], legacy_hash64, int(attrs["num_buckets"]))]


@register("StringToHashBucketStrong", dtypes=["string"])
def string_to_hash_bucket_strong(ctx: Any, inputs: list, attrs: dict) -> list:
    """SipHash-2-4(key) % num_buckets."""
    key = tuple(attrs["key"])
    return [_buckets(inputs[0], lambda s: siphash24(key, s), int(attrs["num_buckets"]))]

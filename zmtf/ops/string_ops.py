"""String ops: numbers <-> strings, joining, lengths, raw bytes -> numbers.

``tf.string`` values are object arrays of bytes (see dtypes.py); these ops are the bridge
between them and numeric tensors. Their kernels are CPU only (kernels/cpu/strings.py), so
the placer keeps them, and every string tensor, off GPUs. None is differentiable, as in TF.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

STRING_INPUT_OPS.update({"StringToNumber", "StringJoin", "StringLength", "DecodeRaw",
                         "StringToHashBucketFast", "StringToHashBucket",
                         "StringToHashBucketStrong"})
_DECODE_RAW_TYPES = ("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                     "uint8", "uint16", "uint32", "uint64")


def _string_input(value: Any, op_type: str) -> Tensor:
    tensor = convert_to_tensor(value, dtype=dtypes.string) if not isinstance(value, Tensor) \
        else value
    if tensor.dtype != dtypes.string:
        raise TypeError(f"{op_type} takes a tf.string tensor, got {tensor.dtype.name} "
                        f"({tensor.name}); convert numbers with tf.as_string first")
    return tensor


@op_def("AsString")
def _as_string_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.string, inputs[0].shape)]


@op_def("StringToNumber")
def _to_number_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.as_dtype(attrs["out_type"]), inputs[0].shape)]


@op_def("StringLength")
def _length_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int32, inputs[0].shape)]


@op_def("StringJoin")
def _join_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    shapes = [t.shape for t in inputs if t.shape.ndims != 0]
    shape = shapes[0] if shapes else TensorShape([])
    for other in shapes[1:]:
        if not shape.is_compatible_with(other):
            raise ValueError(f"string_join: inputs must be scalars or have one shape, got "
                             f"{[str(t.shape) for t in inputs]}")
    return [(dtypes.string, shape)]


@op_def("DecodeRaw")
def _decode_raw_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    shape = inputs[0].shape
    dims = None if shape.ndims is None else [*shape.as_list(), None]
    return [(dtypes.as_dtype(attrs["out_type"]), TensorShape(dims))]


@op_def("StringToHashBucketFast", "StringToHashBucket", "StringToHashBucketStrong")
def _hash_bucket_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int64, inputs[0].shape)]


not_differentiable("AsString", "StringToNumber", "StringLength", "StringJoin", "DecodeRaw",
                   "StringToHashBucketFast", "StringToHashBucket", "StringToHashBucketStrong")


def as_string(input: Any, precision: int = -1, scientific: bool = False,  # noqa: A002 (TF's name)
              shortest: bool = False, width: int = -1, fill: str = "",
              name: str | None = None) -> Tensor:
    """Each number formatted as TF does: ints "%d", floats "%f" (``precision`` digits,
    ``scientific`` "%e", ``shortest`` "%g"), bools "true"/"false"."""
    x = convert_to_tensor(input)
    if x.dtype == dtypes.string:
        raise TypeError(f"as_string takes a numeric or bool tensor, got string ({x.name})")
    if scientific and shortest:
        raise ValueError("as_string: cannot select both scientific and shortest notation")
    if len(fill) > 1:
        raise ValueError(f"as_string: fill must be at most one character, got {fill!r}")
    return apply_op("AsString", [x], {"precision": int(precision), "scientific": bool(scientific),
                                      "shortest": bool(shortest), "width": int(width),
                                      "fill": fill}, name=name or "AsString").outputs[0]


def string_to_number(string_tensor: Any, out_type: Any = dtypes.float32,
                     name: str | None = None) -> Tensor:
    """Each string parsed as a number of ``out_type`` (float32, float64, int32, int64);
    InvalidArgumentError naming a string that is not one."""
    out = dtypes.as_dtype(out_type)
    if out.name not in ("float32", "float64", "int32", "int64"):
        raise TypeError(f"string_to_number: out_type must be float32, float64, int32 or int64, "
                        f"got {out.name}")
    return apply_op("StringToNumber", [_string_input(string_tensor, "StringToNumber")],
                    {"out_type": out.name}, name=name or "StringToNumber").outputs[0]


def string_join(inputs: Any, separator: str = "", name: str | None = None) -> Tensor:
    """The strings of ``inputs`` joined element by element; scalars are broadcast."""
    tensors = [_string_input(t, "StringJoin") for t in inputs]
    if not tensors:
        raise ValueError("string_join: give at least one input")
    return apply_op("StringJoin", tensors, {"separator": str(separator)},
                    name=name or "StringJoin").outputs[0]


def length(input: Any, name: str | None = None, unit: str = "BYTE") -> Tensor:  # noqa: A002
    """The length of each string in bytes, or in unicode characters with unit="UTF8_CHAR"."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"strings.length: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    return apply_op("StringLength", [_string_input(input, "StringLength")], {"unit": unit},
                    name=name or "StringLength").outputs[0]


def decode_raw(input_bytes: Any = None, out_type: Any = None, little_endian: bool = True,
               name: str | None = None, bytes: Any = None) -> Tensor:  # noqa: A002 (TF's name)
    """Each string's bytes reinterpreted as a vector of ``out_type``: shape input.shape + [n].
    All strings must have the same length, a multiple of the type's size."""
    value = input_bytes if input_bytes is not None else bytes
    if value is None or out_type is None:
        raise TypeError("decode_raw needs input_bytes and out_type")
    out = dtypes.as_dtype(out_type)
    if out.name not in _DECODE_RAW_TYPES:
        raise TypeError(f"decode_raw: out_type must be one of {', '.join(_DECODE_RAW_TYPES)}, "
                        f"got {out.name}")
    return apply_op("DecodeRaw", [_string_input(value, "DecodeRaw")],
                    {"out_type": out.name, "little_endian": bool(little_endian)},
                    name=name or "DecodeRaw").outputs[0]


def string_to_hash_bucket_fast(input: Any, num_buckets: int,  # noqa: A002 (TF's name)
                               name: str | None = None) -> Tensor:
    """Each string's FarmHash Fingerprint64 modulo ``num_buckets``, int64: the same bucket
    ids as TF (and as the OOV buckets of tf.contrib.lookup vocabulary tables)."""
    return _hash_bucket("StringToHashBucketFast", input, num_buckets, {}, name)


def string_to_hash_bucket(string_tensor: Any, num_buckets: int,
                          name: str | None = None) -> Tensor:
    """Each string's TF Hash64 (the legacy hash) modulo ``num_buckets``, int64."""
    return _hash_bucket("StringToHashBucket", string_tensor, num_buckets, {}, name)


def string_to_hash_bucket_strong(input: Any, num_buckets: int, key: Any,  # noqa: A002
                                 name: str | None = None) -> Tensor:
    """Each string's SipHash-2-4 under ``key`` (two unsigned ints) modulo ``num_buckets``:
    slower, but buckets an adversary cannot predict without the key."""
    if len(key) != 2:
        raise ValueError(f"string_to_hash_bucket_strong: key must be 2 unsigned integers, "
                         f"got {len(key)}")
    return _hash_bucket("StringToHashBucketStrong", input, num_buckets,
                        {"key": [int(k) for k in key]}, name)


def _hash_bucket(op_type: str, value: Any, num_buckets: int, attrs: dict[str, Any],
                 name: str | None) -> Tensor:
    if int(num_buckets) < 1:
        raise ValueError(f"Attr 'num_buckets' of '{op_type}' Op passed {num_buckets} less than "
                         f"minimum 1.")
    return apply_op(op_type, [_string_input(value, op_type)],
                    {"num_buckets": int(num_buckets), **attrs}, name=name or op_type).outputs[0]


__all__ = ["as_string", "decode_raw", "length", "string_join", "string_to_hash_bucket",
           "string_to_hash_bucket_fast", "string_to_hash_bucket_strong", "string_to_number"]

"""TensorFlow's GraphDef protobuf messages (graph.proto, node_def.proto, attr_value.proto,
tensor.proto, tensor_shape.proto, versions.proto), with the same field numbers and names,
so ``tf.GraphDef().ParseFromString(open("frozen.pb", "rb").read())`` reads TF's files and
TF reads the bytes zmtf writes.

``make_ndarray`` / ``make_tensor_proto`` convert TensorProto <-> numpy as TF's tensor_util
does: ``tensor_content`` holds raw little-endian bytes, the typed ``*_val`` fields hold
values, and a single value with a larger shape means "fill". The sizes are checked before
anything is allocated (a 10-byte proto must not ask for terabytes).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import DATATYPE_ENUMS, DType, as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.data_type_names import DATA_TYPE_NAMES
from zmtf.formats.proto_message import Field, Message

#: the GraphDef version of TF 2.21, whose op semantics zmtf's exported graphs follow
GRAPH_DEF_VERSION = 2474
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
#: the most bytes a Const may expand to when a single value fills its shape
MAX_FILL_BYTES = 1 << 30
MAX_RANK = 254   # TensorShape::MaxDimensions

#: TF's DataType enum (types.proto); a reference dtype is the value + 100
DATA_TYPES: dict[str, int] = DATATYPE_ENUMS


def enum_of_dtype(dtype: DType) -> int:
    """TF's DataType number of a zmtf dtype."""
    return dtype.as_datatype_enum


def dtype_of_enum(value: int, where: str) -> DType:
    """The zmtf dtype of a DataType number; InvalidArgumentError for ones zmtf lacks."""
    for name, number in DATA_TYPES.items():
        if number == value:
            try:
                return as_dtype(name)
            except TypeError:
                break
    label = DATA_TYPE_NAMES.get(value, str(value))
    raise InvalidArgumentError(f"{where}: dtype {label} is not supported by zmtf (it has float16/"
                               f"32/64, int8-64, uint8-64, bool and string)")




# ---- the messages ---------------------------------------------------------------------------
class VersionDef(Message):
    FIELDS = (Field(1, "producer", "int32"), Field(2, "min_consumer", "int32"),
              Field(3, "bad_consumers", "int32", repeated=True))


class TensorShapeProto(Message):
    class Dim(Message):
        FIELDS = (Field(1, "size", "int64"), Field(2, "name", "string"))

    FIELDS = (Field(2, "dim", "message", repeated=True, message=Dim),
              Field(3, "unknown_rank", "bool"))


class TensorProto(Message):
    FIELDS = (
        Field(1, "dtype", "enum"), Field(2, "tensor_shape", "message", message=TensorShapeProto),
        Field(3, "version_number", "int32"), Field(4, "tensor_content", "bytes"),
        Field(5, "float_val", "float", repeated=True), Field(6, "double_val", "double", repeated=True),
        Field(7, "int_val", "int32", repeated=True), Field(8, "string_val", "bytes", repeated=True),
        Field(9, "scomplex_val", "float", repeated=True),
        Field(10, "int64_val", "int64", repeated=True), Field(11, "bool_val", "bool", repeated=True),
        Field(12, "dcomplex_val", "double", repeated=True),
        Field(13, "half_val", "int32", repeated=True),
        Field(16, "uint32_val", "uint32", repeated=True),
        Field(17, "uint64_val", "uint64", repeated=True),
    )


class AttrValue(Message):
    class ListValue(Message):
        FIELDS = (
            Field(2, "s", "bytes", repeated=True), Field(3, "i", "int64", repeated=True),
            Field(4, "f", "float", repeated=True), Field(5, "b", "bool", repeated=True),
            Field(6, "type", "enum", repeated=True),
            Field(7, "shape", "message", repeated=True, message=TensorShapeProto),
            Field(8, "tensor", "message", repeated=True, message=TensorProto),
        )

    FIELDS = (
        Field(1, "list", "message", message=ListValue, oneof=True),
        Field(2, "s", "bytes", oneof=True), Field(3, "i", "int64", oneof=True),
        Field(4, "f", "float", oneof=True), Field(5, "b", "bool", oneof=True),
        Field(6, "type", "enum", oneof=True),
        Field(7, "shape", "message", message=TensorShapeProto, oneof=True),
        Field(8, "tensor", "message", message=TensorProto, oneof=True),
        Field(9, "placeholder", "string", oneof=True),
        Field(10, "func", "bytes", oneof=True),   # NameAttrList, kept as bytes: zmtf has no functions
    )


class NodeDef(Message):
    FIELDS = (
        Field(1, "name", "string"), Field(2, "op", "string"),
        Field(3, "input", "string", repeated=True), Field(4, "device", "string"),
        Field(5, "attr", "map", message=AttrValue),
    )


class GraphDef(Message):
    """TF's GraphDef: ``node`` (NodeDefs in any order), ``versions``, and ``library`` (kept as
    bytes: zmtf imports no function libraries)."""

    FIELDS = (
        Field(1, "node", "message", repeated=True, message=NodeDef),
        Field(2, "library", "bytes"),
        Field(3, "version", "int32"),
        Field(4, "versions", "message", message=VersionDef),
    )


# ---- TensorProto <-> numpy ------------------------------------------------------------------
_VAL_FIELD = {"float32": "float_val", "float64": "double_val", "int32": "int_val",
              "int16": "int_val", "int8": "int_val", "uint8": "int_val", "uint16": "int_val",
              "int64": "int64_val", "bool": "bool_val", "float16": "half_val",
              "uint32": "uint32_val", "uint64": "uint64_val", "string": "string_val"}


def shape_proto(dims: list[int | None] | None) -> TensorShapeProto:
    """A TensorShapeProto: None is unknown rank, a None dim is size -1."""
    if dims is None:
        return TensorShapeProto(unknown_rank=True)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=-1 if d is None else d) for d in dims])


def dims_of(proto: TensorShapeProto, where: str) -> list[int | None] | None:
    """The dims of a TensorShapeProto (-1 -> None); InvalidArgumentError if malformed."""
    if proto.unknown_rank:
        if proto.dim:
            raise InvalidArgumentError(f"{where}: a shape of unknown rank lists dimensions")
        return None
    if len(proto.dim) > MAX_RANK:
        raise InvalidArgumentError(f"{where}: rank {len(proto.dim)} is over {MAX_RANK}")
    dims: list[int | None] = []
    for d in proto.dim:
        if d.size < -1:
            raise InvalidArgumentError(f"{where}: dimension {d.size} is negative")
        dims.append(None if d.size == -1 else d.size)
    return dims


def make_tensor_proto(value: Any) -> TensorProto:
    """A TensorProto of a numpy value, laid out as TF writes one: a single element in its
    typed field, more in ``tensor_content`` (strings always in ``string_val``)."""
    array = np.asarray(value)
    dtype = as_dtype(array.dtype) if array.dtype != object else as_dtype("string")
    proto = TensorProto(dtype=enum_of_dtype(dtype), tensor_shape=shape_proto(list(array.shape)))
    if dtype.name == "string":
        proto.string_val.extend(v if isinstance(v, bytes) else str(v).encode()
                                for v in array.ravel())
    elif array.size == 1 and not dtype.is_complex:   # complex values go in tensor_content
        item = array.ravel()[0]
        if dtype.name == "float16":
            item = int(np.asarray(item, np.float16).view(np.uint16))
        getattr(proto, _VAL_FIELD[dtype.name]).append(item.item() if hasattr(item, "item") else item)
    elif array.size:
        proto.tensor_content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
    return proto


def make_ndarray(proto: TensorProto, where: str = "TensorProto") -> np.ndarray:
    """The numpy value of a TensorProto; InvalidArgumentError if its sizes disagree."""
    dtype = dtype_of_enum(proto.dtype, where)
    dims = dims_of(proto.tensor_shape, where)
    if dims is None or None in dims:
        raise InvalidArgumentError(f"{where}: a tensor value needs a fully defined shape, got "
                                   f"{dims}")
    count = 1
    for d in dims:
        count *= d
    if dtype.name == "string":
        return _filled(where, list(proto.string_val), dims, count, np.dtype(object), _as_object)
    np_dtype = np.dtype(dtype.np)
    if count * np_dtype.itemsize > MAX_FILL_BYTES:
        raise InvalidArgumentError(f"{where}: a {dtype.name} tensor of shape {dims} would take "
                                   f"{count * np_dtype.itemsize} bytes, over zmtf's "
                                   f"{MAX_FILL_BYTES}-byte limit for one constant")
    if proto.tensor_content:
        expected = count * np_dtype.itemsize
        if len(proto.tensor_content) != expected:
            raise InvalidArgumentError(f"{where}: tensor_content has {len(proto.tensor_content)} "
                                       f"bytes, but {dtype.name}{dims} needs {expected}")
        array = np.frombuffer(proto.tensor_content, np_dtype.newbyteorder("<"))
        return array.astype(np_dtype).reshape(dims)
    if dtype.is_complex:   # (real, imag) pairs
        pairs = proto.scomplex_val if dtype.name == "complex64" else proto.dcomplex_val
        if len(pairs) % 2:
            raise InvalidArgumentError(f"{where}: {dtype.name} values come as (real, imag) pairs, "
                                       f"got {len(pairs)} numbers")
        values = np.asarray(pairs, np_dtype.type(0).real.dtype).view(np_dtype)
        return _filled(where, values, dims, count, np_dtype, None)
    values = getattr(proto, _VAL_FIELD[dtype.name])
    if dtype.name == "float16":
        values = np.asarray([v & 0xFFFF for v in values], np.uint16).view(np.float16)
    return _filled(where, values, dims, count, np_dtype, None)


def _as_object(values: list[bytes]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = values
    return array


def _filled(where: str, values: Any, dims: list[int], count: int, np_dtype: np.dtype,
            convert: Any) -> np.ndarray:
    if len(values) not in (0, 1, count):
        raise InvalidArgumentError(f"{where}: {len(values)} values for a tensor of shape {dims} "
                                   f"({count} elements); give 1 (a fill) or {count}")
    try:
        array = convert(values) if convert else np.asarray(values).astype(np_dtype)
    except (OverflowError, ValueError) as exc:
        raise InvalidArgumentError(f"{where}: value does not fit {np_dtype}: {exc}") from None
    if len(values) == count:
        return array.reshape(dims)
    if np_dtype == object and count * 8 > MAX_FILL_BYTES:
        raise InvalidArgumentError(f"{where}: a string tensor of shape {dims} is too large")
    fill = array[0] if len(values) else (b"" if np_dtype == object else np.zeros((), np_dtype))
    out = np.empty(dims, np_dtype)
    out[...] = fill
    return out


__all__ = ["AttrValue", "DATA_TYPES", "GRAPH_DEF_VERSION", "GraphDef", "NodeDef", "TensorProto",
           "TensorShapeProto", "VersionDef", "dims_of", "dtype_of_enum", "enum_of_dtype",
           "make_ndarray", "make_tensor_proto", "shape_proto"]

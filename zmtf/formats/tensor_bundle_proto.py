"""TF's tensor_bundle.proto and tensor_slice.proto (same field numbers): the header and the
per-tensor entries of a V2 checkpoint's index, as protobuf messages (proto_message.py).
training/tensor_bundle.py converts them to and from its own checked values."""

from __future__ import annotations

from zmtf.formats.graph_def_proto import TensorShapeProto, VersionDef
from zmtf.formats.proto_message import Field, Message


class TensorSliceProto(Message):
    """One extent per dimension; an extent without ``length`` is the whole dimension."""

    class Extent(Message):
        FIELDS = (Field(1, "start", "int64"), Field(2, "length", "int64", oneof="has_length"))

    FIELDS = (Field(1, "extent", "message", repeated=True, message=Extent),)


class BundleHeaderProto(Message):
    FIELDS = (Field(1, "num_shards", "int32"),
              Field(2, "endianness", "enum", names={0: "LITTLE", 1: "BIG"}),
              Field(3, "version", "message", message=VersionDef))


class BundleEntryProto(Message):
    FIELDS = (Field(1, "dtype", "enum"), Field(2, "shape", "message", message=TensorShapeProto),
              Field(3, "shard_id", "int32"), Field(4, "offset", "int64"), Field(5, "size", "int64"),
              Field(6, "crc32c", "fixed32"),
              Field(7, "slices", "message", repeated=True, message=TensorSliceProto))


__all__ = ["BundleEntryProto", "BundleHeaderProto", "TensorSliceProto"]

"""tf.train.Example and its parts (TensorFlow's feature.proto / example.proto, same field
numbers), as real protobuf messages built from these tables by proto_message.py::

    BytesList{repeated bytes value = 1}   FloatList{repeated float value = 1 [packed]}
    Int64List{repeated int64 value = 1 [packed]}
    Feature{oneof kind {BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3}}
    Features{map<string, Feature> feature = 1}     Example{Features features = 1}

``parse_example`` is the kernels' reader: the library parses (bytes from files are untrusted:
malformed ones are an InvalidArgumentError naming the record), and the values come out as
numpy arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.proto_message import Field, Message


class BytesList(Message):
    FIELDS = (Field(1, "value", "bytes", repeated=True),)


class FloatList(Message):
    FIELDS = (Field(1, "value", "float", repeated=True),)


class Int64List(Message):
    FIELDS = (Field(1, "value", "int64", repeated=True),)


class Feature(Message):
    """``tf.train.Feature(float_list=tf.train.FloatList(value=[1.0]))``: one of the three."""

    FIELDS = (Field(1, "bytes_list", "message", message=BytesList, oneof="kind"),
              Field(2, "float_list", "message", message=FloatList, oneof="kind"),
              Field(3, "int64_list", "message", message=Int64List, oneof="kind"))


class Features(Message):
    FIELDS = (Field(1, "feature", "map", message=Feature),)


class Example(Message):
    """``tf.train.Example(features=tf.train.Features(...))``: one record of a TFRecord file."""

    FIELDS = (Field(1, "features", "message", message=Features),)


# ---- decoding for the kernels: bytes -> {name: (kind, values)} -------------------------------
def parse_example(data: bytes, where: str = "Example") -> dict[str, tuple[str, Any]]:
    """A serialized Example -> {feature name: (kind, values)}: kind "bytes_list" (list of
    bytes), "float_list" (float32 array), "int64_list" (int64 array), or "" (no kind set,
    values None). A feature that appears twice keeps its last value, as protobuf's map
    merge does."""
    try:
        example = Example.FromString(data)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(None, None, f"{where}: {exc.message}") from None
    features: dict[str, tuple[str, Any]] = {}
    for key, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")   # value[:] is a list: numpy reads it 3x faster
        if kind == "bytes_list":
            features[key] = (kind, feature.bytes_list.value[:])
        elif kind == "float_list":
            features[key] = (kind, np.array(feature.float_list.value[:], dtype=np.float32))
        elif kind == "int64_list":
            features[key] = (kind, np.array(feature.int64_list.value[:], dtype=np.int64))
        else:
            features[key] = ("", None)
    return features


__all__ = ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List",
           "parse_example"]

"""tf.train.Example and its parts, in protobuf's wire format written by hand (no protobuf
dependency), byte-compatible with TensorFlow's feature.proto / example.proto::

    BytesList{repeated bytes value = 1}   FloatList{repeated float value = 1 [packed]}
    Int64List{repeated int64 value = 1 [packed]}
    Feature{oneof kind {BytesList bytes_list = 1; FloatList float_list = 2; Int64List int64_list = 3}}
    Features{map<string, Feature> feature = 1}     Example{Features features = 1}

The classes offer the protobuf API TF1 scripts use (constructors with keywords,
``.value`` lists, ``SerializeToString``, ``FromString``/``ParseFromString``, ``WhichOneof``).
Decoding is the border for bytes from files: ``parse_example`` checks every tag, varint and
length and raises InvalidArgumentError on anything malformed; it accepts packed and unpacked
repeated numbers and skips unknown fields, as protobuf does.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.proto_wire import BYTES as _BYTES
from zmtf.formats.proto_wire import FIXED32 as _FIXED32
from zmtf.formats.proto_wire import VARINT as _VARINT
from zmtf.formats.proto_wire import fields as _fields
from zmtf.formats.proto_wire import length_delimited
from zmtf.formats.proto_wire import read_varint as _read_varint
from zmtf.formats.proto_wire import varint as _varint


# ---- writing ---------------------------------------------------------------------------------
_delimited = length_delimited


# ---- reading: proto_wire.read_varint / fields ----------------------------------------------


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >> 63 else value


# ---- the messages ----------------------------------------------------------------------------
class _ValueList:
    value: list[Any]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.value == self.value  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(value={self.value!r})"


class BytesList(_ValueList):
    """``tf.train.BytesList(value=[b"a", ...])``; str values are utf-8 encoded."""

    def __init__(self, value: Iterable[bytes | str] = ()) -> None:
        self.value = [v.encode() if isinstance(v, str) else bytes(v) for v in value]

    def SerializeToString(self) -> bytes:  # noqa: N802 (protobuf's name)
        return b"".join(_delimited(1, v) for v in self.value)


class FloatList(_ValueList):
    """``tf.train.FloatList(value=[...])``: values are kept at float32 precision."""

    def __init__(self, value: Iterable[float] = ()) -> None:
        self.value = np.asarray(list(value), dtype=np.float32).tolist()

    def SerializeToString(self) -> bytes:  # noqa: N802
        if not self.value:
            return b""
        return _delimited(1, np.asarray(self.value, dtype="<f4").tobytes())


class Int64List(_ValueList):
    """``tf.train.Int64List(value=[...])``: ints in [-2**63, 2**63)."""

    def __init__(self, value: Iterable[int] = ()) -> None:
        values = [int(v) for v in value]
        for v in values:
            if not -(1 << 63) <= v < 1 << 63:
                raise ValueError(f"Int64List: {v} is out of the int64 range")
        self.value = values

    def SerializeToString(self) -> bytes:  # noqa: N802
        if not self.value:
            return b""
        return _delimited(1, b"".join(_varint(v) for v in self.value))


_KINDS = {"bytes_list": (1, BytesList), "float_list": (2, FloatList), "int64_list": (3, Int64List)}


class Feature:
    """``tf.train.Feature(float_list=tf.train.FloatList(value=[1.0]))``: one of the three."""

    def __init__(self, bytes_list: BytesList | None = None, float_list: FloatList | None = None,
                 int64_list: Int64List | None = None) -> None:
        given = {k: v for k, v in (("bytes_list", bytes_list), ("float_list", float_list),
                                   ("int64_list", int64_list)) if v is not None}
        if len(given) > 1:
            raise ValueError(f"a Feature holds one kind of list, got {sorted(given)}")
        self._kind = next(iter(given), None)
        self._list = given.get(self._kind) if self._kind else None

    def WhichOneof(self, name: str) -> str | None:  # noqa: N802
        return self._kind

    def HasField(self, name: str) -> bool:  # noqa: N802
        return self._kind == name

    def __getattr__(self, name: str) -> Any:
        if name in _KINDS:   # an unset kind reads as an empty list, as in protobuf
            return self._list if self._kind == name else _KINDS[name][1]()
        raise AttributeError(name)

    def SerializeToString(self) -> bytes:  # noqa: N802
        if self._kind is None:
            return b""
        return _delimited(_KINDS[self._kind][0], self._list.SerializeToString())

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Feature) and other._kind == self._kind
                and other._list == self._list)

    def __repr__(self) -> str:
        return f"Feature({self._kind}={self._list!r})" if self._kind else "Feature()"


class Features:
    """``tf.train.Features(feature={"name": Feature, ...})``."""

    def __init__(self, feature: dict[str, Feature] | None = None) -> None:
        self.feature = dict(feature or {})

    def SerializeToString(self) -> bytes:  # noqa: N802
        return b"".join(
            _delimited(1, _delimited(1, key.encode()) + _delimited(2, value.SerializeToString()))
            for key, value in self.feature.items())

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Features) and other.feature == self.feature

    def __repr__(self) -> str:
        return f"Features(feature={self.feature!r})"


class Example:
    """``tf.train.Example(features=tf.train.Features(...))``: one record of a TFRecord file."""

    def __init__(self, features: Features | None = None) -> None:
        self.features = features if features is not None else Features()

    def SerializeToString(self) -> bytes:  # noqa: N802
        return _delimited(1, self.features.SerializeToString())

    @classmethod
    def FromString(cls, data: bytes) -> Example:  # noqa: N802
        example = cls()
        example.ParseFromString(data)
        return example

    def ParseFromString(self, data: bytes) -> int:  # noqa: N802
        parsed = parse_example(bytes(data))
        self.features = Features({key: Feature(**{kind: _KINDS[kind][1](values)} if kind else {})
                                  for key, (kind, values) in parsed.items()})
        return len(data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Example) and other.features == self.features

    def __repr__(self) -> str:
        return f"Example(features={self.features!r})"


# ---- decoding for the kernels: bytes -> {name: (kind, values)} -------------------------------
def parse_example(data: bytes, where: str = "Example") -> dict[str, tuple[str, Any]]:
    """A serialized Example -> {feature name: (kind, values)}: kind "bytes_list" (list of
    bytes), "float_list" (float32 array) or "int64_list" (int64 array). A feature that
    appears twice keeps its last value, as protobuf's map merge does."""
    features: dict[str, tuple[str, Any]] = {}
    for number, wire_type, value in _fields(data, where):
        if number == 1 and wire_type == _BYTES:
            for n, w, entry in _fields(value, where):
                if n == 1 and w == _BYTES:
                    key, feature = _map_entry(entry, where)
                    features[key] = feature
    return features


def _map_entry(data: bytes, where: str) -> tuple[str, tuple[str, Any]]:
    key, feature = b"", ("", None)
    for number, wire_type, value in _fields(data, where):
        if number == 1 and wire_type == _BYTES:
            key = value
        elif number == 2 and wire_type == _BYTES:
            feature = _feature(value, where)
    try:
        name = key.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidArgumentError(f"{where}: a feature name is not valid utf-8") from None
    return name, feature


def _feature(data: bytes, where: str) -> tuple[str, Any]:
    kind, values = "", None   # a Feature with no kind set
    for number, wire_type, value in _fields(data, where):
        if wire_type != _BYTES or number not in (1, 2, 3):
            continue
        kind = ("bytes_list", "float_list", "int64_list")[number - 1]
        values = _LIST_READERS[kind](value, f"{where}, {kind}")
    return kind, values


def _bytes_values(data: bytes, where: str) -> list[bytes]:
    return [bytes(v) for n, w, v in _fields(data, where) if n == 1 and w == _BYTES]


def _float_values(data: bytes, where: str) -> np.ndarray:
    chunks = []
    for number, wire_type, value in _fields(data, where):
        if number != 1:
            continue
        if wire_type == _BYTES:
            if len(value) % 4:
                raise InvalidArgumentError(f"{where}: packed floats of {len(value)} bytes, not "
                                           f"a multiple of 4")
            chunks.append(value)
        elif wire_type == _FIXED32:
            chunks.append(value)
        else:
            raise InvalidArgumentError(f"{where}: float value with wire type {wire_type}")
    return np.frombuffer(b"".join(chunks), dtype="<f4").astype(np.float32)


def _int64_values(data: bytes, where: str) -> np.ndarray:
    values: list[int] = []
    for number, wire_type, value in _fields(data, where):
        if number != 1:
            continue
        if wire_type == _BYTES:
            pos = 0
            while pos < len(value):
                item, pos = _read_varint(value, pos, where)
                values.append(_signed64(item))
        elif wire_type == _VARINT:
            values.append(_signed64(value))
        else:
            raise InvalidArgumentError(f"{where}: int64 value with wire type {wire_type}")
    return np.array(values, dtype=np.int64)


_LIST_READERS = {"bytes_list": _bytes_values, "float_list": _float_values,
                 "int64_list": _int64_values}

__all__ = ["BytesList", "Example", "Feature", "Features", "FloatList", "Int64List",
           "parse_example"]

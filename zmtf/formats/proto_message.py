"""A small protobuf message base: fields declared as a table, binary encode/decode over
proto_wire, so the GraphDef messages (graph_def_proto.py) are data, not code.

Only what GraphDef and ClusterDef need: scalars, strings/bytes, enums, nested messages,
repeated fields (packed or not, both read), maps (``map<string, Message>``,
``map<int32, string>``), and one oneof per message. Decoding
treats the bytes as untrusted: wire types are checked against the table, nesting and sizes
are bounded, and anything malformed is an InvalidArgumentError naming the message and field.
Unknown fields are skipped, as protobuf does, so files from newer TF versions still load.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Callable, ClassVar

from zmtf.formats import proto_wire as pw
from zmtf.framework.errors import InvalidArgumentError

#: protobuf's own limit on one serialized message
MAX_MESSAGE_BYTES = 2**31 - 1
MAX_DEPTH = 64

_SCALAR_WIRE = {"int32": pw.VARINT, "int64": pw.VARINT, "uint32": pw.VARINT, "uint64": pw.VARINT,
                "bool": pw.VARINT, "enum": pw.VARINT, "float": pw.FIXED32, "double": pw.FIXED64}


@dataclass(frozen=True)
class Field:
    """One field of a message: its number, Python name, kind and cardinality."""

    number: int
    name: str
    kind: str                       # a key of _SCALAR_WIRE, "string", "bytes", "message", "map"
    repeated: bool = False
    message: Any = None             # the Message class of a "message" field or a map's values
    oneof: bool = False             # member of the message's single oneof: written even if zero
    names: Any = None               # an "enum" field's {number: name}; None means DataType
    key: str = "string"             # a map's key kind
    value: str = "message"          # a map's value kind ("message" takes ``message``)

    def default(self) -> Any:
        if self.kind == "map":
            if self.value == "message":
                return MessageMap(self.message)
            return ScalarMap(self.name, self.key, self.value)
        if self.repeated:
            return RepeatedMessages(self.message) if self.kind == "message" else []
        if self.kind == "message":
            return self.message()
        return {"string": "", "bytes": b"", "bool": False, "float": 0.0, "double": 0.0}.get(
            self.kind, 0)


class RepeatedMessages(list):
    """A repeated message field: a list with protobuf's ``add(**fields)``."""

    def __init__(self, message: type, items: Any = ()) -> None:
        super().__init__(items)
        self._message = message

    def add(self, **fields: Any) -> Any:
        item = self._message(**fields)
        self.append(item)
        return item


#: TF's text format, for ``str(message)``. proto_text.py imports this module, so it registers
#: ``to_text`` here when imported; zmtf/formats/__init__.py imports it before any message exists.
_TEXT_FORMAT: dict[str, Callable[[Any], str]] = {}


def register_text_format(to_text: Callable[[Any], str]) -> None:
    _TEXT_FORMAT["to_text"] = to_text


class MessageMap(dict):
    """``map<string, Message>``: reading a missing key creates it, as in protobuf."""

    def __init__(self, message: type, items: Any = ()) -> None:
        super().__init__(items)
        self._message = message

    def __missing__(self, key: str) -> Any:
        value = self[key] = self._message()
        return value


class ScalarMap(dict):
    """``map<int32, string>`` and the like: keys and values type-checked, as protobuf does;
    reading a missing key inserts the value's default."""

    _PYTHON_TYPES = {"string": str, "bytes": bytes, "int32": int, "int64": int, "uint32": int,
                     "uint64": int, "bool": bool}

    def __init__(self, name: str, key: str, value: str, items: Any = ()) -> None:
        super().__init__()
        self._name, self._key, self._value = name, key, value
        self.update(items)

    def __setitem__(self, key: Any, value: Any) -> None:
        for what, kind, item in (("key", self._key, key), ("value", self._value, value)):
            wanted = self._PYTHON_TYPES[kind]
            if not isinstance(item, wanted) or (wanted is int and isinstance(item, bool)):
                raise TypeError(f"map field {self._name}: {what} {item!r} has type "
                                f"{type(item).__name__}, but expected one of: {wanted.__name__}")
        super().__setitem__(key, value)

    def update(self, items: Any = (), **more: Any) -> None:  # type: ignore[override]
        for key, value in dict(items, **more).items():
            self[key] = value

    def __missing__(self, key: Any) -> Any:
        value = self[key] = Field(2, "value", self._value).default()
        return value


class Message:
    """Base of the hand-written messages; subclasses set ``FIELDS``."""

    FIELDS: ClassVar[tuple[Field, ...]] = ()
    _BY_NAME: ClassVar[dict[str, Field]]
    _BY_NUMBER: ClassVar[dict[int, Field]]

    def __init_subclass__(cls) -> None:
        cls._BY_NAME = {}
        cls._BY_NUMBER = {}

    @classmethod
    def _index(cls) -> None:
        if not cls._BY_NAME:
            cls._BY_NAME.update({f.name: f for f in cls.FIELDS})
            cls._BY_NUMBER.update({f.number: f for f in cls.FIELDS})

    def __init__(self, **fields: Any) -> None:
        type(self)._index()
        object.__setattr__(self, "_which", None)
        object.__setattr__(self, "_present", set())  # message fields set, even if empty
        for f in self.FIELDS:
            object.__setattr__(self, f.name, f.default())
        for name, value in fields.items():
            field_ = self._BY_NAME.get(name)
            if field_ is None:
                raise ValueError(f'Protocol message {type(self).__name__} has no "{name}" field.')
            if field_.kind == "map":
                getattr(self, name).update(value)
            elif field_.repeated:
                getattr(self, name).extend(value)
            else:
                setattr(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        field_ = type(self)._BY_NAME.get(name) if type(self)._BY_NAME else None
        if field_ is None:
            type(self)._index()
            field_ = type(self)._BY_NAME.get(name)
        if field_ is None:
            raise AttributeError(f'Assignment not allowed (no field "{name}" in protocol message '
                                 f'{type(self).__name__}).')
        if field_.repeated or field_.kind == "map":
            raise AttributeError(f"Assignment not allowed to repeated field \"{name}\" in protocol "
                                 f"message object; use extend/append/add.")
        if field_.oneof:
            object.__setattr__(self, "_which", name)
        if field_.kind == "message":
            if not isinstance(value, field_.message):
                raise TypeError(f"field {name} of {type(self).__name__} takes a "
                                f"{field_.message.__name__}, not a {type(value).__name__}")
            self._present.add(name)
        object.__setattr__(self, name, value)

    # ---- protobuf's Python API ---------------------------------------------------------------
    def WhichOneof(self, _group: str) -> str | None:  # noqa: N802 (protobuf's name)
        """The set member of the oneof: the one assigned, else the one that is not default."""
        if self._which is not None:
            return self._which
        for f in self.FIELDS:
            if f.oneof and _is_set(f, getattr(self, f.name)):
                return f.name
        return None

    def HasField(self, name: str) -> bool:  # noqa: N802
        field_ = self._BY_NAME.get(name)
        if field_ is None or field_.repeated:
            raise ValueError(f'Protocol message {type(self).__name__} has no singular "{name}" '
                             f'field.')
        if field_.oneof:
            return self.WhichOneof("value") == name
        return name in self._present or _is_set(field_, getattr(self, name))

    def ClearField(self, name: str) -> None:  # noqa: N802
        field_ = self._BY_NAME[name]
        object.__setattr__(self, name, field_.default())
        self._present.discard(name)
        if self._which == name:
            object.__setattr__(self, "_which", None)

    def CopyFrom(self, other: Message) -> None:  # noqa: N802
        if type(other) is not type(self):
            raise TypeError(f"Parameter to CopyFrom() must be instance of same class: expected "
                            f"{type(self).__name__} got {type(other).__name__}.")
        self.ParseFromString(other.SerializeToString())

    def MergeFrom(self, other: Message) -> None:  # noqa: N802
        self.MergeFromString(other.SerializeToString())

    def SerializeToString(self, deterministic: bool = True) -> bytes:  # noqa: N802
        data = encode(self)
        if len(data) > MAX_MESSAGE_BYTES:
            raise ValueError(f"{type(self).__name__} is {len(data)} bytes; protobuf messages are "
                             f"limited to 2GB")
        return data

    def ParseFromString(self, data: bytes) -> int:  # noqa: N802
        fresh = type(self)()
        for name, value in vars(fresh).items():
            object.__setattr__(self, name, value)
        return self.MergeFromString(data)

    def MergeFromString(self, data: bytes) -> int:  # noqa: N802
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"ParseFromString takes bytes, not {type(data).__name__}")
        data = bytes(data)
        if len(data) > MAX_MESSAGE_BYTES:
            raise InvalidArgumentError(f"{type(self).__name__}: {len(data)} bytes is over "
                                       f"protobuf's 2GB limit")
        _decode_into(self, data, 0)
        return len(data)

    @classmethod
    def FromString(cls, data: bytes) -> Any:  # noqa: N802
        message = cls()
        message.ParseFromString(data)
        return message

    def ByteSize(self) -> int:  # noqa: N802
        return len(encode(self))

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return encode(self) == encode(other)   # type: ignore[arg-type]

    __hash__ = None  # type: ignore[assignment]  (mutable, as protobuf messages)

    def __str__(self) -> str:
        return _TEXT_FORMAT["to_text"](self)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {len(encode(self))} bytes>"


def _is_set(field_: Field, value: Any) -> bool:
    if field_.kind == "message":
        return bool(encode(value)) or value._which is not None
    return value != field_.default()


# ---- encoding -----------------------------------------------------------------------------
def encode(message: Message) -> bytes:
    """The message's wire bytes: fields in number order, map entries sorted by key."""
    out = bytearray()
    which = message.WhichOneof("value") if any(f.oneof for f in message.FIELDS) else None
    for f in sorted(message.FIELDS, key=lambda f: f.number):
        value = getattr(message, f.name)
        if f.kind == "map":
            for key in _map_order(f, value):
                entry = _single(Field(1, "key", f.key), key) + _single(
                    Field(2, "value", f.value, message=f.message), value[key])
                out += pw.length_delimited(f.number, entry)
        elif f.repeated:
            if f.kind in _SCALAR_WIRE:
                if value:
                    out += pw.length_delimited(f.number, b"".join(_scalar(f, v) for v in value))
            else:
                for item in value:
                    out += _single(f, item)
        elif f.oneof and which == f.name:
            out += _single(f, value)
        elif not f.oneof and (f.name in message._present or _is_set(f, value)):
            out += _single(f, value)
    return bytes(out)


def _map_order(f: Field, value: dict) -> list:
    """Map keys in the order TF's Python protobuf (upb) writes them: strings ascending,
    integers descending."""
    # NOTE: upb's deterministic sort puts int keys high to low; C++ protobuf would write
    # them low to high. Either order parses to the same map; this one matches TF's bytes.
    return sorted(value, reverse=f.key != "string")


def _single(f: Field, value: Any) -> bytes:
    if f.kind == "message":
        return pw.length_delimited(f.number, encode(value))
    if f.kind == "string":
        return pw.length_delimited(f.number, value.encode("utf-8"))
    if f.kind == "bytes":
        return pw.length_delimited(f.number, bytes(value))
    return pw.field(f.number, _SCALAR_WIRE[f.kind], _scalar(f, value))


def _scalar(f: Field, value: Any) -> bytes:
    if f.kind == "float":
        return struct.pack("<f", value)
    if f.kind == "double":
        return struct.pack("<d", value)
    if f.kind in ("uint32", "uint64") and value < 0:
        raise ValueError(f"field {f.name}: {value} is negative, but the field is unsigned")
    return pw.varint(int(value))


# ---- decoding -----------------------------------------------------------------------------
def _decode_into(message: Message, data: bytes, depth: int) -> None:
    name = type(message).__name__
    if depth > MAX_DEPTH:
        raise InvalidArgumentError(f"{name}: messages nested more than {MAX_DEPTH} deep")
    type(message)._index()
    for number, wire_type, value in pw.fields(data, name):
        f = message._BY_NUMBER.get(number)
        if f is None:
            continue  # unknown field: skipped, as protobuf does
        where = f"{name}.{f.name}"
        if f.kind in _SCALAR_WIRE and f.repeated and wire_type == pw.BYTES:
            getattr(message, f.name).extend(_unpack(f, value, where))
            continue
        expected = _SCALAR_WIRE.get(f.kind, pw.BYTES)
        if wire_type != expected:
            raise InvalidArgumentError(f"{where}: wire type {wire_type}, expected {expected}")
        if f.kind == "map":
            key, item = _map_entry(f, value, where, depth)
            getattr(message, f.name)[key] = item
            continue
        decoded = _decode_value(f, value, where, depth)
        if f.repeated:
            getattr(message, f.name).append(decoded)
        elif f.kind == "message":
            existing = getattr(message, f.name)
            _decode_into(existing, value, depth + 1)  # protobuf merges repeated submessages
            message._present.add(f.name)
            if f.oneof:
                object.__setattr__(message, "_which", f.name)
        else:
            setattr(message, f.name, decoded)


def _decode_value(f: Field, value: Any, where: str, depth: int) -> Any:
    if f.kind == "message":
        item = f.message()
        _decode_into(item, value, depth + 1)
        return item
    if f.kind == "string":
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidArgumentError(f"{where}: string field is not valid UTF-8") from None
    if f.kind == "bytes":
        return value
    if f.kind == "float":
        return struct.unpack("<f", value)[0]
    if f.kind == "double":
        return struct.unpack("<d", value)[0]
    return _varint_value(f, value)


def _varint_value(f: Field, value: int) -> Any:
    if f.kind == "bool":
        return value != 0
    if f.kind in ("int32", "int64", "enum"):
        value = value - (1 << 64) if value >> 63 else value
        if f.kind != "int64":
            value = (value + 2**31) % 2**32 - 2**31   # int32 truncates, as protobuf
        return value
    if f.kind == "uint32":
        return value & 0xFFFFFFFF
    return value


def _unpack(f: Field, data: bytes, where: str) -> list[Any]:
    if f.kind in ("float", "double"):
        size, fmt = (4, "f") if f.kind == "float" else (8, "d")
        if len(data) % size:
            raise InvalidArgumentError(f"{where}: packed {f.kind}s of {len(data)} bytes")
        return list(struct.unpack(f"<{len(data) // size}{fmt}", data))
    values, pos = [], 0
    while pos < len(data):
        value, pos = pw.read_varint(data, pos, where)
        values.append(_varint_value(f, value))
    return values


def _map_entry(f: Field, data: bytes, where: str, depth: int) -> tuple[Any, Any]:
    entry = (Field(1, "key", f.key), Field(2, "value", f.value, message=f.message))
    key, item = entry[0].default(), entry[1].default()
    for number, wire_type, value in pw.fields(data, where):
        if number not in (1, 2):
            continue
        part = entry[number - 1]
        if wire_type != _SCALAR_WIRE.get(part.kind, pw.BYTES):
            raise InvalidArgumentError(f"{where}: map entry field {number} has wire type "
                                       f"{wire_type}")
        if number == 1:
            key = _decode_value(part, value, where, depth)
        elif part.kind == "message":
            _decode_into(item, value, depth + 1)
        else:
            item = _decode_value(part, value, where, depth)
    return key, item


__all__ = ["Field", "MAX_MESSAGE_BYTES", "Message", "MessageMap", "RepeatedMessages", "ScalarMap",
           "encode"]

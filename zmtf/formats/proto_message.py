"""zmtf's protobuf messages are real ``protobuf`` messages, built from zmtf's own schema tables.

A schema module declares a message as a table of fields with TensorFlow's numbers::

    class NodeDef(Message):
        FIELDS = (Field(1, "name", "string"), Field(5, "attr", "map", message=AttrValue))

and the class statement gives back the ``protobuf`` library's class for it: this module turns
the table into a ``DescriptorProto`` (package ``tensorflow``, proto3, as TF's .proto files),
adds it to zmtf's own descriptor pool (never the default one, which TensorFlow itself may
fill in the same process) and returns ``message_factory.GetMessageClass``'s class. Binary and
text format, ``HasField``, ``CopyFrom``, ``MergeFrom``, unknown fields and attribute typos are
then the library's. The tables stay the one place a field is named, so adding a field is one
line; no generated code is checked in, and no protoc runs at build time.

What zmtf adds to each class: parsing (``ParseFromString``, ``MergeFromString``,
``FromString``) refuses over-2GB input and raises ``ProtoDecodeError`` -- both the library's
``DecodeError`` and zmtf's InvalidArgumentError, naming the message -- so bytes from files and
the network fail as a typed TF error; ``SerializeToString`` is deterministic by default
(map entries sorted), so the same message always gives the same bytes (TF's golden files).
``str()`` stays the library's, so it prints exactly what TF's (upb) messages print.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, text_format
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtobufMessage

from zmtf.formats.data_type_names import DATA_TYPE_NAMES
from zmtf.framework.errors import InvalidArgumentError

#: protobuf's own limit on one serialized message
MAX_MESSAGE_BYTES = 2**31 - 1

_FDP = descriptor_pb2.FieldDescriptorProto
_TYPES = {"double": _FDP.TYPE_DOUBLE, "float": _FDP.TYPE_FLOAT, "int64": _FDP.TYPE_INT64,
          "uint64": _FDP.TYPE_UINT64, "int32": _FDP.TYPE_INT32, "bool": _FDP.TYPE_BOOL,
          "string": _FDP.TYPE_STRING, "bytes": _FDP.TYPE_BYTES, "message": _FDP.TYPE_MESSAGE,
          "uint32": _FDP.TYPE_UINT32, "enum": _FDP.TYPE_ENUM, "fixed32": _FDP.TYPE_FIXED32}
_PACKAGE = "tensorflow"
_POOL = descriptor_pool.DescriptorPool()
_DATA_TYPE_FILE = "zmtf/formats/types.proto"


@dataclasses.dataclass(frozen=True)
class Field:
    """One field of a message: its number, Python name, kind and cardinality."""

    number: int
    name: str
    kind: str                       # "int32" ... "double", "fixed32", "string", "bytes", "enum",
                                    # "message", "map"
    repeated: bool = False
    message: Any = None             # the Message class of a "message" field or a map's values,
                                    # or the name of a sibling nested message (protobuf scoping)
    oneof: bool | str = False       # member of a oneof: True means the oneof named "value"
    names: Any = None               # an "enum" field's {number: name}; None means DataType
    key: str = "string"             # a map's key kind
    value: str = "message"          # a map's value kind ("message" takes ``message``)
    enum: str = ""                  # the name of an "enum" field's own enum (TF's, e.g.
                                    # "TraceLevel"); "" means <FieldName>Enum. Fields naming
                                    # the same enum share it (one ``names``).


class ProtoDecodeError(InvalidArgumentError, DecodeError):
    """Bytes that are not the message they claim to be: an InvalidArgumentError to zmtf
    callers, the library's DecodeError to code written against protobuf."""

    def __init__(self, message: str) -> None:
        InvalidArgumentError.__init__(self, None, None, message)


class _Schema(type):
    """Metaclass of ``Message``: a subclass statement returns the built protobuf class."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        declared = super().__new__(mcs, name, bases, namespace)
        if not bases:
            return declared                 # Message itself
        outer = namespace["__qualname__"].rpartition(".")[0]
        if outer and not outer.endswith("<locals>"):
            return declared                 # a nested message: built with the one around it
        return _build(declared)

    def __instancecheck__(cls, instance: Any) -> bool:
        return isinstance(instance, ProtobufMessage)


class Message(metaclass=_Schema):
    """Base of zmtf's message declarations; ``class X(Message)`` gives protobuf's class.

    The methods below only describe, for type checkers, what every protobuf message has."""

    FIELDS: tuple[Field, ...] = ()
    #: the proto package of a top-level declaration (TF's profiler protos: "tensorflow.tfprof")
    PACKAGE: str = _PACKAGE

    def __init__(self, **fields: Any) -> None: ...

    def __getattr__(self, name: str) -> Any: ...

    def HasField(self, name: str) -> bool: ...  # noqa: N802 (protobuf's names)

    def WhichOneof(self, group: str) -> str | None: ...  # noqa: N802

    def ClearField(self, name: str) -> None: ...  # noqa: N802

    def CopyFrom(self, other: Any) -> None: ...  # noqa: N802

    def MergeFrom(self, other: Any) -> None: ...  # noqa: N802

    def SerializeToString(self, deterministic: bool = True) -> bytes: ...  # noqa: N802

    def ParseFromString(self, data: bytes) -> int: ...  # noqa: N802

    def MergeFromString(self, data: bytes) -> int: ...  # noqa: N802

    @classmethod
    def FromString(cls, data: bytes) -> Any: ...  # noqa: N802

    def ByteSize(self) -> int: ...  # noqa: N802


#: a repeated message field (protobuf's container: a list with ``add(**fields)``)
RepeatedMessages = Any


# ---- building ---------------------------------------------------------------------------------
def _add_data_type_file() -> None:
    """TF's DataType enum (types.proto), which every "enum" field without ``names`` is."""
    file = descriptor_pb2.FileDescriptorProto(name=_DATA_TYPE_FILE, package=_PACKAGE,
                                              syntax="proto3")
    enum = file.enum_type.add(name="DataType")
    for number, label in sorted(DATA_TYPE_NAMES.items()):
        enum.value.add(name=label, number=number)
    _POOL.Add(file)


def _build(declared: type) -> Any:
    """The protobuf class of a top-level declaration, its nested declarations included."""
    package = declared.PACKAGE
    full = f"{package}.{declared.__name__}"
    file = descriptor_pb2.FileDescriptorProto(
        name=f"{declared.__module__.replace('.', '/')}/{declared.__name__}.proto",
        package=package, syntax="proto3")
    depends: set[str] = set()
    _describe(declared, file.message_type.add(), full, depends)
    file.dependency.extend(sorted(depends - {file.name}))
    _POOL.Add(file)
    built = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(full))
    _finish(built, declared)
    return built


def _describe(declared: Any, proto: Any, full: str, depends: set[str]) -> None:
    proto.name = declared.__name__
    declared._full_name = full
    for name, value in vars(declared).items():
        if isinstance(value, _Schema):   # a nested declaration
            _describe(value, proto.nested_type.add(), f"{full}.{name}", depends)
    oneofs: list[str] = []
    for f in declared.FIELDS:
        field = proto.field.add(name=f.name, number=f.number,
                                label=_FDP.LABEL_REPEATED if f.repeated else _FDP.LABEL_OPTIONAL)
        if f.kind == "map":
            entry = proto.nested_type.add(name=_camel(f.name) + "Entry")   # protoc's name
            entry.options.map_entry = True
            _set_type(entry.field.add(name="key", number=1, label=_FDP.LABEL_OPTIONAL),
                      f.key, None, None, full, depends)
            _set_type(entry.field.add(name="value", number=2, label=_FDP.LABEL_OPTIONAL),
                      f.value, f.message, None, full, depends)
            field.label = _FDP.LABEL_REPEATED
            field.type = _FDP.TYPE_MESSAGE
            field.type_name = f".{full}.{entry.name}"
            continue
        if f.kind == "enum" and f.names is not None:
            _add_enum(proto, f)
        _set_type(field, f.kind, f.message, f, full, depends)
        if f.oneof:
            group = "value" if f.oneof is True else f.oneof
            if group not in oneofs:
                oneofs.append(group)
                proto.oneof_decl.add(name=group)
            field.oneof_index = oneofs.index(group)


def _add_enum(proto: Any, f: Field) -> None:
    """A field's own enum (``names``), nested in its message, named after the field."""
    if not f.names or _enum_name(f) in [e.name for e in proto.enum_type]:
        return   # an enum zmtf does not interpret (read and written as its number), or shared
    enum = proto.enum_type.add(name=_enum_name(f))
    names = dict(f.names)
    names.setdefault(0, f"{f.name.upper()}_UNSPECIFIED")   # proto3 enums start at zero (first)
    for number, label in sorted(names.items(), key=lambda item: (item[0] != 0, item[0])):
        enum.value.add(name=label, number=number)


def _enum_name(f: Field) -> str:
    return f.enum or _camel(f.name) + "Enum"


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


def _set_type(field: Any, kind: str, message: Any, f: Field | None, full: str,
              depends: set[str]) -> None:
    if kind == "enum" and f is not None and f.names is not None:
        if not f.names:
            field.type = _FDP.TYPE_INT32
            return
        field.type = _FDP.TYPE_ENUM
        field.type_name = f".{full}.{_enum_name(f)}"
        return
    field.type = _TYPES[kind]
    if kind == "enum":
        field.type_name = f".{_PACKAGE}.DataType"
        depends.add(_DATA_TYPE_FILE)
    elif kind == "message":
        descriptor = getattr(message, "DESCRIPTOR", None)
        if isinstance(message, str):        # resolved by the pool, from this message outwards
            field.type_name = message
        elif descriptor is not None:          # an already built message
            field.type_name = f".{descriptor.full_name}"
            depends.add(descriptor.file.name)
        else:                               # a nested declaration, built with this file
            field.type_name = f".{message._full_name}"


def _finish(built: Any, declared: Any) -> None:
    """Carry the declaration's constants and docstring over, and add zmtf's parsing and
    serializing to the class and its nested classes."""
    built.__module__ = declared.__module__
    built.__qualname__ = declared.__qualname__   # pickle finds nested classes by it
    if declared.__doc__:
        built.__doc__ = declared.__doc__
    for name, value in vars(declared).items():
        if name.startswith("_") or name in ("FIELDS", "PACKAGE") or callable(value):
            if isinstance(value, _Schema) and hasattr(built, name):
                _finish(getattr(built, name), value)
            continue
        if not hasattr(built, name):
            setattr(built, name, value)
    _add_methods(built)


def _add_methods(cls: Any) -> None:
    library_merge = cls.MergeFromString
    library_serialize = cls.SerializeToString
    message_name = cls.DESCRIPTOR.name

    def MergeFromString(self: Any, data: Any) -> int:  # noqa: N802
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{message_name}.ParseFromString takes bytes, not "
                            f"{type(data).__name__}")
        if len(data) > MAX_MESSAGE_BYTES:
            raise ProtoDecodeError(f"{message_name}: {len(data)} bytes is over protobuf's 2GB "
                                   f"limit")
        try:
            return int(library_merge(self, data))
        except DecodeError as exc:
            raise ProtoDecodeError(f"{message_name}: the bytes are not a valid {message_name} "
                                   f"({exc})") from None

    def ParseFromString(self: Any, data: Any) -> int:  # noqa: N802
        self.Clear()
        return MergeFromString(self, data)

    def FromString(cls_: Any, data: Any) -> Any:  # noqa: N802
        message = cls_()
        MergeFromString(message, data)
        return message

    def SerializeToString(self: Any, deterministic: bool = True, **options: Any) -> bytes:  # noqa: N802
        return bytes(library_serialize(self, deterministic=deterministic, **options))

    def __reduce__(self: Any) -> tuple[Any, ...]:
        """Pickled as (class, bytes): the library would look nested classes up in the
        default descriptor pool, which zmtf's messages are not in."""
        return _unpickle, (type(self), SerializeToString(self))

    cls.__reduce__ = __reduce__
    cls.MergeFromString = MergeFromString
    cls.ParseFromString = ParseFromString
    cls.FromString = classmethod(FromString)
    cls.SerializeToString = SerializeToString
    for nested in cls.DESCRIPTOR.nested_types:
        if not nested.GetOptions().map_entry:
            _add_methods(getattr(cls, nested.name))


def _unpickle(cls: Any, data: bytes) -> Any:
    return cls.FromString(data)


# ---- text format ------------------------------------------------------------------------------
def to_text(message: Any) -> str:
    """TF's text format (``text_format.MessageToString``), as ``str(message)`` also gives."""
    return str(text_format.MessageToString(message))


def merge_text(text: str, message: Any) -> Any:
    """Parse protobuf text format into ``message``; InvalidArgumentError naming the message
    if it is not one (text comes from files: checked like binary input). zmtf's schemas are
    not recursive, so a text's nesting is bounded by them; RecursionError is caught anyway."""
    try:
        return text_format.Merge(text, message)
    except (text_format.ParseError, ValueError, TypeError, RecursionError) as exc:
        name = message.DESCRIPTOR.name
        raise InvalidArgumentError(None, None, f"{name}: cannot parse text format: "
                                   f"{str(exc)[:200]}") from None


_add_data_type_file()

__all__ = ["Field", "MAX_MESSAGE_BYTES", "Message", "ProtoDecodeError", "RepeatedMessages",
           "merge_text", "to_text"]

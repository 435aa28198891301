"""TensorBoard's Event, Summary, SessionLog and HistogramProto as protobuf-style classes:
what ``tf.train.summary_iterator`` yields, and what TF1 eval loops build by hand
(``tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.9)])``) and pass to
``FileWriter.add_summary``. ``SerializeToString`` uses summary_proto.py's encoders (one
writer per message); reading skips unknown fields, and malformed bytes raise
InvalidArgumentError (the proto_wire reader checks every tag and length).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from zmtf.formats.proto_wire import fields, length_delimited
from zmtf.formats.summary_proto import (
    encode_event, histogram_proto, image_proto, session_log_proto, simple_value_field, value_message,
)


def _double(raw: bytes) -> float:
    return struct.unpack("<d", raw)[0]


def _doubles(raw: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(raw) // 8}d", raw[:len(raw) // 8 * 8]))


class _Message:
    """protobuf's parse methods, for the messages below (each class sets ``_parse``)."""

    _parse: Any

    @classmethod
    def FromString(cls, data: bytes) -> Any:  # noqa: N802 (protobuf's name)
        return cls._parse(bytes(data))

    def ParseFromString(self, data: bytes) -> None:  # noqa: N802
        vars(self).update(vars(type(self).FromString(data)))


@dataclass
class HistogramProto(_Message):
    min: float = 0.0
    max: float = 0.0
    num: float = 0.0
    sum: float = 0.0
    sum_squares: float = 0.0
    bucket_limit: list[float] = field(default_factory=list)
    bucket: list[float] = field(default_factory=list)

    def SerializeToString(self) -> bytes:  # noqa: N802
        return histogram_proto(self.min, self.max, self.num, self.sum, self.sum_squares,
                               list(self.bucket_limit), list(self.bucket))


@dataclass
class Image(_Message):
    height: int = 0
    width: int = 0
    colorspace: int = 0
    encoded_image_string: bytes = b""

    def SerializeToString(self) -> bytes:  # noqa: N802
        return image_proto(self.height, self.width, self.colorspace, self.encoded_image_string)


_VALUE_KINDS = ("histo", "image", "tensor")


@dataclass
class Value(_Message):
    """One tagged value; a Value given none of histo/image/tensor is written as simple_value."""

    tag: str = ""
    simple_value: float = 0.0
    histo: HistogramProto | None = None
    image: Image | None = None
    tensor: bytes | None = None   # a TensorProto, serialized (text summaries)
    metadata: bytes | None = None  # a SummaryMetadata, serialized (kept to write it back)
    node_name: str = ""
    _present: set[str] = field(default_factory=set, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._present |= {kind for kind in _VALUE_KINDS if getattr(self, kind) is not None}
        if self.simple_value or not self._present:
            self._present.add("simple_value")

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        return name in self._present or (name == "metadata" and self.metadata is not None)

    def WhichOneof(self, name: str) -> str | None:  # noqa: N802
        return next((kind for kind in _VALUE_KINDS if getattr(self, kind) is not None),
                    "simple_value" if "simple_value" in self._present else None)

    def SerializeToString(self) -> bytes:  # noqa: N802
        if self.histo is not None:
            body = length_delimited(5, self.histo.SerializeToString())
        elif self.image is not None:
            body = length_delimited(4, self.image.SerializeToString())
        elif self.tensor is not None:
            body = length_delimited(8, self.tensor)
        else:
            body = simple_value_field(self.simple_value)
        if self.node_name:
            body += length_delimited(7, self.node_name.encode())
        if self.metadata is not None:
            body += length_delimited(9, self.metadata)
        return value_message(self.tag, body)


class _RepeatedValues(list):
    """``summary.value``: a list with protobuf's ``add(**fields)``."""

    def add(self, **fields: Any) -> Value:
        value = Value(**fields)
        self.append(value)
        return value


@dataclass
class Summary(_Message):
    """``tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.9)])``."""

    value: list[Value] = field(default_factory=_RepeatedValues)

    Value = Value
    Image = Image

    def __post_init__(self) -> None:
        self.value = _RepeatedValues(self.value)

    def SerializeToString(self) -> bytes:  # noqa: N802
        return b"".join(length_delimited(1, value.SerializeToString()) for value in self.value)


@dataclass
class SessionLog(_Message):
    """A START/STOP/CHECKPOINT marker in an event file (TensorBoard uses START to drop the
    events a restarted run rewrites)."""

    status: int = 0
    checkpoint_path: str = ""
    msg: str = ""

    STATUS_UNSPECIFIED, START, STOP, CHECKPOINT = 0, 1, 2, 3

    def SerializeToString(self) -> bytes:  # noqa: N802
        return session_log_proto(self.status, self.checkpoint_path, self.msg)


_EVENT_KINDS = ("file_version", "graph_def", "summary", "session_log")


@dataclass
class Event(_Message):
    wall_time: float = 0.0
    step: int = 0
    file_version: str = ""
    graph_def: bytes = b""   # a serialized GraphDef (TensorBoard's graph view)
    summary: Summary | None = None
    session_log: SessionLog | None = None

    def HasField(self, name: str) -> bool:  # noqa: N802
        return getattr(self, name, None) not in (None, "", b"")

    def WhichOneof(self, name: str) -> str | None:  # noqa: N802
        return next((kind for kind in _EVENT_KINDS if self.HasField(kind)), None)

    def SerializeToString(self) -> bytes:  # noqa: N802
        return encode_event(
            self.wall_time, step=self.step or None, file_version=self.file_version or None,
            graph_def=self.graph_def or None,
            summary=None if self.summary is None else self.summary.SerializeToString(),
            session_log=None if self.session_log is None else self.session_log.SerializeToString())


def parse_event(data: bytes, where: str = "Event") -> Event:
    event = Event()
    for number, wire_type, raw in fields(data, where):
        if number == 1 and wire_type == 1:
            event.wall_time = _double(raw)
        elif number == 2 and wire_type == 0:
            event.step = raw - (1 << 64) if raw >> 63 else raw
        elif number == 3 and wire_type == 2:
            event.file_version = raw.decode("utf-8", "replace")
        elif number == 4 and wire_type == 2:
            event.graph_def = bytes(raw)
        elif number == 5 and wire_type == 2:
            event.summary = parse_summary(raw, f"{where}.summary")
        elif number == 7 and wire_type == 2:
            event.session_log = parse_session_log(raw, f"{where}.session_log")
    return event


def parse_session_log(data: bytes, where: str = "SessionLog") -> SessionLog:
    log = SessionLog()
    for number, wire_type, raw in fields(data, where):
        if number == 1 and wire_type == 0:
            log.status = raw
        elif number in (2, 3) and wire_type == 2:
            setattr(log, "checkpoint_path" if number == 2 else "msg", raw.decode("utf-8", "replace"))
    return log


def parse_summary(data: bytes, where: str = "Summary") -> Summary:
    return Summary([_value(raw, f"{where}.value") for number, wire_type, raw in fields(data, where)
                    if number == 1 and wire_type == 2])


def _value(data: bytes, where: str = "Summary.Value") -> Value:
    value = Value()
    value._present.clear()
    for number, wire_type, raw in fields(data, where):
        if number == 1 and wire_type == 2:
            value.tag = raw.decode("utf-8", "replace")
        elif number == 2 and wire_type == 5:
            value.simple_value = struct.unpack("<f", raw)[0]
            value._present.add("simple_value")
        elif number == 5 and wire_type == 2:
            value.histo = _histogram(raw, where)
            value._present.add("histo")
        elif number == 4 and wire_type == 2:
            value.image = _image(raw, where)
            value._present.add("image")
        elif number == 8 and wire_type == 2:
            value.tensor = bytes(raw)
            value._present.add("tensor")
        elif number == 9 and wire_type == 2:
            value.metadata = bytes(raw)
        elif number == 7 and wire_type == 2:
            value.node_name = raw.decode("utf-8", "replace")
    return value


def _histogram(data: bytes, where: str = "HistogramProto") -> HistogramProto:
    histo = HistogramProto()
    names = {1: "min", 2: "max", 3: "num", 4: "sum", 5: "sum_squares"}
    for number, wire_type, raw in fields(data, f"{where}.histo"):
        if number in names and wire_type == 1:
            setattr(histo, names[number], _double(raw))
        elif number in (6, 7):
            values = _doubles(raw) if wire_type == 2 else [_double(raw)]
            (histo.bucket_limit if number == 6 else histo.bucket).extend(values)
    return histo


def _image(data: bytes, where: str = "Summary.Image") -> Image:
    image = Image()
    names: dict[int, Any] = {1: "height", 2: "width", 3: "colorspace"}
    for number, wire_type, raw in fields(data, f"{where}.image"):
        if number in names and wire_type == 0:
            setattr(image, names[number], raw)
        elif number == 4 and wire_type == 2:
            image.encoded_image_string = bytes(raw)
    return image


Event._parse = staticmethod(parse_event)
Summary._parse = staticmethod(parse_summary)
Value._parse = staticmethod(_value)
HistogramProto._parse = staticmethod(_histogram)
Image._parse = staticmethod(_image)
SessionLog._parse = staticmethod(parse_session_log)

"""Reading TensorBoard's Event and Summary protobufs back (the writing half is
summary_proto.py): what ``tf.train.summary_iterator`` yields, with the fields TF1 scripts
read (``event.step``, ``event.wall_time``, ``event.summary.value[i].tag/simple_value``,
``.histo``, ``.image``). Unknown fields are skipped, malformed bytes raise
InvalidArgumentError (the proto_wire reader checks every tag and length).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

from zmtf.framework.proto_wire import fields


def _double(raw: bytes) -> float:
    return struct.unpack("<d", raw)[0]


def _doubles(raw: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(raw) // 8}d", raw[:len(raw) // 8 * 8]))


@dataclass
class HistogramProto:
    min: float = 0.0
    max: float = 0.0
    num: float = 0.0
    sum: float = 0.0
    sum_squares: float = 0.0
    bucket_limit: list[float] = field(default_factory=list)
    bucket: list[float] = field(default_factory=list)


@dataclass
class Image:
    height: int = 0
    width: int = 0
    colorspace: int = 0
    encoded_image_string: bytes = b""


@dataclass
class Value:
    tag: str = ""
    simple_value: float = 0.0
    histo: HistogramProto | None = None
    image: Image | None = None
    tensor: bytes | None = None   # a TensorProto, serialized (text summaries)
    _present: set[str] = field(default_factory=set, repr=False)

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        return name in self._present


@dataclass
class Summary:
    value: list[Value] = field(default_factory=list)


@dataclass
class Event:
    wall_time: float = 0.0
    step: int = 0
    file_version: str = ""
    summary: Summary | None = None

    def HasField(self, name: str) -> bool:  # noqa: N802
        return getattr(self, name, None) not in (None, "")

    def WhichOneof(self, name: str) -> str | None:  # noqa: N802
        if self.file_version:
            return "file_version"
        return "summary" if self.summary is not None else None


def parse_event(data: bytes, where: str = "Event") -> Event:
    event = Event()
    for number, wire_type, raw in fields(data, where):
        if number == 1 and wire_type == 1:
            event.wall_time = _double(raw)
        elif number == 2 and wire_type == 0:
            event.step = raw - (1 << 64) if raw >> 63 else raw
        elif number == 3 and wire_type == 2:
            event.file_version = raw.decode("utf-8", "replace")
        elif number == 5 and wire_type == 2:
            event.summary = parse_summary(raw, f"{where}.summary")
    return event


def parse_summary(data: bytes, where: str = "Summary") -> Summary:
    return Summary([_value(raw, f"{where}.value") for number, wire_type, raw in fields(data, where)
                    if number == 1 and wire_type == 2])


def _value(data: bytes, where: str) -> Value:
    value = Value()
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
    return value


def _histogram(data: bytes, where: str) -> HistogramProto:
    histo = HistogramProto()
    names = {1: "min", 2: "max", 3: "num", 4: "sum", 5: "sum_squares"}
    for number, wire_type, raw in fields(data, f"{where}.histo"):
        if number in names and wire_type == 1:
            setattr(histo, names[number], _double(raw))
        elif number in (6, 7):
            values = _doubles(raw) if wire_type == 2 else [_double(raw)]
            (histo.bucket_limit if number == 6 else histo.bucket).extend(values)
    return histo


def _image(data: bytes, where: str) -> Image:
    image = Image()
    names: dict[int, Any] = {1: "height", 2: "width", 3: "colorspace"}
    for number, wire_type, raw in fields(data, f"{where}.image"):
        if number in names and wire_type == 0:
            setattr(image, names[number], raw)
        elif number == 4 and wire_type == 2:
            image.encoded_image_string = bytes(raw)
    return image

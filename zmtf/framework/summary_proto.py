"""TensorBoard's Summary and Event protobufs and TFRecord framing, written by hand (pure:
bytes in, bytes out; no protobuf dependency). Used by the summary kernels and FileWriter."""

from __future__ import annotations

import struct

def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, wire_type: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire_type) + payload


def _length_delimited(number: int, data: bytes) -> bytes:
    return _field(number, 2, _varint(len(data)) + data)


def scalar_summary(tag: str, value: float) -> bytes:
    """Summary{value{tag: tag, simple_value: value}}."""
    entry = _length_delimited(1, tag.encode()) + _field(2, 5, struct.pack("<f", value))
    return _length_delimited(1, entry)


def encode_event(wall_time: float, step: int | None = None, summary: bytes | None = None,
                 file_version: str | None = None) -> bytes:
    """Event{wall_time=1, step=2, file_version=3, summary=5}."""
    out = _field(1, 1, struct.pack("<d", wall_time))
    if step is not None:
        out += _field(2, 0, _varint(int(step)))
    if file_version is not None:
        out += _length_delimited(3, file_version.encode())
    if summary is not None:
        out += _length_delimited(5, summary)
    return out


def _crc32c_table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def _masked(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def record(data: bytes) -> bytes:
    """TFRecord framing: length, masked crc of it, the data, masked crc of the data."""
    length = struct.pack("<Q", len(data))
    return (length + struct.pack("<I", _masked(crc32c(length))) + data
            + struct.pack("<I", _masked(crc32c(data))))

"""Protobuf's wire format, shared by the hand-written messages (summary_proto.py,
example_proto.py, event_reader.py): writing varints and tagged fields, and reading them
back with every tag, varint and length checked (bytes from files are untrusted)."""

from __future__ import annotations

from typing import Any, Iterator

from zmtf.framework.errors import InvalidArgumentError

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


def varint(value: int) -> bytes:
    """Base-128 varint; a negative int64 takes ten bytes of two's complement, as protobuf."""
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


def field(number: int, wire_type: int, payload: bytes) -> bytes:
    return varint(number << 3 | wire_type) + payload


def length_delimited(number: int, data: bytes) -> bytes:
    return field(number, 2, varint(len(data)) + data)


def read_varint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    """(value, next position) of the varint at ``pos``; InvalidArgumentError if malformed."""
    result = shift = 0
    while True:
        if pos >= len(data):
            raise InvalidArgumentError(f"{where}: truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            if result >> 64:
                raise InvalidArgumentError(f"{where}: varint over 64 bits")
            return result, pos
        shift += 7
        if shift >= 70:
            raise InvalidArgumentError(f"{where}: varint longer than 10 bytes")


def fields(data: bytes, where: str) -> Iterator[tuple[int, int, Any]]:
    """(field number, wire type, value): an int, or the bytes of a fixed-size or
    length-delimited field."""
    pos = 0
    while pos < len(data):
        tag, pos = read_varint(data, pos, where)
        number, wire_type = tag >> 3, tag & 7
        if number == 0:
            raise InvalidArgumentError(f"{where}: field number 0 is invalid")
        if wire_type == VARINT:
            value, pos = read_varint(data, pos, where)
        elif wire_type in (FIXED64, FIXED32):
            size = 8 if wire_type == FIXED64 else 4
            if pos + size > len(data):
                raise InvalidArgumentError(f"{where}: truncated fixed-size field {number}")
            value, pos = data[pos:pos + size], pos + size
        elif wire_type == BYTES:
            length, pos = read_varint(data, pos, where)
            if pos + length > len(data):
                raise InvalidArgumentError(f"{where}: field {number} claims {length} bytes, "
                                           f"{len(data) - pos} left")
            value, pos = data[pos:pos + length], pos + length
        else:
            raise InvalidArgumentError(f"{where}: wire type {wire_type} (field {number}) is "
                                       f"not valid here")
        yield number, wire_type, value


__all__ = ["BYTES", "FIXED32", "FIXED64", "VARINT", "field", "fields", "length_delimited",
           "read_varint", "varint"]

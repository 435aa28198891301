"""Protobuf's wire format, the writing half shared by the hand-written messages
(summary_proto.py, example_proto.py): varints and tagged fields."""

from __future__ import annotations


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


__all__ = ["field", "length_delimited", "varint"]

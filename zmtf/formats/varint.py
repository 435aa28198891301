"""Base-128 varints as LevelDB's SSTables (training/sstable.py) and TF's tensor bundles
(string tensor lengths, training/tensor_bundle.py) store them: written, and read back with
every byte checked (bytes from files are untrusted). Protobuf messages are the protobuf
library's (proto_message.py); these two formats are not protobuf."""

from __future__ import annotations

from zmtf.framework.errors import InvalidArgumentError


def varint(value: int) -> bytes:
    """Base-128 varint; a negative int64 takes ten bytes of two's complement."""
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


__all__ = ["read_varint", "varint"]

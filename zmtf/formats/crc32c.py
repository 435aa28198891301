"""CRC-32C (Castagnoli) from ``google-crc32c`` (C, hardware CRC instructions), and TF's
crc32c::Mask / Unmask over it.

TFRecord frames, event files, checkpoint bundles and their SSTable index all carry it. The
library computes the CRC (tens of GB/s on 64 MiB); what stays here is TF's mask, which a CRC
stored inside CRC'd data gets so that it stays distinguishable from a CRC of that data.
"""

from __future__ import annotations

import numpy as np
from google_crc32c import cext as _cext

_MASK_DELTA = 0xA282EAD8
_value = _cext.value
#: the library's own function, for callers that hold ``bytes`` and call it per record (a
#: TFRecord batch maps it over its records without a Python frame per call)
crc32c_of_bytes = _cext.value


def crc32c(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """CRC-32C of ``data`` (TF's crc32c::Value); an ndarray counts as its raw bytes."""
    if type(data) is bytes:
        return _value(data)
    # the C function takes read-only buffers only (bytes, contiguous ndarrays): anything else
    # is looked at through a numpy view, without a copy
    return _value(np.ascontiguousarray(np.frombuffer(memoryview(data).cast("B"), np.uint8)))


def crc32c_extend(crc: int, data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """The CRC-32C of the bytes whose CRC is ``crc`` followed by ``data``: a large buffer is
    checked a piece at a time as it is read or written, while each piece is in cache."""
    if type(data) is bytes:
        return _cext.extend(crc, data)
    return _cext.extend(crc, np.ascontiguousarray(np.frombuffer(memoryview(data).cast("B"),
                                                                np.uint8)))


def mask(crc: int) -> int:
    """TF's crc32c::Mask: rotate right 15 bits, add a constant."""
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def masked_crc32c(data: bytes | bytearray | memoryview | np.ndarray) -> int:
    """The masked CRC TFRecord frames carry for their length and data."""
    return mask(crc32c(data))


__all__ = ["crc32c", "crc32c_extend", "crc32c_of_bytes", "mask", "masked_crc32c", "unmask"]

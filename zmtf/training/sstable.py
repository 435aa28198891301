"""LevelDB's table format (an "SSTable"), the container of a TF checkpoint's ``.index`` file.

Pure functions over bytes. A table is::

    data block* | metaindex block | index block | footer (48 bytes)

Each block is entries ``varint32 shared | varint32 unshared | varint32 value_len |
key[shared:] | value`` (a key shares a prefix with the one before it, except at a "restart
point", every 16th entry), then the restart offsets as fixed32s and their count; after the
block come one byte of compression type (0: none, the only kind TF writes) and the masked
CRC-32C of the block and that byte. The index block maps a key >= every key of a data block
(and < every key of the next) to the block's handle ``varint64 offset | varint64 size``. The
footer holds the metaindex and index handles, zero padding to 40 bytes, then the magic number
0xdb4775248b80fb57 as two little-endian fixed32s.

``build_table`` writes what TF's table::TableBuilder writes for the same entries, byte for
byte. ``read_table`` reads every entry back, checking each CRC, handle, length and the key
order, and raises DataLossError naming the file and the fault; never a crash or a hang.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from zmtf.formats.crc32c import crc32c, mask, unmask
from zmtf.framework.errors import DataLossError, InvalidArgumentError, UnimplementedError
from zmtf.formats.varint import read_varint, varint

MAGIC = 0xDB4775248B80FB57
FOOTER_SIZE = 48
_HANDLES_SIZE = 40                 # two BlockHandles of at most 20 bytes each, zero-padded
_TRAILER_SIZE = 5                  # compression type byte + masked crc
_NO_COMPRESSION, _SNAPPY = 0, 1
#: TF's table::Options defaults (table_options.h): 256 KiB blocks, a restart every 16 keys
BLOCK_SIZE = 262144
RESTART_INTERVAL = 16
_U32 = struct.Struct("<I")


# ---- writing ------------------------------------------------------------------------------
def _common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class _BlockBuilder:
    """One block being filled, as leveldb's BlockBuilder (prefix-compressed keys)."""

    def __init__(self, restart_interval: int) -> None:
        self._interval = restart_interval
        self.reset()

    def reset(self) -> None:
        self._buffer = bytearray()
        self._restarts = [0]
        self._count = 0
        self._last = b""
        self.empty = True

    def add(self, key: bytes, value: bytes) -> None:
        shared = 0
        if self._count < self._interval:
            shared = _common_prefix(self._last, key)
        else:
            self._restarts.append(len(self._buffer))
            self._count = 0
        self._buffer += varint(shared) + varint(len(key) - shared) + varint(len(value))
        self._buffer += key[shared:] + value
        self._last = key
        self._count += 1
        self.empty = False

    def size_estimate(self) -> int:
        return len(self._buffer) + 4 * len(self._restarts) + 4

    def finish(self) -> bytes:
        tail = b"".join(_U32.pack(r) for r in self._restarts) + _U32.pack(len(self._restarts))
        return bytes(self._buffer) + tail


def _shortest_separator(start: bytes, limit: bytes) -> bytes:
    """A short key in [start, limit) (TF's table_builder FindShortestSeparator)."""
    i = _common_prefix(start, limit)
    if i >= min(len(start), len(limit)):
        return start
    if start[i] < 0xFF and start[i] + 1 < limit[i]:
        return start[:i] + bytes([start[i] + 1])
    return start


def _short_successor(key: bytes) -> bytes:
    """A short key >= ``key`` (FindShortSuccessor): the first byte below 0xff, plus one."""
    for i, byte in enumerate(key):
        if byte != 0xFF:
            return key[:i] + bytes([byte + 1])
    return key


def build_table(entries: Iterable[tuple[bytes, bytes]], block_size: int = BLOCK_SIZE,
                restart_interval: int = RESTART_INTERVAL) -> bytes:
    """The table file holding ``entries`` (keys strictly increasing), uncompressed, as TF."""
    out = bytearray()

    def write_block(block: _BlockBuilder) -> bytes:
        contents = block.finish()
        block.reset()
        handle = varint(len(out)) + varint(len(contents))
        crc = mask(crc32c(contents + bytes([_NO_COMPRESSION])))
        out.extend(contents + bytes([_NO_COMPRESSION]) + _U32.pack(crc))
        return handle

    data, index = _BlockBuilder(restart_interval), _BlockBuilder(1)
    pending: bytes | None = None      # the handle of the last data block, not yet indexed
    last: bytes | None = None
    for key, value in entries:
        key, value = bytes(key), bytes(value)
        if last is not None:
            if key <= last:
                raise InvalidArgumentError(f"table keys must be strictly increasing: "
                                           f"{key!r} after {last!r}")
            if len(key) + len(value) >= 2 * block_size and not data.empty:
                pending = write_block(data)
        if pending is not None:
            index.add(_shortest_separator(last or b"", key), pending)
            pending = None
        last = key
        data.add(key, value)
        if data.size_estimate() >= block_size:
            pending = write_block(data)
    if not data.empty:
        pending = write_block(data)
    metaindex = write_block(_BlockBuilder(restart_interval))
    if pending is not None:
        index.add(_short_successor(last or b""), pending)
    handles = metaindex + write_block(index)
    out += handles + bytes(_HANDLES_SIZE - len(handles))
    out += _U32.pack(MAGIC & 0xFFFFFFFF) + _U32.pack(MAGIC >> 32)
    return bytes(out)


# ---- reading ------------------------------------------------------------------------------
def _varint(data: bytes, pos: int, where: str) -> tuple[int, int]:
    try:
        return read_varint(data, pos, where)
    except InvalidArgumentError as error:
        raise DataLossError(None, None, error.message) from None


def _handle(data: bytes, pos: int, where: str) -> tuple[int, int, int]:
    offset, pos = _varint(data, pos, where)
    size, pos = _varint(data, pos, where)
    return offset, size, pos


def _block(data: bytes, offset: int, size: int, where: str) -> bytes:
    """The checked contents of the block at ``offset`` (``data`` ends before the footer)."""
    if offset + size + _TRAILER_SIZE > len(data):
        raise DataLossError(None, None, f"{where}: block at offset {offset} of {size} bytes "
                                        f"runs past the end of the table ({len(data)} bytes): "
                                        f"the file is truncated or corrupt")
    contents = data[offset:offset + size + 1]
    (stored,) = _U32.unpack_from(data, offset + size + 1)
    if crc32c(contents) != unmask(stored):
        raise DataLossError(None, None, f"{where}: block checksum mismatch in the block at "
                                        f"offset {offset}: the file is corrupt")
    kind = contents[-1]
    if kind == _SNAPPY:
        raise UnimplementedError(None, None, f"{where}: the block at offset {offset} is "
                                             f"snappy-compressed (TensorFlow before 1.2 wrote "
                                             f"those); zmtf reads uncompressed tables only")
    if kind != _NO_COMPRESSION:
        raise DataLossError(None, None, f"{where}: bad block type {kind} at offset {offset}")
    return contents[:-1]


def _block_entries(block: bytes, where: str) -> list[tuple[bytes, bytes]]:
    if len(block) < 4:
        raise DataLossError(None, None, f"{where}: block of {len(block)} bytes is too short")
    (restarts,) = _U32.unpack_from(block, len(block) - 4)
    limit = len(block) - 4 - 4 * restarts
    if restarts == 0 or limit < 0:
        raise DataLossError(None, None, f"{where}: bad block restart count {restarts}")
    entries, pos, last = [], 0, b""
    while pos < limit:
        shared, pos = _varint(block, pos, where)
        unshared, pos = _varint(block, pos, where)
        size, pos = _varint(block, pos, where)
        if shared > len(last) or pos + unshared + size > limit:
            raise DataLossError(None, None, f"{where}: bad entry in block (shared {shared}, "
                                            f"unshared {unshared}, value {size} bytes)")
        last = last[:shared] + block[pos:pos + unshared]
        entries.append((last, block[pos + unshared:pos + unshared + size]))
        pos += unshared + size
    return entries


def read_table(data: bytes, where: str) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of the table file ``data``, in key order; ``where`` names it in
    errors."""
    if len(data) < FOOTER_SIZE:
        raise DataLossError(None, None, f"{where}: {len(data)} bytes is too short for a table "
                                        f"({FOOTER_SIZE}-byte footer): the file is truncated")
    footer = data[len(data) - FOOTER_SIZE:]
    lo, hi = _U32.unpack_from(footer, _HANDLES_SIZE), _U32.unpack_from(footer, _HANDLES_SIZE + 4)
    if lo[0] | hi[0] << 32 != MAGIC:
        raise DataLossError(None, None, f"{where}: not an sstable (bad magic number): the "
                                        f"file is truncated, corrupt or not a checkpoint index")
    _, _, pos = _handle(footer, 0, where)                       # the metaindex: unused
    index_offset, index_size, _ = _handle(footer, pos, where)
    body = data[:len(data) - FOOTER_SIZE]
    entries: list[tuple[bytes, bytes]] = []
    for _, handle in _block_entries(_block(body, index_offset, index_size, where), where):
        offset, size, end = _handle(handle, 0, where)
        if end != len(handle):
            raise DataLossError(None, None, f"{where}: bad block handle in the index block")
        block_entries = _block_entries(_block(body, offset, size, where), where)
        for key, value in block_entries:
            if entries and key <= entries[-1][0]:
                raise DataLossError(None, None, f"{where}: keys out of order ({key!r} after "
                                                f"{entries[-1][0]!r})")
            entries.append((key, value))
    return entries


__all__ = ["BLOCK_SIZE", "MAGIC", "RESTART_INTERVAL", "build_table", "read_table"]

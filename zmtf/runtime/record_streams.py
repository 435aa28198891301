"""Lines and fixed-length records cut from a file's (maybe decompressed) byte stream a bounded
piece at a time.

A file source must not read a whole file to cut it: a GZIP file of one megabyte can inflate
to gigabytes (a decompression bomb), and a file with no line ending is one line as long as
the file. So each reader here holds at most one record (plus a read piece), and a record
longer than the limit for one tensor (ZMTF_MAX_OUTPUT_BYTES) is ResourceExhaustedError naming
the file, raised before its bytes are gathered.
"""

from __future__ import annotations

from typing import BinaryIO, Generator

from zmtf.framework.errors import ResourceExhaustedError
from zmtf.kernels.cpu import common as _common

_PIECE = 1 << 16


def record_limit() -> int:
    """The most bytes one record may take: the kernels' limit for one tensor."""
    return _common.MAX_OUTPUT_BYTES


def too_long(what: str, where: str, limit: int) -> ResourceExhaustedError:
    return ResourceExhaustedError(
        None, None, f"{where}: {what} is longer than the limit of {limit} bytes for one tensor; "
        f"check the file (a small compressed file can inflate past any memory), or raise "
        f"ZMTF_MAX_OUTPUT_BYTES")


def bounded_lines(stream: BinaryIO, where: str, limit: int) -> Generator[bytes, None, None]:
    """Each line of a buffered ``stream``, its "\\n" or "\\r\\n" kept; a line whose text is
    over ``limit`` bytes is ResourceExhaustedError (readline stops there, so nothing more is
    read)."""
    while True:
        line = stream.readline(limit + 3)
        if not line:
            return
        text = len(line) - (2 if line.endswith(b"\r\n") else line.endswith(b"\n"))
        if text > limit:
            raise too_long("a line", where, limit)
        yield line


def _skip(stream: BinaryIO, count: int) -> int:
    """Read and drop up to ``count`` bytes; how many there were."""
    skipped = 0
    while skipped < count:
        piece = stream.read(min(_PIECE, count - skipped))
        if not piece:
            break
        skipped += len(piece)
    return skipped


def fixed_windows(stream: BinaryIO, header: int, record: int, footer: int, step: int,
                  where: str, limit: int) -> Generator[bytes, None, int]:
    """The ``record``-byte records starting every ``step`` bytes after the ``header`` whose
    end leaves ``footer`` bytes of the stream after it; returns the stream's length. Holds
    ``record + footer`` bytes at most, so their sum must be within ``limit``."""
    if record + footer > limit:
        raise too_long(f"a record of {record} bytes with a footer of {footer} bytes", where,
                       limit)
    offset = _skip(stream, header)
    if offset < header:
        return offset
    buffer, ended = bytearray(), False
    while True:
        while not ended and len(buffer) < record + footer:
            piece = stream.read(_PIECE)
            ended = not piece
            buffer += piece
        if len(buffer) < record + footer:
            return offset + len(buffer)
        yield bytes(buffer[:record])
        if step <= len(buffer):
            del buffer[:step]
            offset += step
        else:
            offset += len(buffer) + _skip(stream, step - len(buffer))
            buffer.clear()


__all__ = ["bounded_lines", "fixed_windows", "record_limit", "too_long"]

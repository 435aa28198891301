"""TFRecord files, framed exactly as TensorFlow frames them (no protobuf).

Each record is::

    uint64 length (little-endian) | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)

with CRC-32C (Castagnoli, formats/crc32c.py), masked as TF masks it
(rotate right 15, add 0xa282ead8). Reading checks both CRCs and every length against what is
left of the file: a damaged or truncated record raises DataLossError naming the file and the
byte offset of the record, never returns garbage. The same framing serves TensorBoard's event
files (summary_proto.py) and ``tf.python_io`` / ``tf.data.TFRecordDataset``. A file may be
compressed whole (GZIP or ZLIB, record_compression.py); its records' offsets and lengths are
then those of the decompressed bytes, as in TF.
"""

from __future__ import annotations

import os
import struct
import zlib
from types import TracebackType
from typing import BinaryIO, Iterator

from zmtf.formats.crc32c import crc32c, masked_crc32c
from zmtf.framework.errors import DataLossError, NotFoundError, ResourceExhaustedError
from zmtf.formats.record_compression import TFRecordOptions, compressor, decompressed

_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_PIECE = 1 << 24


def encode_record(data: bytes) -> bytes:
    """One record's bytes: length, masked crc of the length, data, masked crc of the data."""
    length = struct.pack("<Q", len(data))
    return (length + _FOOTER.pack(masked_crc32c(length)) + bytes(data)
            + _FOOTER.pack(masked_crc32c(data)))


def read_records(stream: BinaryIO, name: str, size: int | None = None,
                 max_bytes: int | None = None) -> Iterator[bytes]:
    """The records of an open binary ``stream``, each checked; ``name`` is used in errors and
    ``size`` (the file's length, if known) bounds every length before anything is read;
    ``max_bytes`` bounds one record too (a compressed file's length is not known, and a small
    one can inflate to a record of gigabytes): ResourceExhaustedError past it."""
    offset = 0
    while True:
        header = stream.read(_HEADER.size)
        if not header:
            return
        if len(header) < _HEADER.size:
            raise DataLossError(None, None, f"truncated record at byte {offset} of {name}: "
                                f"{len(header)} header bytes, 12 needed")
        length, length_crc = _HEADER.unpack(header)
        if masked_crc32c(header[:8]) != length_crc:
            raise DataLossError(None, None, f"corrupted record at byte {offset} of {name}: "
                                f"the length's CRC does not match")
        if max_bytes is not None and length > max_bytes:
            raise ResourceExhaustedError(None, None, f"record at byte {offset} of {name} claims "
                                         f"{length} data bytes, past the limit of {max_bytes} "
                                         f"bytes for one tensor; check the file (or raise "
                                         f"ZMTF_MAX_OUTPUT_BYTES)")
        if size is not None and offset + _HEADER.size + length + _FOOTER.size > size:
            raise DataLossError(None, None, f"truncated record at byte {offset} of {name}: it "
                                f"claims {length} data bytes, the file ends before them")
        body = stream.read(length + _FOOTER.size) if size is not None else _read_up_to(
            stream, length + _FOOTER.size)
        if len(body) < length + _FOOTER.size:
            raise DataLossError(None, None, f"truncated record at byte {offset} of {name}: "
                                f"{length} data bytes and a CRC needed, {len(body)} left")
        data = body[:length]
        if masked_crc32c(data) != _FOOTER.unpack(body[length:])[0]:
            raise DataLossError(None, None, f"corrupted record at byte {offset} of {name}: "
                                f"the data's CRC does not match")
        yield data
        offset += _HEADER.size + length + _FOOTER.size


def _read_up_to(stream: BinaryIO, count: int) -> bytes:
    """Up to ``count`` bytes of a stream of unknown length, read a bounded piece at a time
    (a damaged length must not allocate the size it claims before the stream runs out)."""
    pieces, left = [], count
    while left:
        piece = stream.read(min(left, _PIECE))
        if not piece:
            break
        pieces.append(piece)
        left -= len(piece)
    return b"".join(pieces)


def tf_record_iterator(path: str, options: object = None) -> Iterator[bytes]:
    """``tf.python_io.tf_record_iterator``: the records of the file at ``path``, in order;
    ``options`` (TFRecordOptions, a TFRecordCompressionType or "", "ZLIB", "GZIP") says how
    the file is compressed.

    A missing file raises NotFoundError; a damaged record or compressed stream DataLossError
    (file, byte offset); an unknown compression ValueError, before the file is opened.
    """
    return file_records(path, TFRecordOptions.get_compression_type_string(options))


def file_records(path: str, kind: str, max_bytes: int | None = None) -> Iterator[bytes]:
    """The records of the file at ``path``, compressed as ``kind`` ("", "ZLIB", "GZIP"), each
    at most ``max_bytes`` long (see read_records)."""
    try:
        stream = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(None, None, f"{path}; No such file or directory") from None
    with stream:
        size = None if kind else os.fstat(stream.fileno()).st_size
        yield from read_records(decompressed(stream, kind, path), path, size, max_bytes)


class TFRecordWriter:
    """``tf.python_io.TFRecordWriter``: ``write(record)`` appends one framed record; close it
    (or use ``with``) to flush. ``options`` (as for tf_record_iterator, or a TFRecordOptions
    with zlib's settings) compresses the file."""

    def __init__(self, path: str, options: object = None) -> None:
        self._deflate, self._flush_mode = compressor(options)
        self._path = path
        try:
            self._file: BinaryIO | None = open(path, "wb")
        except FileNotFoundError:
            raise NotFoundError(None, None, f"{path}; No such file or directory: its folder "
                                f"must exist") from None

    def write(self, record: bytes | str) -> None:
        if self._file is None:
            raise ValueError(f"TFRecordWriter for {self._path} is closed")
        if isinstance(record, str):
            record = record.encode("utf-8")
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"TFRecordWriter.write takes bytes (e.g. example.SerializeToString()),"
                            f" got {type(record).__name__}")
        framed = encode_record(bytes(record))
        if self._deflate is not None:
            framed = self._deflate.compress(framed)
            if self._flush_mode != zlib.Z_NO_FLUSH:
                framed += self._deflate.flush(self._flush_mode)
        self._file.write(framed)

    def flush(self) -> None:
        """Everything written so far onto the file (a compressed stream is sync-flushed, so
        the records survive a crash; it is finished only by close, and until then zmtf's
        readers report it truncated after its last whole record)."""
        if self._file is not None:
            if self._deflate is not None:
                self._file.write(self._deflate.flush(zlib.Z_SYNC_FLUSH))
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            if self._deflate is not None:
                self._file.write(self._deflate.flush())
            self._file.close()
            self._file = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


__all__ = ["TFRecordWriter", "crc32c", "encode_record", "file_records", "masked_crc32c",
           "read_records",
           "tf_record_iterator"]

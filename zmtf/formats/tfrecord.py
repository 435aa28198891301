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

Small records are where Python costs show (TF frames 100 B records at ~0.6 µs each), so both
directions work a batch at a time: the writer keeps small records and frames a batch with
C-level ``map``/``join`` and the masks in numpy; the reader cuts a buffered chunk into its
records in one loop, checks their CRCs together, then hands them out. Observable behaviour is
the per-record one: records before a damaged one are still returned, then the error.
"""

from __future__ import annotations

import functools
import itertools
import os
import struct
import zlib
from types import TracebackType
from typing import BinaryIO, Iterator

import numpy as np

from zmtf.formats.crc32c import crc32c, crc32c_of_bytes, mask, masked_crc32c
from zmtf.framework.errors import DataLossError, NotFoundError, ResourceExhaustedError
from zmtf.formats.record_compression import TFRecordOptions, compressor, decompressed

_HEADER = struct.Struct("<QI")
_LENGTH = struct.Struct("<Q")
_FOOTER = struct.Struct("<I")
_FRAME = _HEADER.size + _FOOTER.size   # the bytes a record adds to its data
_PIECE = 1 << 24
_CHUNK = 1 << 20          # bytes a reader takes from its stream at a time
_SMALL_RECORD = 1 << 14   # records up to this size are batched by the writer ...
_BATCH = 2048             # ... this many at a time (at most 32 MiB held)


@functools.lru_cache(maxsize=1024)
def _header(length: int) -> bytes:
    """The 12 bytes before a record's data: its length and the length's masked CRC."""
    packed = _LENGTH.pack(length)
    return packed + _FOOTER.pack(masked_crc32c(packed))


def encode_record(data: bytes) -> bytes:
    """One record's bytes: length, masked crc of the length, data, masked crc of the data."""
    return _header(len(data)) + bytes(data) + _FOOTER.pack(masked_crc32c(data))


def _crcs(records: list[bytes]) -> np.ndarray:
    """The masked CRC of each record's data (uint32)."""
    return mask(np.fromiter(map(crc32c_of_bytes, records), np.uint32, len(records)))


def encode_records(records: list[bytes]) -> bytes:
    """The framed bytes of many records (bytes objects) at once."""
    lengths = list(map(len, records))
    if len(records) > 1 and min(lengths) == max(lengths):   # one length: one numpy table
        frames = np.empty((len(records), _FRAME + lengths[0]), np.uint8)
        frames[:, :_HEADER.size] = np.frombuffer(_header(lengths[0]), np.uint8)
        frames[:, _HEADER.size:-_FOOTER.size] = np.frombuffer(
            b"".join(records), np.uint8).reshape(len(records), -1)
        frames[:, -_FOOTER.size:] = _crcs(records).astype("<u4").view(np.uint8).reshape(-1, 4)
        return frames.tobytes()
    footers = map(_FOOTER.pack, _crcs(records).tolist())
    heads = map(_header, map(len, records))
    return b"".join(itertools.chain.from_iterable(zip(heads, records, footers)))


def read_records(stream: BinaryIO, name: str, size: int | None = None,
                 max_bytes: int | None = None) -> Iterator[bytes]:
    """The records of an open binary ``stream``, each checked; ``name`` is used in errors and
    ``size`` (the file's length, if known) bounds every length before anything is read;
    ``max_bytes`` bounds one record too (a compressed file's length is not known, and a small
    one can inflate to a record of gigabytes): ResourceExhaustedError past it."""
    for block in read_record_blocks(stream, name, size, max_bytes):
        yield from block


def read_record_blocks(stream: BinaryIO, name: str, size: int | None = None,
                       max_bytes: int | None = None) -> Iterator[list[bytes]]:
    """read_records' records a list at a time (those of one chunk of the stream, or one large
    record): for readers that take many records at once (a dataset's batch), with no Python
    step per record. The good records before a damaged one come as a list, then the error."""
    buffered, base, ended = b"", 0, False   # base: the offset of buffered[0] in the file
    # one read of the underlying stream at a time: a decompressing stream that fails (a
    # truncated file) then fails after the records before the damage have been handed out
    read = getattr(stream, "read1", stream.read)
    while True:
        if not ended:
            more = read(_CHUNK)
            ended = not more
            buffered = buffered + more if buffered else more
        records, used, error = _whole_records(buffered, base, name, max_bytes)
        if records:
            yield records
        if error is not None:
            raise error
        buffered, base = buffered[used:], base + used
        if not buffered and ended:
            return
        if ended or _needs_its_own_read(buffered, max_bytes):
            yield [_one_record(buffered, stream, base, name, size, max_bytes)]
            buffered, base = b"", base + _FRAME + _LENGTH.unpack_from(buffered)[0]


def _needs_its_own_read(buffered: bytes, max_bytes: int | None) -> bool:
    """Whether the record starting ``buffered`` is one for the one-record path: it claims more
    than another chunk would bring (or more than ``max_bytes``)."""
    if len(buffered) < _HEADER.size:
        return False
    length = _LENGTH.unpack_from(buffered)[0]
    return (_FRAME + length > len(buffered) + _CHUNK
            or (max_bytes is not None and length > max_bytes))


def _whole_records(buffered: bytes, base: int, name: str, max_bytes: int | None
                   ) -> tuple[list[bytes], int, DataLossError | None]:
    """The records wholly inside ``buffered`` (and within ``max_bytes``), both CRCs of each
    checked; how many bytes they take; and the error for the first damaged one (the records
    before it are returned)."""
    raw = np.frombuffer(buffered, np.uint8)
    at = _record_starts(buffered, raw)
    if not len(at):
        return [], 0, None
    same = _one_length(buffered, raw, at, max_bytes)
    if same is not None:
        return same
    lengths = _words(raw, at, 8).astype(np.int64)
    if max_bytes is not None and (lengths > max_bytes).any():   # left to _one_record
        count = int(np.argmax(lengths > max_bytes))
        at, lengths = at[:count], lengths[:count]
        if not count:
            return [], 0, None
    known, index = np.unique(lengths, return_inverse=True)
    want = np.array([_FOOTER.unpack_from(_header(int(n)), 8)[0] for n in known],
                    np.uint32)[index]
    bad_head = want != _words(raw, at + 8)
    starts = (at + _HEADER.size).tolist()
    stops = at + _HEADER.size + lengths
    records = [buffered[start:stop] for start, stop in zip(starts, stops.tolist())]
    bad = bad_head | (_crcs(records) != _words(raw, stops))
    return _checked(records, int(stops[-1]) + _FOOTER.size, bad, bad_head, at, base, name)


def _checked(records: list[bytes], used: int, bad: np.ndarray, bad_head: np.ndarray,
             at: np.ndarray, base: int, name: str
             ) -> tuple[list[bytes], int, DataLossError | None]:
    """_whole_records' answer once each record's CRCs are compared (``bad``)."""
    if not bad.any():
        return records, used, None
    first = int(np.argmax(bad))
    what = "length's" if bad_head[first] else "data's"
    error = DataLossError(None, None, f"corrupted record at byte {base + int(at[first])} of "
                          f"{name}: the {what} CRC does not match")
    return records[:first], 0, error


def _one_length(buffered: bytes, raw: np.ndarray, at: np.ndarray, max_bytes: int | None
                ) -> tuple[list[bytes], int, DataLossError | None] | None:
    """_whole_records for records that all have one length (they start every ``step``
    bytes): their headers and CRCs are columns of one reshaped view, no gathering. None when
    the records are not all of one length (or past ``max_bytes``) or one is damaged: the
    general path then finds and reports it."""
    count = len(at)
    step = int(at[1]) if count > 1 else 0
    length = step - _FRAME
    if count < 2 or int(at[-1]) != (count - 1) * step or \
            _LENGTH.unpack_from(buffered, int(at[-1]))[0] != length or \
            (max_bytes is not None and length > max_bytes):
        return None
    table = raw[:count * step].reshape(count, step)
    want = _FOOTER.unpack_from(_header(length), 8)[0]
    if (_column(table, 8) != want).any():
        return None   # the general path names the damaged record
    records = [buffered[start:start + length] for start in range(_HEADER.size, count * step, step)]
    if (_crcs(records) != _column(table, step - _FOOTER.size)).any():
        return None
    return records, count * step, None


def _column(table: np.ndarray, at: int) -> np.ndarray:
    """The little-endian uint32 at byte ``at`` of every row of ``table``."""
    return np.ascontiguousarray(table[:, at:at + 4]).view("<u4").ravel()


def _record_starts(buffered: bytes, raw: np.ndarray) -> np.ndarray:
    """Where each record wholly inside ``buffered`` starts, if the lengths are right (their
    CRCs are checked after). Records of one length, a common case, are found with numpy: if
    the length fields where the first record's length puts them all say that length, they
    are records; the rest is walked length by length."""
    size, pos = len(buffered), 0
    found = np.zeros(0, np.int64)
    if size >= 2 * _FRAME:
        step = _FRAME + _LENGTH.unpack_from(buffered)[0]
        count = size // step if step <= size else 0
        if count > 1:
            guess = np.arange(count, dtype=np.int64) * step
            agree = _words(raw, guess, 8) == step - _FRAME
            count = count if agree.all() else int(np.argmin(agree))
            found, pos = guess[:count], count * step
    heads, last = [], size - _FRAME
    unpack, keep = _LENGTH.unpack_from, heads.append
    while pos <= last:
        keep(pos)
        pos += _FRAME + unpack(buffered, pos)[0]
    if pos > size:
        heads.pop()
    return np.concatenate([found, np.array(heads, np.int64)]) if heads else found


def _words(raw: np.ndarray, at: np.ndarray, size: int = 4) -> np.ndarray:
    """The little-endian unsigned ints of ``size`` bytes at each offset ``at`` of ``raw``."""
    picked = raw[at[:, None] + np.arange(size)]
    return np.ascontiguousarray(picked).view(f"<u{size}").ravel()


def _one_record(buffered: bytes, stream: BinaryIO, offset: int, name: str, size: int | None,
                max_bytes: int | None) -> bytes:
    """The record at byte ``offset``, whose first bytes are ``buffered`` and the rest still in
    ``stream``: its header is checked before the data it claims is read (a bounded piece at a
    time when the file's size is unknown)."""
    if len(buffered) < _HEADER.size:
        raise DataLossError(None, None, f"truncated record at byte {offset} of {name}: "
                            f"{len(buffered)} header bytes, 12 needed")
    length, length_crc = _HEADER.unpack_from(buffered)
    if masked_crc32c(buffered[:8]) != length_crc:
        raise DataLossError(None, None, f"corrupted record at byte {offset} of {name}: "
                            f"the length's CRC does not match")
    if max_bytes is not None and length > max_bytes:
        raise ResourceExhaustedError(None, None, f"record at byte {offset} of {name} claims "
                                     f"{length} data bytes, past the limit of {max_bytes} "
                                     f"bytes for one tensor; check the file (or raise "
                                     f"ZMTF_MAX_OUTPUT_BYTES)")
    if size is not None and offset + _FRAME + length > size:
        raise DataLossError(None, None, f"truncated record at byte {offset} of {name}: it "
                            f"claims {length} data bytes, the file ends before them")
    missing = length + _FRAME - len(buffered)
    rest = stream.read(missing) if size is not None else _read_up_to(stream, missing)
    body = buffered[_HEADER.size:] + rest
    if len(body) < length + _FOOTER.size:
        raise DataLossError(None, None, f"truncated record at byte {offset} of {name}: "
                            f"{length} data bytes and a CRC needed, {len(body)} left")
    data = body[:length]
    if masked_crc32c(data) != _FOOTER.unpack_from(body, length)[0]:
        raise DataLossError(None, None, f"corrupted record at byte {offset} of {name}: "
                            f"the data's CRC does not match")
    return data


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
    for block in file_record_blocks(path, kind, max_bytes):
        yield from block


def file_record_blocks(path: str, kind: str, max_bytes: int | None = None
                       ) -> Iterator[list[bytes]]:
    """file_records' records a list at a time (see read_record_blocks)."""
    try:
        stream = open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(None, None, f"{path}; No such file or directory") from None
    with stream:
        size = None if kind else os.fstat(stream.fileno()).st_size
        yield from read_record_blocks(decompressed(stream, kind, path), path, size, max_bytes)


class TFRecordWriter:
    """``tf.python_io.TFRecordWriter``: ``write(record)`` appends one framed record; close it
    (or use ``with``) to flush. ``options`` (as for tf_record_iterator, or a TFRecordOptions
    with zlib's settings) compresses the file."""

    def __init__(self, path: str, options: object = None) -> None:
        self._deflate, self._flush_mode = compressor(options)
        self._path = path
        # small records wait here and are framed a batch at a time; a flush mode applied after
        # each record (a TFRecordOptions setting) needs them one at a time
        self._pending: list[bytes] | None = []
        self._batch = _BATCH if self._flush_mode == zlib.Z_NO_FLUSH else 1
        try:
            self._file: BinaryIO | None = open(path, "wb")
        except FileNotFoundError:
            raise NotFoundError(None, None, f"{path}; No such file or directory: its folder "
                                f"must exist") from None

    def write(self, record: bytes | str) -> None:
        if type(record) is not bytes or len(record) > _SMALL_RECORD:
            self._write_other(record)
            return
        pending = self._pending
        try:
            pending.append(record)   # type: ignore[union-attr]
        except AttributeError:
            raise ValueError(f"TFRecordWriter for {self._path} is closed") from None
        if len(pending) >= self._batch:   # type: ignore[arg-type]
            self._drain()

    def _write_other(self, record: object) -> None:
        """write() for a str, bytes-like or large record."""
        if self._pending is None:
            raise ValueError(f"TFRecordWriter for {self._path} is closed")
        if isinstance(record, str):
            record = record.encode("utf-8")
        if not isinstance(record, (bytes, bytearray, memoryview)):
            raise TypeError(f"TFRecordWriter.write takes bytes (e.g. example.SerializeToString()),"
                            f" got {type(record).__name__}")
        data = bytes(record)
        if len(data) <= _SMALL_RECORD:
            self.write(data)
            return
        self._drain()
        self._emit(encode_record(data))

    def _drain(self) -> None:
        """The waiting records framed onto the file."""
        if self._pending:
            framed = encode_records(self._pending)
            self._pending.clear()
            self._emit(framed)

    def _emit(self, framed: bytes) -> None:
        assert self._file is not None
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
            self._drain()
            if self._deflate is not None:
                self._file.write(self._deflate.flush(zlib.Z_SYNC_FLUSH))
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            try:
                self._drain()
                if self._deflate is not None:
                    self._file.write(self._deflate.flush())
            finally:
                self._file.close()
                self._file = None
                self._pending = None

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


__all__ = ["TFRecordWriter", "crc32c", "encode_record", "encode_records", "file_record_blocks",
           "file_records", "masked_crc32c", "read_record_blocks", "read_records",
           "tf_record_iterator"]

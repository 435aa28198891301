"""What each TF1 reader makes of one file: its records as (key, value) pairs, in order.

A format is ``records(filename) -> iterator of (key, value)`` (both ``bytes``), keyed as TF
keys them: TFRecordReader "<file>:<byte offset of the record>", TextLineReader
"<file>:<line number>" (1-based, skipped header lines counted), FixedLengthRecordReader
"<file>:<record index>", WholeFileReader the file name itself, IdentityReader the work item
(which is its value too, no file read). The file is opened on the first ``next``: a missing file raises
NotFoundError naming it, a damaged TFRecord DataLossError (formats/tfrecord.py). A TFRecord
reader's compression_type and a fixed-length reader's encoding ("ZLIB", "GZIP") decompress
the file first; keys then count in decompressed bytes, as TF's do.
"""

from __future__ import annotations

import os
from typing import BinaryIO, Callable, Iterator

from zmtf.framework.errors import (
    InvalidArgumentError, NotFoundError, OutOfRangeError, PermissionDeniedError,
)
from zmtf.formats.record_compression import KINDS, decompressed
from zmtf.formats.tfrecord import read_records
from zmtf.runtime.record_streams import bounded_lines, fixed_windows, record_limit

Record = tuple[bytes, bytes]
Format = Callable[[bytes], Iterator[Record]]


def open_file(filename: bytes) -> BinaryIO:
    """The file named by a queue's element, opened for reading; OS errors as TF's errors."""
    path = os.fsdecode(filename)
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise NotFoundError(None, None, f"{path}; No such file or directory") from None
    except PermissionError:
        raise PermissionDeniedError(None, None, f"{path}; Permission denied") from None
    except IsADirectoryError:
        raise InvalidArgumentError(None, None, f"{path} is a directory, not a file: give the "
                                   f"reader file names (tf.train.match_filenames_once or "
                                   f"glob them)") from None


def tfrecord_records(compression: str) -> Format:
    """Each checked record of a TFRecord file, keyed by its byte offset (in the decompressed
    bytes of a compressed file)."""

    def records(filename: bytes) -> Iterator[Record]:
        name = os.fsdecode(filename)
        with open_file(filename) as stream:
            size = None if compression else os.fstat(stream.fileno()).st_size
            offset = 0
            for data in read_records(decompressed(stream, compression, name), name, size,
                                     record_limit()):
                yield b"%s:%d" % (filename, offset), data
                offset += 16 + len(data)   # 8 length + 4 its CRC + data + 4 data CRC

    return records


def text_line_records(skip_header_lines: int) -> Format:
    """The lines of a text file without their "\\n" and a "\\r" before it, the first
    ``skip_header_lines`` of each file left out."""

    def records(filename: bytes) -> Iterator[Record]:
        with open_file(filename) as stream:
            lines = bounded_lines(stream, os.fsdecode(filename), record_limit())
            for number, line in enumerate(lines, start=1):
                if number <= skip_header_lines:
                    continue
                if line.endswith(b"\n"):
                    line = line[:-1]
                if line.endswith(b"\r"):   # as TF, also on a last line with no "\n"
                    line = line[:-1]
                yield b"%s:%d" % (filename, number), line

    return records


def fixed_length_records(record_bytes: int, header_bytes: int, footer_bytes: int,
                         hop_bytes: int, encoding: str = "") -> Format:
    """Records of ``record_bytes`` bytes starting every ``hop_bytes`` (0: every
    ``record_bytes``) between the header and the footer; a record that would run into the
    footer is left out, as TF leaves it. A file shorter than its header is OutOfRangeError,
    as in TF (the next read goes on with the next file). A compressed file (``encoding``)
    is decompressed as its records are cut, one record (and the footer) held at a time."""
    step = hop_bytes or record_bytes

    def records(filename: bytes) -> Iterator[Record]:
        name = os.fsdecode(filename)
        with open_file(filename) as raw:
            windows = fixed_windows(decompressed(raw, encoding, name), header_bytes,
                                    record_bytes, footer_bytes, step, name, record_limit())
            index = 0
            while True:
                try:
                    record = next(windows)
                except StopIteration as end:
                    size = end.value
                    break
                yield b"%s:%d" % (filename, index), record
                index += 1
            if size < header_bytes:
                raise OutOfRangeError(None, None, f"reached end of file: {name} has {size} "
                                      f"bytes, fewer than its {header_bytes} header bytes")

    return records


def whole_file_records(filename: bytes) -> Iterator[Record]:
    """One record: the whole file, keyed by its name."""
    with open_file(filename) as stream:
        contents = stream.read()
    yield filename, contents


def identity_records(work: bytes) -> Iterator[Record]:
    """One record: the work item itself as key and value (no file is opened)."""
    yield work, work


def _compression(attrs: dict, attr: str) -> str:
    """A reader's compression attribute, checked (a graph may come from anywhere)."""
    kind = attrs.get(attr) or ""
    kind = kind.decode("utf-8", "replace") if isinstance(kind, bytes) else kind
    if kind not in KINDS:
        raise InvalidArgumentError(f"reader '{attrs.get('_node_name', '')}': unsupported {attr} "
                                   f"{kind!r}: use '' (none), 'ZLIB' or 'GZIP'")
    return kind


def _size(attrs: dict, attr: str, least: int = 0) -> int:
    """A reader's int attribute, checked as TF's kernels check it (a graph may come from
    anywhere): an int of at least ``least``."""
    value = attrs.get(attr) or 0
    if type(value) is not int or value < least:
        raise InvalidArgumentError(f"reader '{attrs.get('_node_name', '')}': {attr} must be an "
                                   f"int >= {least} not {value!r}")
    return value


def format_for(op_type: str, attrs: dict) -> Format:
    """The format a reader op reads, its attributes checked."""
    if op_type == "TFRecordReaderV2":
        return tfrecord_records(_compression(attrs, "compression_type"))
    if op_type == "TextLineReaderV2":
        return text_line_records(_size(attrs, "skip_header_lines"))
    if op_type == "FixedLengthRecordReaderV2":
        return fixed_length_records(
            _size(attrs, "record_bytes", 1), _size(attrs, "header_bytes"),
            _size(attrs, "footer_bytes"), _size(attrs, "hop_bytes"),
            encoding=_compression(attrs, "encoding"))
    if op_type == "WholeFileReaderV2":
        return whole_file_records
    if op_type == "IdentityReaderV2":
        return identity_records
    raise InvalidArgumentError(f"no reader format for op type {op_type}")

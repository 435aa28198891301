"""The file sources of tf.data pipelines: TFRecordDataset (each record), TextLineDataset (each
line, without its line ending) and FixedLengthRecordDataset (fixed-size records between a
header and a footer). Files are read on the iterator's device when the pipeline reaches them.

A source's arrays are its file names (a string scalar or vector) and, when the dataset was
given one, its compression_type (a string scalar: "", "ZLIB" or "GZIP"; anything else is
InvalidArgumentError, as in TF). A compressed file is decompressed as its records are cut
(formats/record_compression.py, record_streams.py): a source holds one record at a time, and
one over the limit for a tensor is ResourceExhaustedError, so a decompression bomb costs no
more memory than a plain file.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import BinaryIO, Callable, Generator, Iterator

import numpy as np

from zmtf.framework.errors import DataLossError, InvalidArgumentError, NotFoundError
from zmtf.formats.record_compression import KINDS, NONE, decompressed
from zmtf.formats.tfrecord import file_record_blocks
from zmtf.runtime.record_streams import bounded_lines, fixed_windows, record_limit

Element = list[np.ndarray]


def _files(sources: list[np.ndarray], node: str, kind: str) -> tuple[list[str], str]:
    """The file names and the compression a file source reads them with."""
    names = sources[0] if len(sources) in (1, 2) else None
    if names is None or names.dtype != object or names.ndim > 1:
        raise InvalidArgumentError(f"iterator '{node}': {kind} takes a string scalar or vector "
                                   f"of filenames")
    compression = NONE
    if len(sources) == 2:
        given = sources[1]
        if given.dtype != object or given.ndim != 0:
            raise InvalidArgumentError(f"iterator '{node}': {kind}'s compression_type must be a "
                                       f"string scalar, got {given.dtype}{list(given.shape)}")
        compression = given.item().decode("utf-8", "replace")   # a 0-d object array: its bytes
        if compression not in KINDS:
            raise InvalidArgumentError(f"iterator '{node}': Unsupported compression_type "
                                       f"{compression!r} for {kind}: use '' (none), 'ZLIB' or "
                                       f"'GZIP'")
    return [n.decode("utf-8", "replace") for n in names.reshape(-1)], compression


@contextmanager
def _opened(path: str, node: str, compression: str) -> Iterator[BinaryIO]:
    """The file at ``path`` as a stream of its (decompressed) bytes."""
    try:
        with open(path, "rb") as f:
            yield decompressed(f, compression, f"{path} (iterator '{node}')")
    except FileNotFoundError:
        raise NotFoundError(f"{path}; No such file or directory (iterator '{node}')") from None
    except OSError as error:
        raise InvalidArgumentError(f"{path}: {error} (iterator '{node}')") from None


def _string(value: bytes) -> Element:
    out = np.empty((), dtype=object)
    out[()] = value
    return [out]


def _strings(records: Generator[bytes, None, int]) -> Generator[Element, None, int]:
    """Each record as a 0-d string; returns what ``records`` returns."""
    while True:
        try:
            record = next(records)
        except StopIteration as end:
            return end.value
        yield _string(record)


class RecordSource:
    """A source whose elements are single strings that also come a list at a time
    (``blocks()``): a batch stage right after it (dataset_iterator._batch) cuts its batches
    from those lists, with no 0-d array and no generator step per record — TF's speed for
    ``TFRecordDataset(...).batch(n)``. Called, it is the usual element source."""

    def __init__(self, blocks: Callable[[], Iterator[list[bytes]]]) -> None:
        self.blocks = blocks

    def __call__(self) -> Iterator[Element]:
        for block in self.blocks():
            for record in block:
                yield _string(record)


def tfrecords(sources: list[np.ndarray], node: str) -> RecordSource:
    """Each record of each file in order, as a 0-d string: a missing file is NotFoundError,
    a damaged record or compressed stream DataLossError, both naming the file."""
    paths, compression = _files(sources, node, "TFRecordDataset")

    def blocks() -> Iterator[list[bytes]]:
        for path in paths:
            yield from file_record_blocks(path, compression, record_limit())

    return RecordSource(blocks)


def text_lines(sources: list[np.ndarray], node: str) -> Callable[[], Iterator[Element]]:
    """Each line of each file in order, without its "\\n" or "\\r\\n" (a last line with no
    line ending is a line too)."""
    paths, compression = _files(sources, node, "TextLineDataset")

    def lines() -> Iterator[Element]:
        for path in paths:
            with _opened(path, node, compression) as stream:
                for line in bounded_lines(stream, f"{path} (iterator '{node}')", record_limit()):
                    if line.endswith(b"\n"):
                        line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
                    yield _string(line)

    return lines


def _sizes(sizes: tuple, node: str) -> tuple[int, int, int]:
    """record_bytes (>= 1), header_bytes and footer_bytes (>= 0), as a graph may send them."""
    if len(sizes) != 3 or not all(type(size) is int for size in sizes) or sizes[0] < 1 \
            or min(sizes) < 0:
        raise InvalidArgumentError(f"iterator '{node}': FixedLengthRecordDataset takes "
                                   f"record_bytes >= 1, header_bytes >= 0 and footer_bytes >= 0 "
                                   f"(three ints), got {list(sizes)!r}")
    return sizes[0], sizes[1], sizes[2]


def fixed_length_records(sources: list[np.ndarray], node: str,
                         *sizes: int) -> Callable[[], Iterator[Element]]:
    """The ``record_bytes``-long records of each file between its header and footer
    (``sizes``), whose length must be a multiple of record_bytes (InvalidArgumentError
    otherwise, DataLossError for a compressed file, as in TF)."""
    record_bytes, header_bytes, footer_bytes = _sizes(sizes, node)
    paths, compression = _files(sources, node, "FixedLengthRecordDataset")
    uneven = DataLossError if compression else InvalidArgumentError

    def records() -> Iterator[Element]:
        for path in paths:
            with _opened(path, node, compression) as stream:
                size = None if compression else os.fstat(stream.fileno()).st_size
                if size is not None:   # an uncompressed file is refused before any record
                    _check_body(path, size)
                size = yield from _strings(fixed_windows(
                    stream, header_bytes, record_bytes, footer_bytes, record_bytes,
                    f"{path} (iterator '{node}')", record_limit()))
            _check_body(path, size)

    def _check_body(path: str, size: int) -> None:
        body = max(0, size - header_bytes - footer_bytes)
        if body % record_bytes:
            raise uneven(
                f"Excluding the header ({header_bytes} bytes) and footer ({footer_bytes} "
                f"bytes), input file \"{path}\" has body length {body} bytes, which is "
                f"not an exact multiple of the record length ({record_bytes} bytes). "
                f"(iterator '{node}')")

    return records

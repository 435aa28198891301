"""TF1's readers: tf.TFRecordReader, tf.TextLineReader, tf.WholeFileReader,
tf.FixedLengthRecordReader, tf.IdentityReader.

A reader is one handle op (TFRecordReaderV2, ...) whose state, the file it is in and where,
lives on its device between steps (runtime/file_readers.py); ``read(queue)`` takes the
next record, taking the next file name from ``queue`` (string_input_producer's) when a file
is spent. The placer keeps a reader, its queue and the ops using them on one device.
"""

from __future__ import annotations

import uuid
from typing import Any

from zmtf.framework import dtypes as _dtypes
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.formats.record_compression import KINDS, TFRecordOptions
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

READER_OPS = ("TFRecordReaderV2", "TextLineReaderV2", "WholeFileReaderV2",
              "FixedLengthRecordReaderV2", "IdentityReaderV2")


@op_def(*READER_OPS, stateful=True)
def _reader_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(_dtypes.resource, TensorShape([]))]


@op_def("ReaderReadV2", stateful=True)
def _read_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(_dtypes.string, TensorShape([]))] * 2


@op_def("ReaderReadUpToV2", stateful=True)
def _read_up_to_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(_dtypes.string, TensorShape([None]))] * 2


@op_def("ReaderNumRecordsProducedV2", "ReaderNumWorkUnitsCompletedV2", stateful=True)
def _count_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(_dtypes.int64, TensorShape([]))]


@op_def("ReaderResetV2", stateful=True)
def _no_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


class ReaderBase:
    """What every reader offers: read, read_up_to, its counters and reset."""

    def __init__(self, reader_ref: Tensor, supports_serialize: bool = False) -> None:
        self._reader_ref = reader_ref
        self._supports_serialize = supports_serialize

    reader_ref = property(lambda self: self._reader_ref)
    supports_serialize = property(lambda self: self._supports_serialize)

    def read(self, queue: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
        """The next record as (key, value) string scalars; OutOfRangeError once ``queue`` is
        closed and empty and the last file is spent."""
        op = apply_op("ReaderReadV2", [self._reader_ref, _queue_ref(queue)], {},
                      name=name or "ReaderReadV2")
        return op.outputs[0], op.outputs[1]

    def read_up_to(self, queue: Any, num_records: Any,
                   name: str | None = None) -> tuple[Tensor, Tensor]:
        """Up to ``num_records`` records of the current file as ([n], [n]) strings: fewer
        at the end of a file, never a mix of two files."""
        count = convert_to_tensor(num_records, dtype=_dtypes.int64, name="num_records")
        op = apply_op("ReaderReadUpToV2", [self._reader_ref, _queue_ref(queue), count], {},
                      name=name or "ReaderReadUpToV2")
        return op.outputs[0], op.outputs[1]

    def num_records_produced(self, name: str | None = None) -> Tensor:
        return self._count("ReaderNumRecordsProducedV2", name)

    def num_work_units_completed(self, name: str | None = None) -> Tensor:
        """How many files this reader has read to their end."""
        return self._count("ReaderNumWorkUnitsCompletedV2", name)

    def reset(self, name: str | None = None) -> Operation:
        """Forget the current file and zero the counters."""
        return apply_op("ReaderResetV2", [self._reader_ref], {}, name=name or "ReaderResetV2")

    def serialize_state(self, name: str | None = None) -> Tensor:
        raise NotImplementedError("zmtf readers do not serialize their state; to resume, "
                                  "save which files are done and build the queue from the rest")

    def restore_state(self, state: Any, name: str | None = None) -> Operation:
        raise NotImplementedError("zmtf readers do not restore a serialized state; to resume, "
                                  "build the file-name queue from the files not yet read")

    def _count(self, op_type: str, name: str | None) -> Tensor:
        return apply_op(op_type, [self._reader_ref], {}, name=name or op_type).outputs[0]


class TFRecordReader(ReaderBase):
    """Records of TFRecord files, keyed "<file>:<byte offset>"; ``options`` (TFRecordOptions,
    a TFRecordCompressionType or "", "ZLIB", "GZIP") says how the files are compressed."""

    def __init__(self, name: str | None = None, options: Any = None) -> None:
        compression = TFRecordOptions.get_compression_type_string(options)
        super().__init__(_reader_op("TFRecordReaderV2", {"compression_type": compression}, name))


class TextLineReader(ReaderBase):
    """Lines of text files without their newline, keyed "<file>:<line number>" (1-based);
    ``skip_header_lines`` leaves out the first lines of every file."""

    def __init__(self, skip_header_lines: int | None = None, name: str | None = None) -> None:
        skip = int(skip_header_lines or 0)
        if skip < 0:
            raise ValueError(f"skip_header_lines must be >= 0, got {skip_header_lines}")
        super().__init__(_reader_op("TextLineReaderV2", {"skip_header_lines": skip}, name))


class WholeFileReader(ReaderBase):
    """One record per file: its whole contents, keyed by the file name."""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(_reader_op("WholeFileReaderV2", {}, name))


class IdentityReader(ReaderBase):
    """One record per work item of the queue, no file opened: the item is both key and
    value. (TF's can serialize its state; zmtf readers cannot.)"""

    def __init__(self, name: str | None = None) -> None:
        super().__init__(_reader_op("IdentityReaderV2", {}, name))


class FixedLengthRecordReader(ReaderBase):
    """Records of ``record_bytes`` bytes each (CIFAR-10's binary files), keyed
    "<file>:<record index>": after ``header_bytes``, before ``footer_bytes``, one every
    ``hop_bytes`` (0: back to back); a short last record is left out, as TF does."""

    def __init__(self, record_bytes: int, header_bytes: int | None = None,
                 footer_bytes: int | None = None, hop_bytes: int | None = None,
                 name: str | None = None, encoding: str | None = None) -> None:
        if (encoding or "") not in KINDS:   # TF would read the file as if uncompressed
            raise ValueError(f"FixedLengthRecordReader: encoding must be '' (none), 'ZLIB' or "
                             f"'GZIP', got {encoding!r}")
        sizes = {"record_bytes": record_bytes, "header_bytes": header_bytes or 0,
                 "footer_bytes": footer_bytes or 0, "hop_bytes": hop_bytes or 0}
        for attr, size in sizes.items():
            if int(size) < 0:
                raise InvalidArgumentError(None, None, f"{attr} must be >= 0 not {size}")
        if int(record_bytes) == 0:   # TF would then read empty records forever
            raise InvalidArgumentError(None, None, "record_bytes must be > 0: give the size "
                                       "of one record in bytes")
        attrs = {attr: int(size) for attr, size in sizes.items()}
        super().__init__(_reader_op("FixedLengthRecordReaderV2",
                                    {**attrs, "encoding": encoding or ""}, name))


def _reader_op(op_type: str, attrs: dict[str, Any], name: str | None) -> Tensor:
    # a fresh name per reader built: a rerun of a script on a long-running worker starts
    # its readers over (a reader is private to its graph, as TF's are)
    attrs = {**attrs, "shared_name": f"reader_{uuid.uuid4().hex}", "container": ""}
    with get_default_graph().control_dependencies(None):   # state, not part of a step
        return apply_op(op_type, [], attrs, name=name or op_type).outputs[0]


def _queue_ref(queue: Any) -> Tensor:
    """A queue object's handle (TF also takes the handle tensor itself)."""
    ref = queue if isinstance(queue, Tensor) else getattr(queue, "queue_ref", None)
    if not isinstance(ref, Tensor) or ref.dtype != _dtypes.resource:
        raise TypeError(f"a reader reads file names from a queue (tf.train.string_input_producer"
                        f"'s, or a tf.FIFOQueue of tf.string), got {type(queue).__name__}")
    return ref


__all__ = ["FixedLengthRecordReader", "IdentityReader", "ReaderBase", "TFRecordReader", "TextLineReader",
           "WholeFileReader"]

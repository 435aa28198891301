"""TensorBoard's Summary and Event protobufs and TFRecord framing, written by hand (pure:
bytes in, bytes out; no protobuf dependency). Used by the summary kernels and FileWriter.

Each ``*_summary`` function returns a serialized ``Summary`` holding one value; concatenated
Summaries parse as one Summary with every value (that is how MergeSummary merges).
"""

from __future__ import annotations

import struct

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.formats.graph_def_proto import TensorProto, enum_of_dtype, shape_proto
from zmtf.formats.proto_wire import field as _field
from zmtf.formats.proto_wire import length_delimited as _length_delimited
from zmtf.formats.proto_wire import varint as _varint
from zmtf.formats.tfrecord import crc32c, encode_record


def _double(number: int, value: float) -> bytes:
    """A proto3 double field; +0.0 is the default and is left out, as protobuf does."""
    packed = struct.pack("<d", value)
    return _field(number, 1, packed) if packed != bytes(8) else b""


def value_message(tag: str, body: bytes) -> bytes:
    """Summary.Value{tag: tag, <body>}, ``body`` being the value's other fields."""
    return _length_delimited(1, tag.encode()) + body


def _summary_value(tag: str, body: bytes) -> bytes:
    """Summary{value{tag: tag, <body>}}."""
    return _length_delimited(1, value_message(tag, body))


def simple_value_field(value: float) -> bytes:
    """Summary.Value's simple_value (field 2, a float)."""
    return _field(2, 5, struct.pack("<f", value))


def scalar_summary(tag: str, value: float) -> bytes:
    """Summary{value{tag: tag, simple_value: value}}."""
    return _summary_value(tag, simple_value_field(value))


def histogram_proto(value_min: float, value_max: float, num: float, value_sum: float,
                    sum_squares: float, bucket_limit: list[float], bucket: list[float]) -> bytes:
    """HistogramProto{min=1, max=2, num=3, sum=4, sum_squares=5, bucket_limit=6, bucket=7}; the
    two repeated doubles are packed."""
    return (_double(1, value_min) + _double(2, value_max) + _double(3, num) + _double(4, value_sum)
            + _double(5, sum_squares)
            + _length_delimited(6, struct.pack(f"<{len(bucket_limit)}d", *bucket_limit))
            + _length_delimited(7, struct.pack(f"<{len(bucket)}d", *bucket)))


def histogram_summary(tag: str, value_min: float, value_max: float, num: float, value_sum: float,
                      sum_squares: float, bucket_limit: list[float], bucket: list[float]) -> bytes:
    """Summary{value{tag, histo: HistogramProto}}."""
    histo = histogram_proto(value_min, value_max, num, value_sum, sum_squares, bucket_limit, bucket)
    return _summary_value(tag, _length_delimited(5, histo))


def image_proto(height: int, width: int, colorspace: int, encoded: bytes) -> bytes:
    """Summary.Image{height=1, width=2, colorspace=3, encoded_image_string=4}."""
    return (_field(1, 0, _varint(height)) + _field(2, 0, _varint(width))
            + _field(3, 0, _varint(colorspace)) + _length_delimited(4, encoded))


def image_summary(tag: str, height: int, width: int, colorspace: int, encoded: bytes) -> bytes:
    """Summary{value{tag, image: Summary.Image}}."""
    return _summary_value(tag, _length_delimited(4, image_proto(height, width, colorspace, encoded)))


_DT_STRING = 7


def text_summary(tag: str, strings: list[bytes], shape: list[int]) -> bytes:
    """Summary{value{tag, metadata{plugin_data{plugin_name: "text"}}, tensor: TensorProto{
    dtype: DT_STRING, tensor_shape{dim{size}...}, string_val...}}}: what TensorBoard's text
    plugin reads."""
    dims = b"".join(_length_delimited(2, _field(1, 0, _varint(size))) for size in shape)
    tensor = (_field(1, 0, _varint(_DT_STRING)) + _length_delimited(2, dims)
              + b"".join(_length_delimited(8, s) for s in strings))
    metadata = _length_delimited(1, _length_delimited(1, b"text"))
    return _summary_value(tag, _length_delimited(8, tensor) + _length_delimited(9, metadata))


def audio_summary(tag: str, sample_rate: float, num_channels: int, length_frames: int,
                  wav: bytes) -> bytes:
    """Summary{value{tag, audio: Summary.Audio{sample_rate=1 (float), num_channels=2,
    length_frames=3, encoded_audio_string=4, content_type=5 ("audio/wav")}}}; proto3 zeros are
    left out, as protobuf does."""
    audio = ((_field(1, 5, struct.pack("<f", sample_rate)) if sample_rate else b"")
             + (_field(2, 0, _varint(num_channels)) if num_channels else b"")
             + (_field(3, 0, _varint(length_frames)) if length_frames else b"")
             + _length_delimited(4, wav) + _length_delimited(5, b"audio/wav"))
    return _summary_value(tag, _length_delimited(6, audio))


def summary_metadata(display_name: str | None = None, description: str | None = None) -> bytes:
    """SummaryMetadata{display_name=2, summary_description=3} (no plugin data)."""
    return ((_length_delimited(2, display_name.encode()) if display_name else b"")
            + (_length_delimited(3, description.encode()) if description else b""))


def tensor_content_proto(array: np.ndarray) -> bytes:
    """A TensorProto with the value in ``tensor_content`` (TF's AsProtoTensorContent)."""
    proto = TensorProto(dtype=enum_of_dtype(as_dtype(array.dtype)),
                        tensor_shape=shape_proto(list(array.shape)))
    if array.size:
        proto.tensor_content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
    return proto.SerializeToString()


def tensor_summary(tag: str, tensor_proto: bytes, metadata: bytes) -> bytes:
    """Summary{value{tag, tensor: TensorProto, metadata: SummaryMetadata}}, metadata written
    even when empty, as TF's TensorSummaryV2 does."""
    return _summary_value(tag, _length_delimited(8, tensor_proto) + _length_delimited(9, metadata))


def session_log_proto(status: int, checkpoint_path: str = "", msg: str = "") -> bytes:
    """SessionLog{status=1 (START 1, STOP 2, CHECKPOINT 3), checkpoint_path=2, msg=3}."""
    return ((_field(1, 0, _varint(status)) if status else b"")
            + (_length_delimited(2, checkpoint_path.encode()) if checkpoint_path else b"")
            + (_length_delimited(3, msg.encode()) if msg else b""))


def encode_event(wall_time: float, step: int | None = None, summary: bytes | None = None,
                 file_version: str | None = None, session_log: bytes | None = None,
                 graph_def: bytes | None = None) -> bytes:
    """Event{wall_time=1, step=2, file_version=3, graph_def=4, summary=5, session_log=7}."""
    out = _field(1, 1, struct.pack("<d", wall_time))
    if step is not None:
        out += _field(2, 0, _varint(int(step)))
    if file_version is not None:
        out += _length_delimited(3, file_version.encode())
    if graph_def is not None:
        out += _length_delimited(4, graph_def)
    if summary is not None:
        out += _length_delimited(5, summary)
    if session_log is not None:
        out += _length_delimited(7, session_log)
    return out


# TFRecord framing has its home in tfrecord.py; event files use the same records.
record = encode_record

__all__ = ["audio_summary", "crc32c", "encode_event", "histogram_proto", "histogram_summary",
           "image_proto", "image_summary", "record", "scalar_summary", "session_log_proto", "simple_value_field",
           "summary_metadata", "tensor_summary", "text_summary", "value_message"]

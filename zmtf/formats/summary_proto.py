"""Serialized Summaries and Events for the summary kernels and FileWriter, built as
event_proto.py's protobuf messages (bytes out: the kernels return them as uint8 arrays).

Each ``*_summary`` function returns a serialized ``Summary`` holding one value; concatenated
Summaries parse as one Summary with every value (that is how MergeSummary merges).
"""

from __future__ import annotations

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.formats.event_proto import Event, HistogramProto, Summary, SummaryMetadata
from zmtf.formats.graph_def_proto import TensorProto, enum_of_dtype, shape_proto
from zmtf.formats.tfrecord import crc32c, encode_record


def _summary(value: Summary.Value) -> bytes:
    return Summary(value=[value]).SerializeToString()


def scalar_summary(tag: str, value: float) -> bytes:
    """Summary{value{tag: tag, simple_value: value}}."""
    return _summary(Summary.Value(tag=tag, simple_value=value))


def histogram_summary(tag: str, value_min: float, value_max: float, num: float, value_sum: float,
                      sum_squares: float, bucket_limit: list[float], bucket: list[float]) -> bytes:
    """Summary{value{tag, histo: HistogramProto}}."""
    return _summary(Summary.Value(tag=tag, histo=HistogramProto(
        min=value_min, max=value_max, num=num, sum=value_sum, sum_squares=sum_squares,
        bucket_limit=bucket_limit, bucket=bucket)))


def image_summary(tag: str, height: int, width: int, colorspace: int, encoded: bytes) -> bytes:
    """Summary{value{tag, image: Summary.Image}}."""
    return _summary(Summary.Value(tag=tag, image=Summary.Image(
        height=height, width=width, colorspace=colorspace, encoded_image_string=encoded)))


_DT_STRING = 7


def text_summary(tag: str, strings: list[bytes], shape: list[int]) -> bytes:
    """Summary{value{tag, metadata{plugin_data{plugin_name: "text"}}, tensor: TensorProto{
    dtype: DT_STRING, tensor_shape, string_val...}}}: what TensorBoard's text plugin reads."""
    tensor = TensorProto(dtype=_DT_STRING, tensor_shape=shape_proto(list(shape)),
                         string_val=strings)
    metadata = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name="text"))
    return _summary(Summary.Value(tag=tag, tensor=tensor, metadata=metadata))


def audio_summary(tag: str, sample_rate: float, num_channels: int, length_frames: int,
                  wav: bytes) -> bytes:
    """Summary{value{tag, audio: Summary.Audio{..., content_type "audio/wav"}}}."""
    return _summary(Summary.Value(tag=tag, audio=Summary.Audio(
        sample_rate=sample_rate, num_channels=num_channels, length_frames=length_frames,
        encoded_audio_string=wav, content_type="audio/wav")))


def summary_metadata(display_name: str | None = None, description: str | None = None) -> bytes:
    """A serialized SummaryMetadata{display_name, summary_description} (no plugin data)."""
    return SummaryMetadata(display_name=display_name or "",
                           summary_description=description or "").SerializeToString()


def tensor_content_proto(array: np.ndarray) -> bytes:
    """A TensorProto with the value in ``tensor_content`` (TF's AsProtoTensorContent)."""
    proto = TensorProto(dtype=enum_of_dtype(as_dtype(array.dtype)),
                        tensor_shape=shape_proto(list(array.shape)))
    if array.size:
        proto.tensor_content = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
    return proto.SerializeToString()


def tensor_summary(tag: str, tensor_proto: bytes, metadata: bytes) -> bytes:
    """Summary{value{tag, tensor: TensorProto, metadata: SummaryMetadata}}, metadata written
    even when empty, as TF's TensorSummaryV2 does. Both arrive serialized (op inputs):
    InvalidArgumentError if they are not those messages."""
    value = Summary.Value(tag=tag, tensor=TensorProto.FromString(tensor_proto))
    value.metadata.MergeFromString(metadata)
    value.metadata.SetInParent()
    return _summary(value)


def encode_event(wall_time: float, step: int | None = None, summary: bytes | None = None,
                 file_version: str | None = None, session_log: bytes | None = None,
                 graph_def: bytes | None = None) -> bytes:
    """A serialized Event; ``summary`` and ``session_log`` arrive serialized."""
    event = Event(wall_time=wall_time, step=int(step or 0))
    if file_version is not None:
        event.file_version = file_version
    if graph_def is not None:
        event.graph_def = graph_def
    if summary is not None:
        event.summary.MergeFromString(summary)
        event.summary.SetInParent()
    if session_log is not None:
        event.session_log.MergeFromString(session_log)
        event.session_log.SetInParent()
    return event.SerializeToString()


# TFRecord framing has its home in tfrecord.py; event files use the same records.
record = encode_record

__all__ = ["audio_summary", "crc32c", "encode_event", "histogram_summary",
           "image_summary", "record", "scalar_summary", "summary_metadata",
           "tensor_content_proto", "tensor_summary", "text_summary"]

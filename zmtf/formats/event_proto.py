"""TensorBoard's Event, Summary, SessionLog, HistogramProto and SummaryMetadata (TF's
event.proto, summary.proto and histogram.proto, same field numbers), as real protobuf
messages built from these tables by proto_message.py: what ``tf.train.summary_iterator``
yields, and what TF1 eval loops build by hand
(``tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.9)])``) and pass to
``FileWriter.add_summary``. Malformed bytes raise InvalidArgumentError naming the record.
"""

from __future__ import annotations

from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.graph_def_proto import TensorProto
from zmtf.formats.proto_message import Field, Message


class HistogramProto(Message):
    FIELDS = (Field(1, "min", "double"), Field(2, "max", "double"), Field(3, "num", "double"),
              Field(4, "sum", "double"), Field(5, "sum_squares", "double"),
              Field(6, "bucket_limit", "double", repeated=True),
              Field(7, "bucket", "double", repeated=True))


class SummaryMetadata(Message):
    """Which TensorBoard plugin reads a value (``plugin_data``), and its display strings."""

    class PluginData(Message):
        FIELDS = (Field(1, "plugin_name", "string"), Field(2, "content", "bytes"))

    FIELDS = (Field(1, "plugin_data", "message", message=PluginData),
              Field(2, "display_name", "string"), Field(3, "summary_description", "string"),
              Field(4, "data_class", "int32"))   # an enum TensorBoard sets; kept as its number


class Summary(Message):
    """``tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.9)])``."""

    class Image(Message):
        FIELDS = (Field(1, "height", "int32"), Field(2, "width", "int32"),
                  Field(3, "colorspace", "int32"), Field(4, "encoded_image_string", "bytes"))

    class Audio(Message):
        FIELDS = (Field(1, "sample_rate", "float"), Field(2, "num_channels", "int64"),
                  Field(3, "length_frames", "int64"), Field(4, "encoded_audio_string", "bytes"),
                  Field(5, "content_type", "string"))

    class Value(Message):
        # "Image", "Audio": Summary's own nested messages, named as protobuf scopes them
        FIELDS = (
            Field(1, "tag", "string"), Field(7, "node_name", "string"),
            Field(9, "metadata", "message", message=SummaryMetadata),
            Field(2, "simple_value", "float", oneof=True),
            Field(3, "obsolete_old_style_histogram", "bytes", oneof=True),
            Field(4, "image", "message", message="Image", oneof=True),
            Field(5, "histo", "message", message=HistogramProto, oneof=True),
            Field(6, "audio", "message", message="Audio", oneof=True),
            Field(8, "tensor", "message", message=TensorProto, oneof=True),
        )

    FIELDS = (Field(1, "value", "message", repeated=True, message=Value),)


class SessionLog(Message):
    """A START/STOP/CHECKPOINT marker in an event file (TensorBoard uses START to drop the
    events a restarted run rewrites)."""

    FIELDS = (Field(1, "status", "enum", names={0: "STATUS_UNSPECIFIED", 1: "START", 2: "STOP",
                                                3: "CHECKPOINT"}),
              Field(2, "checkpoint_path", "string"), Field(3, "msg", "string"))


class Event(Message):
    FIELDS = (
        Field(1, "wall_time", "double"), Field(2, "step", "int64"),
        Field(3, "file_version", "string", oneof="what"),
        Field(4, "graph_def", "bytes", oneof="what"),    # a serialized GraphDef
        Field(5, "summary", "message", message=Summary, oneof="what"),
        Field(6, "log_message", "bytes", oneof="what"),  # deprecated in TF: kept, not read
        Field(7, "session_log", "message", message=SessionLog, oneof="what"),
        Field(8, "tagged_run_metadata", "bytes", oneof="what"),   # kept, not read
        Field(9, "meta_graph_def", "bytes", oneof="what"),
    )


def parse_event(data: bytes, where: str = "Event") -> Event:
    """An Event from a record of an event file; InvalidArgumentError naming ``where``."""
    try:
        return Event.FromString(data)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(None, None, f"{where}: {exc.message}") from None


__all__ = ["Event", "HistogramProto", "SessionLog", "Summary", "SummaryMetadata", "parse_event"]

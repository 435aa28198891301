"""What ``tf.profiler.profile`` returns: TF's GraphNodeProto and MultiGraphNodeProto
(tfprof_output.proto, package ``tensorflow.tfprof``, TF's field numbers) as protobuf messages.

zmtf fills the fields it measures: parameters, float ops, execution times and run counts.
It records no allocations, so the memory fields (``requested_bytes``, ``peak_bytes``, ...)
are never set: proto3 scalars, they read 0 and are absent from the bytes, as in a TF profile
that tracked no memory.
"""

from __future__ import annotations

from zmtf.formats.graph_def_proto import TensorShapeProto
from zmtf.formats.proto_message import Field, Message

#: the per-node numbers zmtf fills; each also exists as ``total_<name>`` (node and accounted)
STAT_FIELDS = ("run_count", "exec_micros", "accelerator_exec_micros", "cpu_exec_micros",
               "parameters", "float_ops")
_TFPROF = "tensorflow.tfprof"


class TFProfTensorProto(Message):
    """A variable's value restored from a checkpoint (``tensor_value``): zmtf leaves it unset."""

    PACKAGE = _TFPROF
    FIELDS = (Field(1, "dtype", "enum"), Field(2, "value_double", "double", repeated=True),
              Field(3, "value_int64", "int64", repeated=True),
              Field(4, "value_str", "string", repeated=True))


class GraphNodeProto(Message):
    """One node of the scope or graph view; ``children`` are the displayed nodes under it."""

    PACKAGE = _TFPROF
    FIELDS = (Field(1, "name", "string"), Field(2, "exec_micros", "int64"),
              Field(3, "requested_bytes", "int64"), Field(4, "parameters", "int64"),
              Field(6, "total_exec_micros", "int64"), Field(7, "total_requested_bytes", "int64"),
              Field(8, "total_parameters", "int64"),
              Field(10, "devices", "string", repeated=True),
              Field(11, "shapes", "message", repeated=True, message=TensorShapeProto),
              Field(12, "children", "message", repeated=True, message="GraphNodeProto"),
              Field(13, "float_ops", "int64"), Field(14, "total_float_ops", "int64"),
              Field(15, "tensor_value", "message", message=TFProfTensorProto),
              Field(16, "input_shapes", "map", key="int32", message=TensorShapeProto),
              Field(17, "accelerator_exec_micros", "int64"), Field(18, "cpu_exec_micros", "int64"),
              Field(19, "total_accelerator_exec_micros", "int64"),
              Field(20, "total_cpu_exec_micros", "int64"), Field(21, "run_count", "int64"),
              Field(22, "total_run_count", "int64"), Field(23, "total_definition_count", "int64"),
              Field(24, "peak_bytes", "int64"), Field(25, "residual_bytes", "int64"),
              Field(26, "output_bytes", "int64"), Field(27, "total_peak_bytes", "int64"),
              Field(28, "total_residual_bytes", "int64"), Field(29, "total_output_bytes", "int64"))


class MultiGraphNodeProto(Message):
    """One op type of the op view; ``graph_nodes`` are its graph nodes, ``children`` holds
    the next op type in display order (TF's op view is a chain, each total counting the rest)."""

    PACKAGE = _TFPROF
    FIELDS = (Field(1, "name", "string"), Field(2, "exec_micros", "int64"),
              Field(3, "requested_bytes", "int64"), Field(4, "parameters", "int64"),
              Field(5, "float_ops", "int64"), Field(6, "total_exec_micros", "int64"),
              Field(7, "total_requested_bytes", "int64"), Field(8, "total_parameters", "int64"),
              Field(9, "total_float_ops", "int64"),
              Field(10, "graph_nodes", "message", repeated=True, message=GraphNodeProto),
              Field(11, "children", "message", repeated=True, message="MultiGraphNodeProto"),
              Field(12, "accelerator_exec_micros", "int64"), Field(13, "cpu_exec_micros", "int64"),
              Field(14, "total_accelerator_exec_micros", "int64"),
              Field(15, "total_cpu_exec_micros", "int64"), Field(16, "peak_bytes", "int64"),
              Field(17, "residual_bytes", "int64"), Field(18, "output_bytes", "int64"),
              Field(19, "total_peak_bytes", "int64"), Field(20, "total_residual_bytes", "int64"),
              Field(21, "total_output_bytes", "int64"))

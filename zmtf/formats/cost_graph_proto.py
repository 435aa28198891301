"""RunMetadata.cost_graph: TF's CostGraphDef (cost_graph.proto), TF's field numbers.

TF fills it when ``GraphOptions.build_cost_model`` asks for a cost model; zmtf builds no cost
model, so a run leaves it unset. The message exists so a RunMetadata carrying one (from TF)
parses, round trips and reads as on TF's classes.
"""

from __future__ import annotations

from zmtf.formats.graph_def_proto import TensorShapeProto
from zmtf.formats.proto_message import Field, Message


class CostGraphDef(Message):
    class Node(Message):
        class InputInfo(Message):
            FIELDS = (Field(1, "preceding_node", "int32"), Field(2, "preceding_port", "int32"))

        class OutputInfo(Message):
            FIELDS = (Field(1, "size", "int64"), Field(2, "alias_input_port", "int64"),
                      Field(3, "shape", "message", message=TensorShapeProto),
                      Field(4, "dtype", "enum"))

        FIELDS = (Field(1, "name", "string"), Field(2, "device", "string"),
                  Field(3, "id", "int32"),
                  Field(4, "input_info", "message", repeated=True, message=InputInfo),
                  Field(5, "output_info", "message", repeated=True, message=OutputInfo),
                  Field(6, "temporary_memory_size", "int64"), Field(7, "is_final", "bool"),
                  Field(8, "control_input", "int32", repeated=True),
                  Field(9, "compute_cost", "int64"), Field(10, "host_temp_memory_size", "int64"),
                  Field(11, "device_temp_memory_size", "int64"),
                  Field(12, "persistent_memory_size", "int64"), Field(14, "compute_time", "int64"),
                  Field(15, "memory_time", "int64"),
                  Field(16, "device_persistent_memory_size", "int64"),
                  Field(17, "inaccurate", "bool"))

    class AggregatedCost(Message):
        FIELDS = (Field(1, "cost", "float"), Field(2, "dimension", "string"))

    FIELDS = (Field(1, "node", "message", repeated=True, message=Node),
              Field(2, "cost", "message", repeated=True, message=AggregatedCost))

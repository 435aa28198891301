"""TensorFlow's SavedModel protobuf messages (saved_model.proto, meta_graph.proto, saver.proto,
variable.proto), with TF's field numbers and names, on the codec of proto_message.py.

So ``saved_model.pb`` files written by TensorFlow parse here and TF parses the bytes zmtf
writes. What zmtf does not interpret is kept as raw bytes (``stripped_op_list``, ``any_info``,
``object_graph_def``, a composite TensorInfo), so it is neither lost on a round trip nor
trusted. ``MetaInfoDef.function_aliases`` (a map of strings) is skipped when read.
"""

from __future__ import annotations

from zmtf.formats.graph_def_proto import GraphDef, TensorProto, TensorShapeProto
from zmtf.formats.proto_message import Field, Message

#: SaverDef.CheckpointFormatVersion
CHECKPOINT_VERSION_NAMES = {0: "LEGACY", 1: "V1", 2: "V2"}


class SaverDef(Message):
    """How to save and restore a graph's variables, by the names of its tensors and ops."""

    LEGACY, V1, V2 = 0, 1, 2
    FIELDS = (
        Field(1, "filename_tensor_name", "string"), Field(2, "save_tensor_name", "string"),
        Field(3, "restore_op_name", "string"), Field(4, "max_to_keep", "int32"),
        Field(5, "sharded", "bool"), Field(6, "keep_checkpoint_every_n_hours", "float"),
        Field(7, "version", "enum", names=CHECKPOINT_VERSION_NAMES),
    )


class SaveSliceInfoDef(Message):
    FIELDS = (Field(1, "full_name", "string"), Field(2, "full_shape", "int64", repeated=True),
              Field(3, "var_offset", "int64", repeated=True),
              Field(4, "var_shape", "int64", repeated=True))


class VariableDef(Message):
    """One variable of a "variables" collection (TF's VariableDef)."""

    FIELDS = (
        Field(1, "variable_name", "string"), Field(2, "initializer_name", "string"),
        Field(3, "snapshot_name", "string"),
        Field(4, "save_slice_info_def", "message", message=SaveSliceInfoDef),
        Field(5, "is_resource", "bool"), Field(6, "initial_value_name", "string"),
        Field(7, "trainable", "bool"), Field(8, "synchronization", "enum", names={}),
        Field(9, "aggregation", "enum", names={}),
    )


class Any_(Message):
    """google.protobuf.Any: a type URL and the packed message's bytes."""

    FIELDS = (Field(1, "type_url", "string"), Field(2, "value", "bytes"))


class CollectionDef(Message):
    """One graph collection: a list of node names, bytes, ints, floats or Anys (a oneof)."""

    class NodeList(Message):
        FIELDS = (Field(1, "value", "string", repeated=True),)

    class BytesList(Message):
        FIELDS = (Field(1, "value", "bytes", repeated=True),)

    class Int64List(Message):
        FIELDS = (Field(1, "value", "int64", repeated=True),)

    class FloatList(Message):
        FIELDS = (Field(1, "value", "float", repeated=True),)

    class AnyList(Message):
        FIELDS = (Field(1, "value", "message", repeated=True, message=Any_),)

    FIELDS = (
        Field(1, "node_list", "message", message=NodeList, oneof="kind"),
        Field(2, "bytes_list", "message", message=BytesList, oneof="kind"),
        Field(3, "int64_list", "message", message=Int64List, oneof="kind"),
        Field(4, "float_list", "message", message=FloatList, oneof="kind"),
        Field(5, "any_list", "message", message=AnyList, oneof="kind"),
    )


class TensorInfo(Message):
    """A signature's tensor: its name (or a sparse tensor's three names), dtype and shape."""

    class CooSparse(Message):
        FIELDS = (Field(1, "values_tensor_name", "string"),
                  Field(2, "indices_tensor_name", "string"),
                  Field(3, "dense_shape_tensor_name", "string"))

    FIELDS = (
        Field(1, "name", "string", oneof="encoding"), Field(2, "dtype", "enum"),
        Field(3, "tensor_shape", "message", message=TensorShapeProto),
        Field(4, "coo_sparse", "message", message=CooSparse, oneof="encoding"),
        Field(5, "composite_tensor", "bytes", oneof="encoding"),   # kept as bytes: not interpreted
    )


class SignatureDef(Message):
    """A serving signature: named input and output TensorInfos and a method name."""

    FIELDS = (
        Field(1, "inputs", "map", message=TensorInfo),
        Field(2, "outputs", "map", message=TensorInfo),
        Field(3, "method_name", "string"),
        Field(4, "defaults", "map", message=TensorProto),
    )


class AssetFileDef(Message):
    FIELDS = (Field(1, "tensor_info", "message", message=TensorInfo),
              Field(2, "filename", "string"))


class MetaInfoDef(Message):
    FIELDS = (
        Field(1, "meta_graph_version", "string"),
        Field(2, "stripped_op_list", "bytes"),       # an OpList: zmtf has no OpDef messages
        Field(3, "any_info", "bytes"),
        Field(4, "tags", "string", repeated=True),
        Field(5, "tensorflow_version", "string"), Field(6, "tensorflow_git_version", "string"),
        Field(7, "stripped_default_attrs", "bool"),
    )


class MetaGraphDef(Message):
    """A graph with what it takes to use it: tags, saver, collections and signatures."""

    FIELDS = (
        Field(1, "meta_info_def", "message", message=MetaInfoDef),
        Field(2, "graph_def", "message", message=GraphDef),
        Field(3, "saver_def", "message", message=SaverDef),
        Field(4, "collection_def", "map", message=CollectionDef),
        Field(5, "signature_def", "map", message=SignatureDef),
        Field(6, "asset_file_def", "message", repeated=True, message=AssetFileDef),
        Field(7, "object_graph_def", "bytes"),     # TF2 object graphs: kept, not interpreted
    )


class SavedModel(Message):
    """The contents of ``saved_model.pb``: a schema version and one MetaGraphDef per tag set."""

    FIELDS = (Field(1, "saved_model_schema_version", "int64"),
              Field(2, "meta_graphs", "message", repeated=True, message=MetaGraphDef))


__all__ = ["AssetFileDef", "CollectionDef", "MetaGraphDef", "MetaInfoDef", "SaveSliceInfoDef",
           "SavedModel", "SaverDef", "SignatureDef", "TensorInfo", "VariableDef"]

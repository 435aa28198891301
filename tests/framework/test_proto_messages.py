"""zmtf's protobuf messages are the protobuf library's: built from zmtf's schema tables, with
TF's names and field numbers, so TF's own generated classes (here TensorBoard's copies of
TF's .proto files) and zmtf's read each other's bytes and text."""

from __future__ import annotations

import pickle

import pytest
from google.protobuf import text_format
from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtobufMessage
from tensorboard.compat.proto import cluster_pb2, graph_pb2, summary_pb2

import zmtf as tf
from zmtf.formats.proto_message import merge_text, to_text


def small_graph_def():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        tf.identity(x * tf.constant([[1.5, -2.0]]), name="y")
    return graph.as_graph_def()


def test_schema_declarations_are_library_messages_with_tfs_full_names():
    graph_def = tf.GraphDef()
    assert isinstance(graph_def, ProtobufMessage) and isinstance(graph_def, tf.GraphDef)
    assert graph_def.DESCRIPTOR.full_name == "tensorflow.GraphDef"
    assert tf.TensorShapeProto.Dim.DESCRIPTOR.full_name == "tensorflow.TensorShapeProto.Dim"
    assert tf.Summary.Value.DESCRIPTOR.fields_by_name["image"].message_type.full_name == \
        "tensorflow.Summary.Image"


def test_misspelled_fields_fail_as_protobuf_fails_them():
    node = tf.NodeDef()
    with pytest.raises(AttributeError):
        node.nmae = "x"
    with pytest.raises(ValueError, match='has no "inputs" field'):
        tf.NodeDef(inputs=["a"])


def test_zmtf_bytes_and_text_are_tfs_and_back():
    ours = small_graph_def()
    theirs = graph_pb2.GraphDef.FromString(ours.SerializeToString())
    assert [n.name for n in theirs.node] == [n.name for n in ours.node]
    assert theirs.SerializeToString(deterministic=True) == ours.SerializeToString()
    assert text_format.MessageToString(theirs) == to_text(ours)
    assert tf.GraphDef.FromString(theirs.SerializeToString()) == ours
    assert merge_text(text_format.MessageToString(theirs), tf.GraphDef()) == ours


def test_fields_zmtf_lacks_survive_a_round_trip():
    theirs = graph_pb2.GraphDef()
    node = theirs.node.add(name="n", op="NoOp")
    node.experimental_type.type_id = 3        # NodeDef field 7: not in zmtf's schema
    ours = tf.GraphDef.FromString(theirs.SerializeToString())
    assert ours.node[0].name == "n"
    assert graph_pb2.GraphDef.FromString(ours.SerializeToString()) == theirs


def test_has_field_copy_from_merge_from_and_oneofs():
    value = tf.AttrValue()
    assert not value.HasField("shape") and value.WhichOneof("value") is None
    value.shape.dim.add(size=3)
    assert value.HasField("shape") and value.WhichOneof("value") == "shape"
    copy = tf.AttrValue()
    copy.CopyFrom(value)
    copy.MergeFrom(tf.AttrValue(shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=4)])))
    assert [d.size for d in copy.shape.dim] == [3, 4]
    copy.i = 7   # setting another member of the oneof clears the first
    assert copy.WhichOneof("value") == "i" and not copy.HasField("shape")


def test_cluster_def_and_summary_bytes_match_tfs_classes():
    spec = tf.train.ClusterSpec({"ps": ["h:1"], "worker": {0: "w:1", 3: "w:3"}})
    theirs = cluster_pb2.ClusterDef.FromString(spec.as_cluster_def().SerializeToString())
    assert {j.name: dict(j.tasks) for j in theirs.job} == {"ps": {0: "h:1"},
                                                             "worker": {0: "w:1", 3: "w:3"}}
    summary = tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.5)])
    assert summary_pb2.Summary.FromString(summary.SerializeToString()).value[0].simple_value == 0.5


@pytest.mark.parametrize("data", [b"\x0a\x05", b"\x0a\x02\x0a\xff", b"\xff" * 11, b"\x0b"])
def test_malformed_bytes_are_a_typed_error_naming_the_message(data):
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid GraphDef") as caught:
        tf.GraphDef.FromString(data)
    assert isinstance(caught.value, DecodeError)   # what protobuf code catches, too
    with pytest.raises(tf.errors.InvalidArgumentError, match="GraphDef"):
        tf.GraphDef().ParseFromString(data)
    with pytest.raises(TypeError, match="takes bytes"):
        tf.GraphDef().ParseFromString("text")


def test_malformed_text_is_a_typed_error_naming_the_message():
    with pytest.raises(tf.errors.InvalidArgumentError, match="GraphDef: cannot parse"):
        merge_text('node { name: "a" colour: 3 }', tf.GraphDef())
    with pytest.raises(tf.errors.InvalidArgumentError, match="GraphDef: cannot parse"):
        merge_text("node {" * 100_000, tf.GraphDef())


def test_serialization_is_deterministic_and_messages_pickle():
    one, two = tf.NodeDef(name="n"), tf.NodeDef(name="n")
    for key in ("b", "a", "c"):
        one.attr[key].i = 1
    for key in ("c", "a", "b"):
        two.attr[key].i = 1
    assert one.SerializeToString() == two.SerializeToString()
    dim = tf.TensorShapeProto.Dim(size=5)
    assert pickle.loads(pickle.dumps(dim)) == dim
    assert pickle.loads(pickle.dumps(one)) == one

"""TF's GraphDef in zmtf: the protobuf codec, as_graph_def, import_graph_def, graph_util, and
interop with frozen graphs TF 2.21 wrote (graph_def_fixtures/, made by its generate.py)."""

import os
import random

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.errors import InvalidArgumentError, NotFoundError
from zmtf.formats.proto_message import merge_text, to_text
from zmtf.testing import run_fetches as run

FIXTURES = os.path.join(os.path.dirname(__file__), "graph_def_fixtures")


def load(name):
    graph_def = tf.GraphDef()
    with tf.gfile.GFile(os.path.join(FIXTURES, name), "rb") as f:
        graph_def.ParseFromString(f.read())
    return graph_def


# ---- codec --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [
    np.float32(2.5), np.arange(6, dtype=np.float32).reshape(2, 3), np.array([1, -2], np.int8),
    np.array([2**40, -1], np.int64), np.array([True, False]), np.array([1.5, -2], np.float16),
    np.array(7, np.uint16), np.array([3], np.uint64), np.array([[1.25]], np.float64),
    np.array([b"a", b"\x00\xff"], dtype=object), np.zeros((0, 3), np.float32),
])
def test_tensor_proto_round_trips_through_bytes_and_text(value):
    proto = tf.make_tensor_proto(value)
    again = tf.TensorProto.FromString(proto.SerializeToString())
    from_text = merge_text(to_text(proto), tf.TensorProto())
    for p in (again, from_text):
        out = tf.make_ndarray(p)
        assert out.dtype == np.asarray(value).dtype and out.shape == np.shape(value)
        assert out.tolist() == np.asarray(value).tolist()


def test_a_single_value_fills_the_shape_and_a_wrong_count_is_refused():
    proto = tf.TensorProto(dtype=1, tensor_shape=tf.TensorShapeProto(
        dim=[tf.TensorShapeProto.Dim(size=2), tf.TensorShapeProto.Dim(size=2)]))
    proto.float_val.append(0.5)
    assert tf.make_ndarray(proto).tolist() == [[0.5, 0.5], [0.5, 0.5]]
    proto.float_val.extend([1.0, 2.0])
    with pytest.raises(InvalidArgumentError, match="3 values for a tensor of shape"):
        tf.make_ndarray(proto)
    empty = tf.TensorProto(dtype=3, tensor_shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=3)]))
    assert tf.make_ndarray(empty).tolist() == [0, 0, 0]


def test_fill_bombs_and_bad_content_sizes_are_refused_before_allocating():
    bomb = tf.TensorProto(dtype=1, tensor_shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=10**12)]))
    bomb.float_val.append(1.0)
    with pytest.raises(InvalidArgumentError, match="over zmtf's"):
        tf.make_ndarray(bomb)
    short = tf.TensorProto(dtype=1, tensor_shape=tf.TensorShapeProto(dim=[tf.TensorShapeProto.Dim(size=2)]),
                           tensor_content=b"\x00" * 7)
    with pytest.raises(InvalidArgumentError, match="tensor_content has 7 bytes"):
        tf.make_ndarray(short)


def test_text_format_is_tfs():
    node = tf.NodeDef(name="c", op="Const")
    node.attr["dtype"].type = 1
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(np.float32(1.0)))
    assert to_text(node) == (
        'name: "c"\nop: "Const"\nattr {\n  key: "dtype"\n  value {\n    type: DT_FLOAT\n  }\n}\n'
        'attr {\n  key: "value"\n  value {\n    tensor {\n      dtype: DT_FLOAT\n'
        '      tensor_shape {\n      }\n      float_val: 1.0\n    }\n  }\n}\n')
    assert merge_text(to_text(node), tf.NodeDef()) == node


def test_attr_value_oneof_keeps_a_zero_value():
    value = tf.AttrValue(i=0)
    assert value.WhichOneof("value") == "i"
    assert tf.AttrValue.FromString(value.SerializeToString()).WhichOneof("value") == "i"


def test_tf_frozen_files_parse_and_serialize_back_to_the_same_message():
    for name in ("mlp.pb", "conv.pb"):
        graph_def = load(name)
        assert graph_def.versions.producer > 0
        again = tf.GraphDef.FromString(graph_def.SerializeToString())
        assert again == graph_def
        graph_def.DiscardUnknownFields()   # fields zmtf's schema lacks: kept in binary, not text
        assert merge_text(to_text(graph_def), tf.GraphDef()) == graph_def


@pytest.mark.parametrize("seed", range(6))
def test_fuzzed_bytes_raise_typed_errors_only(seed):
    rng = random.Random(seed)
    data = bytearray(load("conv.pb").SerializeToString())
    refused = 0
    for _ in range(60):
        cut = bytes(data[:rng.randrange(len(data))])
        flipped = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
        for sample in (cut, bytes(flipped), bytes(rng.randrange(256) for _ in range(40))):
            graph_def = tf.GraphDef()
            try:
                graph_def.ParseFromString(sample)
            except InvalidArgumentError:
                refused += 1
                continue
            with tf.Graph().as_default():
                try:
                    tf.import_graph_def(graph_def)
                except (ValueError, TypeError, InvalidArgumentError, NotFoundError):
                    refused += 1
    assert refused > 0   # any other exception would have failed the test above


# ---- TF's frozen graphs in zmtf -------------------------------------------------------------------
@pytest.mark.parametrize("name,inputs,outputs", [
    ("mlp", ["x"], ["probs", "label", "energy"]),
    ("conv", ["img"], ["logp", "out_t", "shape_f", "padded", "picked"]),
])
def test_zmtf_runs_tfs_frozen_graphs_to_tfs_outputs(name, inputs, outputs):
    expected = np.load(os.path.join(FIXTURES, "expected.npz"))
    tensors = tf.import_graph_def(load(f"{name}.pb"), return_elements=[o + ":0" for o in outputs])
    assert [t.name for t in tensors] == [f"import/{o}:0" for o in outputs]
    feed = {f"import/{k}:0": expected[f"{name}/in/{k}"] for k in inputs}
    for tensor, value in zip(tensors, run(tensors, feed)):
        want = expected[f"{name}/out/{tensor.op.name[7:]}"]
        assert value.dtype == want.dtype and value.shape == want.shape
        np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-6)


def test_input_map_and_scopes_as_tf():
    expected = np.load(os.path.join(FIXTURES, "expected.npz"))
    x = tf.placeholder(tf.float32, [None, 6], name="features")
    graph_def = load("mlp.pb")
    (probs,) = tf.import_graph_def(graph_def, input_map={"x": x}, return_elements=["probs:0"])
    (op,) = tf.import_graph_def(graph_def, return_elements=["probs"], name="net")
    (again,) = tf.import_graph_def(graph_def, return_elements=["probs"], name="net")
    assert (op.name, again.name) == ("net/probs", "net_1/probs")
    value = run(probs, {x: expected["mlp/in/x"]})
    np.testing.assert_allclose(value, expected["mlp/out/probs"], rtol=1e-5)


# ---- zmtf graphs as GraphDefs ----------------------------------------------------------------------
def build_model():
    x = tf.placeholder(tf.float32, [None, 4], name="x")
    with tf.device("/cpu:0"):
        w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 10, name="w")
    b = tf.Variable(tf.ones([3]), name="b")
    h = tf.nn.relu(tf.matmul(x, w, transpose_b=False) + b)
    m = tf.reduce_mean(h, axis=1, keepdims=True, name="m")
    s = tf.identity(h[:, ::-1][..., tf.newaxis, 0] * m, name="s")
    c = tf.cond(tf.reduce_sum(x) > 0, lambda: s + 1.0, lambda: s * 2.0, name="c")
    y = tf.concat([tf.nn.softmax(h), c, tf.one_hot(tf.argmax(h, 1), 2)], axis=1, name="y")
    return x, y


def test_exported_nodes_have_tfs_structure():
    build_model()
    graph_def = tf.get_default_graph().as_graph_def()
    nodes = {n.name: n for n in graph_def.node}
    assert nodes["w"].op == "VariableV2" and nodes["w"].device == "/device:CPU:0"
    assert nodes["w"].attr["shape"].shape.dim[1].size == 3
    assert nodes["MatMul"].attr["T"].type == 1 and nodes["MatMul"].input[:] == ["x", "w/read"]
    assert nodes["m"].op == "Mean" and nodes["m"].input[1] == "m/reduction_indices"
    assert tf.make_ndarray(nodes["m/reduction_indices"].attr["value"].tensor).tolist() == [1]
    slice_op = next(n for n in graph_def.node if n.op == "StridedSlice")
    assert len(slice_op.input) == 4 and slice_op.attr["begin_mask"].i == 3   # h[:, ::-1]
    assert slice_op.attr["end_mask"].i == 3
    merge = nodes["c/Merge"]
    assert merge.attr["N"].i == 2 and any(":1" in ref for n in graph_def.node for ref in n.input)
    assert nodes["y"].op == "ConcatV2" and nodes["y"].input[-1] == "y/axis"


def test_zmtf_graph_def_zmtf_runs_identically_and_exports_the_same_graph_def():
    x, y = build_model()
    tf.global_variables_initializer()
    graph_def = tf.get_default_graph().as_graph_def(add_shapes=True)
    feed = np.array([[1, -2, 3, 0.5], [-1, -1, -1, -1]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(y, {x: feed})
    with tf.Graph().as_default() as graph:
        tf.import_graph_def(graph_def, name="")
        assert graph.as_graph_def(add_shapes=True) == graph_def
        with tf.Session() as sess:
            sess.run("init")
            got = sess.run("y:0", {"x:0": feed})
    np.testing.assert_array_equal(got, want)


def test_freeze_then_import_gives_the_same_outputs_without_variables(tmp_path):
    x, y = build_model()
    feed = np.array([[1, 2, 3, 4]], np.float32)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        want = sess.run(y, {x: feed})
        frozen = tf.graph_util.convert_variables_to_constants(sess, sess.graph.as_graph_def(), ["y"])
    ops = {n.op for n in frozen.node}
    assert "VariableV2" not in ops and "Assign" not in ops and "RandomStandardNormal" not in ops
    assert tf.make_ndarray(next(n for n in frozen.node if n.name == "w").attr["value"].tensor)[1, 2] == \
        pytest.approx(0.5)
    path = tf.train.write_graph(frozen, str(tmp_path), "frozen.pb", as_text=False)
    text = tf.train.write_graph(frozen, str(tmp_path), "frozen.pbtxt")
    with open(text) as f:
        assert merge_text(f.read(), tf.GraphDef()) == frozen
    with tf.Graph().as_default():
        graph_def = tf.GraphDef()
        with open(path, "rb") as f:
            graph_def.ParseFromString(f.read())
        (out,) = tf.import_graph_def(graph_def, return_elements=["y:0"], name="")
        np.testing.assert_array_equal(run(out, {"x:0": feed}), want)


def test_blacklisted_variables_stay_variables():
    build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        frozen = tf.graph_util.convert_variables_to_constants(
            sess, sess.graph.as_graph_def(), ["y"], variable_names_blacklist=["b"])
    assert {n.name: n.op for n in frozen.node}["b"] == "VariableV2"


def test_extract_sub_graph_and_remove_training_nodes():
    x = tf.placeholder(tf.float32, [2], name="x")
    a = tf.identity(x * 2.0, name="a")
    tf.identity(a + 1.0, name="b")
    tf.negative(x, name="unused")
    graph_def = tf.get_default_graph().as_graph_def()
    sub = tf.graph_util.extract_sub_graph(graph_def, ["b"])
    assert [n.name for n in sub.node] == ["x", "mul/y", "mul", "a", "add/y", "add", "b"]
    with pytest.raises(AssertionError, match="nope is not in graph"):
        tf.graph_util.extract_sub_graph(graph_def, ["nope"])
    with pytest.raises(TypeError):
        tf.graph_util.extract_sub_graph(graph_def, "b")
    slim = tf.graph_util.remove_training_nodes(sub, protected_nodes=["b"])
    assert "a" not in {n.name for n in slim.node}
    assert next(n for n in slim.node if n.name == "add").input[0] == "mul"


def test_write_graph_of_a_graph_to_pb_writes_a_graph_def(tmp_path):
    tf.constant([1.0, 2.0], name="c")
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path), "g.pb", as_text=False)
    with open(path, "rb") as f:
        assert [n.name for n in tf.GraphDef.FromString(f.read()).node] == ["c"]


# ---- import errors ------------------------------------------------------------------------------------
def node(name, op, inputs=(), **attrs):
    n = tf.NodeDef(name=name, op=op)
    n.input.extend(inputs)
    for key, value in attrs.items():
        n.attr[key].CopyFrom(value)
    return n


F32 = tf.AttrValue(type=1)


def graph_of(*nodes):
    return tf.GraphDef(node=list(nodes))


@pytest.mark.parametrize("graph_def,error,match", [
    (graph_of(node("a", "Foo")), NotFoundError, "Op type not registered 'Foo'.*node 'a'"),
    (graph_of(node("a", "Placeholder", dtype=F32), node("b", "Identity", ["zz"], T=F32)),
     ValueError, "Node 'b': Unknown input node 'zz'"),
    (graph_of(node("a", "Placeholder", dtype=F32), node("b", "Identity", ["a"], T=tf.AttrValue(type=3))),
     ValueError, "Input 0 of node import/b was passed float from import/a:0 incompatible with expected int32"),
    (graph_of(node("a", "Placeholder", dtype=F32), node("b", "Identity", ["a"], T=F32, bogus=F32)),
     ValueError, "node 'b' \\(Identity\\): attr 'bogus' is not one zmtf knows"),
    (graph_of(node("a", "Placeholder", dtype=F32), node("a", "Placeholder", dtype=F32)),
     ValueError, "Node 'a' is not unique"),
    (graph_of(node("b", "Identity", ["b"], T=F32)), ValueError, "1 nodes in a cycle"),
    (graph_of(node("a", "Placeholder", dtype=F32), node("b", "Identity", ["a:3"], T=F32)),
     ValueError, "Connecting to invalid output 3 of source node a which has 1 outputs"),
    (graph_of(node("a", "Placeholder", dtype=F32), node("i", "Placeholder", dtype=tf.AttrValue(type=3)),
              node("m", "Mean", ["a", "i"], T=F32)),
     ValueError, "zmtf needs its 'reduction_indices' input to be a Const"),
    (graph_of(node("a", "Placeholder", dtype=F32), node("b", "BiasAdd", ["a", "a"], T=F32,
                                                            data_format=tf.AttrValue(s=b"NCHW"))),
     ValueError, "zmtf supports only data_format='NHWC'"),
    ("not a graph def", TypeError, "must be a GraphDef proto"),
])
def test_import_errors_name_the_node_as_tf(graph_def, error, match):
    with pytest.raises(error, match=match):
        tf.import_graph_def(graph_def)


def test_bad_input_map_and_return_elements():
    graph_def = graph_of(node("a", "Placeholder", dtype=F32))
    with pytest.raises(ValueError, match=r"not found in graph_def: \[q:0\]"):
        tf.import_graph_def(graph_def, input_map={"q:0": tf.constant(1.0)})
    with pytest.raises(ValueError, match="Requested return tensor 'zz:0' not found in graph def"):
        tf.import_graph_def(graph_def, return_elements=["zz:0"])


def test_export_refuses_ops_tf_has_no_twin_of():
    x = tf.placeholder(tf.float32, [3], name="x")
    tf.gradients(tf.reduce_sum(x * x), x)
    with pytest.raises(NotImplementedError, match="has no TensorFlow NodeDef mapping"):
        tf.get_default_graph().as_graph_def()


def test_feature_column_serving_ops_round_trip_with_tfs_attrs():
    """Hash buckets, vocabulary tables, crosses and a partitioned embedding lookup go out as
    TF NodeDefs (SparseCross with TF's list-of-type attrs, DynamicStitch's N counting pairs)
    and come back computing the same values."""
    fc = tf.feature_column
    color = fc.categorical_column_with_vocabulary_list("color", ["red", "green"])
    tags = fc.categorical_column_with_hash_bucket("tags", 16)
    features = {"color": tf.SparseTensor([[0, 0], [1, 0]], ["green", "blue"], [2, 1]),
                "tags": tf.SparseTensor([[0, 0], [0, 1], [1, 0]], ["a", "b", "c"], [2, 2])}
    with tf.variable_scope("p", partitioner=tf.fixed_size_partitioner(2)):
        dense = fc.input_layer(features, [fc.embedding_column(tags, 3),
                                          fc.indicator_column(fc.crossed_column([color, "tags"], 7))])
    out = tf.identity(dense, name="out")
    with tf.Session() as sess:
        sess.run([tf.global_variables_initializer(), tf.tables_initializer()])
        expected = sess.run(out)
        inits = [op.name for op in sess.graph.get_operations() if op.type == "LookupTableImportV2"]
        frozen = tf.graph_util.convert_variables_to_constants(sess, sess.graph.as_graph_def(),
                                                              ["out"] + inits)
    nodes = {n.op: n for n in frozen.node}
    cross = nodes["SparseCross"]
    assert cross.attr["N"].i == 2 and cross.attr["hashed_output"].b and cross.attr["num_buckets"].i == 7
    string, int64 = (tf.make_tensor_proto(np.array(v)).dtype for v in ([b"s"], [1]))
    assert list(cross.attr["sparse_types"].list.type) == [int64, string]   # color: vocabulary ids
    assert not cross.attr["dense_types"].list.type and cross.attr["internal_type"].type == int64
    assert nodes["DynamicStitch"].attr["N"].i == 2 and len(nodes["DynamicStitch"].input) == 4
    assert {"HashTableV2", "StringToHashBucketFast", "DynamicPartition", "SparseToDense"} <= set(nodes)
    with tf.Graph().as_default() as graph:
        again, *init_ops = tf.import_graph_def(frozen, return_elements=["out:0"] + inits, name="")
        with tf.Session(graph=graph) as sess:
            sess.run(init_ops)
            np.testing.assert_allclose(sess.run(again), expected, rtol=1e-6)

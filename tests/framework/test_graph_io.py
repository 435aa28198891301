"""Graph <-> plain dicts: everything a worker needs survives, and bad dicts are refused."""

import copy

import msgpack
import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph_io import graph_from_dict, graph_to_dict


def build_mlp():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        labels = tf.placeholder(tf.int32, [None], name="labels")
        with tf.device("/job:ps/task:0"):
            w1 = tf.Variable(tf.random_normal([4, 8], seed=1), name="w1")
            b1 = tf.Variable(tf.zeros([8]), name="b1")
        with tf.device("/job:worker/task:0/device:CPU:0"), tf.name_scope("layer"):
            hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
            logits = tf.transpose(tf.transpose(hidden, perm=[1, 0]), perm=[1, 0])
            onehot = tf.one_hot(labels, 8, on_value=np.float32(2.0), off_value=0.0)
            loss = tf.reduce_mean(tf.reduce_sum(tf.square(logits - onehot), axis=(0, 1)))
            total = tf.reduce_sum(hidden, axis=1, keepdims=True)
        with tf.control_dependencies([loss, total]):
            step = b1.assign_add(tf.ones([8]), name="step")
        with tf.colocate_with(w1.op):
            near = tf.identity(w1, name="near_w1")
        tf.global_variables_initializer()
    return graph, {"loss": loss, "step": step, "near": near}


def assert_attrs_equal(a, b, where):
    assert type(a) is type(b), where
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), where
        for key in a:
            assert_attrs_equal(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (u, v) in enumerate(zip(a, b)):
            assert_attrs_equal(u, v, f"{where}[{i}]")
    else:
        assert a == b or (a != a and b != b), where


def assert_same_graph(original, rebuilt):
    ops, new_ops = original.get_operations(), rebuilt.get_operations()
    assert [op.name for op in ops] == [op.name for op in new_ops]
    for op, new in zip(ops, new_ops):
        assert new.type == op.type
        assert new.device == op.device
        assert new.colocation_groups() == op.colocation_groups()
        assert [t.name for t in new.inputs] == [t.name for t in op.inputs]
        assert [c.name for c in new.control_inputs] == [c.name for c in op.control_inputs]
        assert [(t.dtype, t.shape) for t in new.outputs] == [(t.dtype, t.shape) for t in op.outputs]
        assert all(t.op is new for t in new.outputs)
        assert_attrs_equal(op.attrs, new.attrs, op.name)


def wire_round_trip(graph_dict, arrays):
    """What RegisterGraph does to the dict and arrays: msgpack and raw frames."""
    packed = msgpack.unpackb(msgpack.packb(graph_dict), raw=False)
    copies = [np.frombuffer(a.tobytes(), a.dtype).reshape(a.shape) for a in arrays]
    return packed, copies


def test_mlp_round_trip_keeps_everything():
    graph, _ = build_mlp()
    graph_dict, arrays = graph_to_dict(graph)
    rebuilt = graph_from_dict(*wire_round_trip(graph_dict, arrays))
    assert_same_graph(graph, rebuilt)


def test_specific_facts_survive():
    graph, nodes = build_mlp()
    rebuilt = graph_from_dict(*wire_round_trip(*graph_to_dict(graph)))
    get = rebuilt.get_operation_by_name
    assert get("w1").device == "/job:ps/task:0"
    assert get("layer/MatMul").device == "/job:worker/task:0/device:CPU:0"
    assert get("near_w1").colocation_groups() == ["loc:@w1"]
    assert {c.name for c in get("step").control_inputs} == {nodes["loss"].op.name, "layer/Sum_1"}
    assert get("layer/Sum").attrs["axis"] == (0, 1)  # a tuple stays a tuple
    assert get("layer/Sum_1").attrs["keep_dims"] is True
    assert get("layer/transpose").attrs["perm"] == [1, 0]
    on_value = get("layer/OneHot").attrs["on_value"]
    assert type(on_value) is np.float32 and on_value == 2.0
    assert rebuilt.get_tensor_by_name("x:0").shape.as_list() == [None, 4]


def test_const_values_come_back_read_only_with_their_dtype():
    graph = tf.Graph()
    with graph.as_default():
        tf.constant([[1, 2], [3, 4]], dtype=tf.int64, name="c")
        tf.constant(np.float16(1.5), name="h")
    graph_dict, arrays = graph_to_dict(graph)
    assert graph_dict["nodes"][0]["attrs"]["value"] == {"__array__": 0}
    writable = [a.copy() for a in arrays]
    rebuilt = graph_from_dict(graph_dict, writable)
    value = rebuilt.get_operation_by_name("c").attrs["value"]
    assert value.dtype == np.int64 and value.tolist() == [[1, 2], [3, 4]]
    assert not value.flags.writeable and writable[0].flags.writeable  # the caller's array untouched
    assert rebuilt.get_operation_by_name("h").attrs["value"].dtype == np.float16


def test_rebuilt_graph_runs_and_keeps_names_unique():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3), name="a")
        x = tf.placeholder(tf.float32, [3, 1], name="x")
        tf.matmul(a, x, name="y")
    rebuilt = graph_from_dict(*graph_to_dict(graph))
    with tf.Session(graph=rebuilt) as sess:
        out = sess.run("y:0", feed_dict={"x:0": np.ones((3, 1), np.float32)})
    np.testing.assert_array_equal(out, [[3.0], [12.0]])
    with rebuilt.as_default():
        assert tf.constant(1.0, name="a").op.name == "a_1"
        with tf.name_scope("y"):
            assert tf.constant(1.0, name="b").op.name == "y_1/b"


def test_subset_and_extension_into_an_existing_graph():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant(1.0, name="a")
        b = tf.add(a, 2.0, name="b")
    base = graph_from_dict(*graph_to_dict(graph))
    with graph.as_default():
        c = tf.multiply(b, 3.0, name="c")
    new_ops = graph.get_operations()[-2:]  # c's constant and c
    extension, arrays = graph_to_dict(graph, ops=new_ops)
    assert [n["name"] for n in extension["nodes"]] == ["c/y", "c"]
    graph_from_dict(extension, arrays, into=base)
    assert_same_graph(graph, base)
    with pytest.raises(InvalidArgumentError, match="input 'b:0' names no earlier node"):
        graph_from_dict(extension, arrays)  # without the base, 'b' is unknown
    assert c.name == "c:0"


def test_partitioner_style_names_are_accepted():
    graph = tf.Graph()
    with graph.as_default():
        tf.constant(1.0, name="a")
    graph_dict, arrays = graph_to_dict(graph)
    recv = "_recv/a_0/from_job:ps_replica:0_task:0"
    graph_dict["nodes"].insert(0, {
        "name": recv, "op": "_Recv", "inputs": [], "control_inputs": [], "device": "",
        "colocation": [], "attrs": {"key": "k", "dtype": "float32", "shape": []},
        "outputs": [["float32", []]]})
    graph_dict["nodes"].append({"name": "_send/x", "op": "_Send", "inputs": [recv + ":0"],
                                "control_inputs": ["a"], "device": "", "colocation": [],
                                "attrs": {"key": "k2"}, "outputs": []})
    rebuilt = graph_from_dict(graph_dict, arrays)
    assert rebuilt.get_operation_by_name("_send/x").inputs[0].name == recv + ":0"


def test_control_inputs_may_point_forward():
    graph = tf.Graph()
    with graph.as_default():
        first = tf.no_op(name="first")
        later = tf.no_op(name="later")
        first._add_control_input(later)
    rebuilt = graph_from_dict(*graph_to_dict(graph))
    assert [c.name for c in rebuilt.get_operation_by_name("first").control_inputs] == ["later"]


@pytest.mark.parametrize("attrs,pattern", [
    ({"bad": object()}, r"attr 'bad' is a object"),
    ({"bad": tf.float32}, r"attr 'bad' is a DType"),
    ({"bad": {"__array__": 1}}, r"attr 'bad' has key '__array__'; keys must be str not starting"),
    ({"__bad": 1}, r"attrs has key '__bad'"),
    ({"bad": {1: 2}}, r"keys must be str"),
    ({"bad": 2**64}, r"does not fit in 64 bits"),
    ({"bad": np.array(["s"])}, r"attr 'bad'"),
])
def test_graph_to_dict_refuses_attrs_that_cannot_travel(attrs, pattern):
    graph = tf.Graph()
    with graph.as_default():
        op = tf.no_op(name="n")
    op._attrs.update(attrs)
    with pytest.raises(InvalidArgumentError, match=r"node 'n'.*" + pattern):
        graph_to_dict(graph)


def test_nested_attr_values_round_trip():
    graph = tf.Graph()
    with graph.as_default():
        op = tf.no_op(name="n")
    op._attrs.update({"nested": {"a": [1, (2.5, None)], "b": {"c": "d"}}, "empty": (),
                      "arr": [np.zeros(2)], "f64": np.float64(0.5), "flag": np.bool_(True)})
    rebuilt = graph_from_dict(*wire_round_trip(*graph_to_dict(graph)))
    assert_attrs_equal(op.attrs, rebuilt.get_operation_by_name("n").attrs, "n")


# ---- malformed dicts from the network ---------------------------------------------------------
def small_graph():
    graph = tf.Graph()
    with graph.as_default():
        a = tf.constant([1.0, 2.0], name="a")
        x = tf.placeholder(tf.float32, [2], name="x")
        with tf.control_dependencies([a]):
            tf.add(a, x, name="y")
    return graph_to_dict(graph)


def node(d, name):
    return next(n for n in d["nodes"] if n["name"] == name)


def mutate(fn):
    d, arrays = small_graph()
    d = copy.deepcopy(d)
    result = fn(d, arrays)
    return result if isinstance(result, tuple) else (d, arrays)


MALFORMED = [
    ("not-a-map", lambda d, a: ([d], a), r"a graph must be a map"),
    ("extra-top-key", lambda d, a: d.update(extra=1), r"exactly the keys 'version' and 'nodes'"),
    ("version-2", lambda d, a: d.update(version=2), r"graph version 2 is not supported"),
    ("version-true", lambda d, a: d.update(version=True), r"graph version True"),
    ("nodes-map", lambda d, a: d.update(nodes={}), r"'nodes' must be a list"),
    ("node-not-map", lambda d, a: d["nodes"].append("y"), r"graph node 3 must be a map"),
    ("node-missing-key", lambda d, a: node(d, "y").pop("device"),
     r"graph node 2 must be a map with exactly"),
    ("name-int", lambda d, a: node(d, "y").update(name=5),
     r"graph node 2: 5 is not a valid node name"),
    ("name-empty", lambda d, a: node(d, "y").update(name=""), r"is not a valid node name"),
    ("name-space", lambda d, a: node(d, "y").update(name="a b"), r"is not a valid node name"),
    ("duplicate", lambda d, a: node(d, "y").update(name="x"), r"node 'x' is defined twice"),
    ("unknown-op", lambda d, a: node(d, "y").update(op="Launch"),
     r"node 'y': unknown op type 'Launch'"),
    ("op-int", lambda d, a: node(d, "y").update(op=7), r"node 'y': unknown op type 7"),
    ("unknown-input", lambda d, a: node(d, "y").update(inputs=["a:0", "z:0"]),
     r"node 'y': input 'z:0' names no"),
    ("forward-input", lambda d, a: node(d, "a").update(inputs=["y:0"]),
     r"node 'a': input 'y:0' names no earlier"),
    ("input-no-index", lambda d, a: node(d, "y").update(inputs=["a", "x:0"]),
     r"not of the form 'node:index'"),
    ("input-bad-index", lambda d, a: node(d, "y").update(inputs=["a:1", "x:0"]),
     r"'a' has only 1 outputs"),
    ("input-not-str", lambda d, a: node(d, "y").update(inputs=[0]),
     r"inputs must be a list of str"),
    ("unknown-control", lambda d, a: node(d, "y").update(control_inputs=["q"]),
     r"control input 'q' names no node"),
    ("bad-device", lambda d, a: node(d, "y").update(device="/gpu:x:y"), r"node 'y': bad device"),
    ("device-int", lambda d, a: node(d, "y").update(device=0), r"device must be a str"),
    ("colocation-int", lambda d, a: node(d, "y").update(colocation=[1]),
     r"colocation must be a list of str"),
    ("attrs-list", lambda d, a: node(d, "y").update(attrs=[]), r"attrs must be a map"),
    ("attr-reserved", lambda d, a: node(d, "y")["attrs"].update(__x__=1), r"bad attr name '__x__'"),
    ("bad-marker", lambda d, a: node(d, "y")["attrs"].update(v={"__pickle__": 1}),
     r"bad marker map"),
    ("marker-plus-key", lambda d, a: node(d, "y")["attrs"].update(v={"__array__": 0, "k": 1}),
     r"bad marker"),
    ("array-out-of-range", lambda d, a: node(d, "a")["attrs"].update(value={"__array__": 3}),
     r"node 'a': attr 'value' refers to array 3, but 1 arrays"),
    ("array-index-str", lambda d, a: node(d, "a")["attrs"].update(value={"__array__": "0"}),
     r"refers to array"),
    ("tuple-not-list", lambda d, a: node(d, "y")["attrs"].update(v={"__tuple__": 1}),
     r"__tuple__ must hold a list"),
    ("scalar-not-0d", lambda d, a: node(d, "a")["attrs"].update(s={"__scalar__": 0}),
     r"a scalar must be a 0-d"),
    ("attr-bytes", lambda d, a: node(d, "y")["attrs"].update(v=b"raw"), r"attr 'v' holds a bytes"),
    ("unused-array", lambda d, a: (d, a + [np.zeros(1)]), r"graph arrays \[1\] are not referenced"),
    ("array-not-ndarray", lambda d, a: (d, [[1.0, 2.0]]), r"graph array 0 is a list"),
    ("array-bad-dtype", lambda d, a: (d, [np.array(["s", "t"])]), r"node 'a': attr 'value'"),
    ("outputs-bad-dtype", lambda d, a: node(d, "y").update(outputs=[["float128", [2]]]),
     r"node 'y': output 0 has unknown dtype 'float128'"),
    ("outputs-shape-neg", lambda d, a: node(d, "y").update(outputs=[["float32", [-1]]]),
     r"output 0 shape must be"),
    ("outputs-shape-str", lambda d, a: node(d, "y").update(outputs=[["float32", "2"]]),
     r"output 0 shape must be"),
    ("outputs-not-pair", lambda d, a: node(d, "y").update(outputs=[["float32"]]),
     r"must be \[dtype name, shape\]"),
    ("const-shape-mismatch", lambda d, a: node(d, "a").update(outputs=[["float32", [3]]]),
     r"node 'a' \(Const\): output .* does not match its value \(float32\[2\]\)"),
    ("const-dtype-mismatch", lambda d, a: node(d, "a").update(outputs=[["int32", [2]]]),
     r"does not match its value"),
    ("const-no-value", lambda d, a: (node(d, "a")["attrs"].pop("value"), (d, []))[1],
     r"attr 'value' must be an array"),
]


@pytest.mark.parametrize("fn,pattern", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_graph_dicts_are_refused(fn, pattern):
    graph_dict, arrays = mutate(fn)
    with pytest.raises(InvalidArgumentError, match=pattern):
        graph_from_dict(graph_dict, arrays)


def test_a_refused_extension_leaves_the_graph_untouched():
    graph_dict, arrays = small_graph()
    base = graph_from_dict(graph_dict, arrays)
    before = (base.version, [op.name for op in base.get_operations()])
    extension = {"version": 1, "nodes": [
        {"name": "ok", "op": "Identity", "inputs": ["y:0"], "control_inputs": [], "device": "",
         "colocation": [], "attrs": {}, "outputs": [["float32", [2]]]},
        {"name": "bad", "op": "Identity", "inputs": ["nope:0"], "control_inputs": [], "device": "",
         "colocation": [], "attrs": {}, "outputs": [["float32", [2]]]},
    ]}
    with pytest.raises(InvalidArgumentError, match="node 'bad'"):
        graph_from_dict(extension, [], into=base)
    assert (base.version, [op.name for op in base.get_operations()]) == before
    with pytest.raises(InvalidArgumentError, match="node 'a' is defined twice"):
        graph_from_dict(graph_dict, arrays, into=base)

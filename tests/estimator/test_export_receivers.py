"""tf.estimator.export receivers and outputs: TF's validation and signatures, in one graph."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.estimator.export.export_utils import build_all_signature_defs, get_export_outputs, \
    get_temp_export_dir
from zmtf.formats.graph_def_proto import dtype_of_enum
from zmtf.interop.graph_def_io import graph_to_graph_def


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_serving_input_receiver_wraps_single_tensors_under_tf_default_names():
    x = tf.placeholder(tf.float32, [None, 2])
    receiver = tf.estimator.export.ServingInputReceiver(x, x, {"alt": x})
    assert receiver.features == {"feature": x} and receiver.receiver_tensors == {"input": x}
    assert receiver.receiver_tensors_alternatives == {"alt": {"input": x}}
    tensor_receiver = tf.estimator.export.TensorServingInputReceiver(x, {"x": x})
    assert tensor_receiver.features is x and tensor_receiver.receiver_tensors == {"x": x}


@pytest.mark.parametrize("args,message", [
    ((None, {}), "features must be defined."),
    (({"a": 1.0}, {}), "feature a must be a Tensor or SparseTensor."),
    (({1: "x"}, {}), "feature keys must be strings: 1."),
    (("x", None), "receiver_tensors must be defined."),
    (("x", "x", ["x"]), "receiver_tensors_alternatives must be a dict"),
])
def test_serving_input_receiver_errors(args, message):
    x = tf.placeholder(tf.float32, [None])
    args = tuple(x if a == "x" else ({k: x for k in a} if isinstance(a, dict) and
                                     all(v == "x" for v in a.values()) else a) for a in args)
    with pytest.raises(ValueError, match=message):
        tf.estimator.export.ServingInputReceiver(*args)


def test_raw_receiver_fn_makes_placeholders_with_the_batch_size_and_op_names():
    with tf.Graph().as_default():
        features = {"x": tf.placeholder(tf.int64, [7, 3], name="feat_x")}
    receiver = tf.estimator.export.build_raw_serving_input_receiver_fn(features, 5)()
    x = receiver.receiver_tensors["x"]
    assert receiver.features["x"] is x and x.op.type == "Placeholder"
    assert (x.name, x.dtype, x.shape.as_list()) == ("feat_x:0", tf.int64, [5, 3])


def test_parsing_receiver_fn_parses_a_string_placeholder():
    receiver = tf.estimator.export.build_parsing_serving_input_receiver_fn(
        {"a": tf.FixedLenFeature([2], tf.int64)})()
    examples = receiver.receiver_tensors["examples"]
    assert (examples.name, examples.dtype, examples.shape.as_list()) == (
        "input_example_tensor:0", tf.string, [None])
    assert receiver.features["a"].shape.as_list() == [None, 2]


def test_export_output_errors():
    x, s = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.string, [None])
    i = tf.placeholder(tf.int32, [None])
    with pytest.raises(ValueError, match="Prediction output value must be a Tensor; got 1"):
        tf.estimator.export.PredictOutput({"a": 1})
    with pytest.raises(ValueError, match="Prediction output key must be a string; got 3."):
        tf.estimator.export.PredictOutput({3: x})
    with pytest.raises(ValueError, match="At least one of `scores` and `classes` must be defined"):
        tf.estimator.export.ClassificationOutput()
    with pytest.raises(ValueError, match="Classification scores must be a float32 Tensor"):
        tf.estimator.export.ClassificationOutput(scores=i)
    with pytest.raises(ValueError, match="Classification classes must be a string Tensor"):
        tf.estimator.export.ClassificationOutput(classes=x)
    with pytest.raises(ValueError, match="Regression output value must be a float32 Tensor"):
        tf.estimator.export.RegressionOutput(i)
    with pytest.raises(ValueError, match="Regression signatures can only accept a single tensor"):
        tf.estimator.export.RegressionOutput(x).as_signature_def({"a": s, "b": s})
    assert tf.estimator.export.PredictOutput({("head", "y"): x}).outputs == {"head/y": x}


def test_signatures_of_outputs_and_alternatives():
    examples = tf.placeholder(tf.string, [None], name="examples")
    x = tf.placeholder(tf.float32, [None], name="x")
    scores = tf.identity(x * 2, name="scores")
    outputs = get_export_outputs({"cls": tf.estimator.export.ClassificationOutput(scores=scores)},
                                 None)
    assert sorted(outputs) == ["cls", "serving_default"]
    sigs = build_all_signature_defs({"examples": examples}, outputs, {"raw": {"x": x}})
    # the string receiver cannot compute scores (it needs x), the raw one is not a string
    assert sigs == {}
    sigs = build_all_signature_defs(
        x, {"serving_default": tf.estimator.export.PredictOutput(scores)}, {"alt": x})
    assert sorted(sigs) == ["alt:serving_default", "serving_default"]
    assert sigs["serving_default"].inputs["input"].name == "x:0"
    assert sigs["serving_default"].outputs["output"].name == "scores:0"


def test_unservable_signature_names_the_missing_placeholder():
    x, y = tf.placeholder(tf.float32, name="x"), tf.placeholder(tf.float32, name="y")
    out = tf.add(x, y, name="sum")
    output = tf.estimator.export.PredictOutput(out)
    assert build_all_signature_defs({"x": x}, {"serving_default": output}) == {}
    from zmtf.estimator.export.export_utils import _signature_or_reason
    _, reason = _signature_or_reason(output, {"x": x})
    assert "because of the dependency on `y`" in reason
    assert reason.endswith("sum (Add) <- y (Placeholder)")


def test_export_outputs_errors_and_temp_dir():
    x = tf.placeholder(tf.float32)
    with pytest.raises(TypeError, match="Values in `export_outputs` must be ExportOutput objects"):
        get_export_outputs({"a": x}, None)
    with pytest.raises(ValueError, match="Multiple `export_outputs` were provided, but none"):
        get_export_outputs({"a": tf.estimator.export.PredictOutput(x),
                            "b": tf.estimator.export.PredictOutput(x)}, None)
    assert get_temp_export_dir("/base/1600000000") == b"/base/temp-1600000000"


def test_parse_example_graph_def_round_trip_keeps_keys_defaults_and_values():
    serialized = tf.placeholder(tf.string, [None], name="s")
    parsed = tf.parse_example(serialized, {
        "b": tf.FixedLenFeature([2], tf.float32, default_value=[0.5, -1.0]),
        "a": tf.FixedLenFeature([], tf.int64)})
    graph_def = graph_to_graph_def(tf.get_default_graph())
    node = next(n for n in graph_def.node if n.op == "ParseExample")
    assert node.attr["Ndense"].i == 2 and node.attr["Nsparse"].i == 0
    assert list(node.input[:4]) == ["s", "ParseExample/names", "ParseExample/dense_keys_0",
                                    "ParseExample/dense_keys_1"]
    record = tf.train.Example(features=tf.train.Features(feature={
        "a": tf.train.Feature(int64_list=tf.train.Int64List(value=[7]))})).SerializeToString()
    with tf.Graph().as_default() as graph:
        s, a, b = tf.import_graph_def(graph_def, return_elements=[
            "s:0", parsed["a"].name, parsed["b"].name], name="")
        with tf.Session(graph=graph) as sess:
            got_a, got_b = sess.run([a, b], {s: np.array([record], dtype=object)})
    np.testing.assert_array_equal(got_a, [7])
    np.testing.assert_array_equal(got_b, [[0.5, -1.0]])
    assert a.dtype == tf.int64 and b.shape.as_list() == [None, 2]


def test_parse_example_with_var_len_features_round_trips_in_tfs_output_order():
    """TF numbers ParseExample's outputs sparse indices, values, shapes, then dense; zmtf puts
    dense first. References in the GraphDef (and return_elements) use TF's numbers."""
    serialized = tf.placeholder(tf.string, [None], name="s")
    parsed = tf.parse_example(serialized, {"d": tf.FixedLenFeature([], tf.float32),
                                           "u": tf.VarLenFeature(tf.string),
                                           "v": tf.VarLenFeature(tf.int64)})
    tf.identity(parsed["v"].values, name="v_values")
    graph_def = graph_to_graph_def(tf.get_default_graph(), add_shapes=True)
    node = next(n for n in graph_def.node if n.op == "ParseExample")
    assert (node.attr["Nsparse"].i, node.attr["Ndense"].i) == (2, 1)
    assert list(node.input[:5]) == ["s", "ParseExample/names", "ParseExample/sparse_keys_0",
                                    "ParseExample/sparse_keys_1", "ParseExample/dense_keys_0"]
    assert [dtype_of_enum(t, "") for t in node.attr["sparse_types"].list.type] == [tf.string, tf.int64]
    assert next(n for n in graph_def.node if n.name == "v_values").input[0] == "ParseExample:3"
    shapes = [[d.size for d in s.dim] for s in node.attr["_output_shapes"].list.shape]
    assert shapes == [[-1, 2], [-1, 2], [-1], [-1], [2], [2], [-1]]

    def feature(**kw):
        return tf.train.Feature(**kw)
    records = [tf.train.Example(features=tf.train.Features(feature={
        "d": feature(float_list=tf.train.FloatList(value=[d])),
        "u": feature(bytes_list=tf.train.BytesList(value=u)),
        "v": feature(int64_list=tf.train.Int64List(value=v))})).SerializeToString()
        for d, u, v in ((1.5, [b"x"], [4, 5]), (-2.0, [], [6]))]
    with tf.Graph().as_default() as graph:
        s, d, v_indices, v_values, u_values = tf.import_graph_def(graph_def, return_elements=[
            "s:0", "ParseExample:6", "ParseExample:1", "v_values:0", "ParseExample:2"], name="")
        with tf.Session(graph=graph) as sess:
            got = sess.run([d, v_indices, v_values, u_values], {s: np.array(records, dtype=object)})
    np.testing.assert_array_equal(got[0], [1.5, -2.0])
    np.testing.assert_array_equal(got[1], [[0, 0], [0, 1], [1, 0]])
    np.testing.assert_array_equal(got[2], [4, 5, 6])
    assert list(got[3]) == [b"x"]

"""Export from zmtf with simple_save / SavedModelBuilder, load into a fresh graph, compare."""

import os

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.meta_graph_proto import SavedModel, VariableDef
from zmtf.training.tensor_bundle import BundleReader

X = np.random.RandomState(0).randn(16, 4).astype(np.float32)
T = (X[:, :1] * 2 - X[:, 1:2]).astype(np.float32)


def _train_mlp(graph):
    """A 4-8-1 MLP trained 20 steps; returns (x, y, sess) with sess open."""
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 4], name="x")
        t = tf.placeholder(tf.float32, [None, 1], name="t")
        hidden = tf.layers.dense(x, 8, activation=tf.nn.relu, name="h")
        y = tf.layers.dense(hidden, 1, name="y")
        loss = tf.reduce_mean(tf.square(y - t))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        sess = tf.Session(graph=graph)
        sess.run(tf.global_variables_initializer())
        for _ in range(20):
            sess.run(train, {x: X, t: T})
    return x, y, sess


@pytest.fixture
def exported(tmp_path):
    """(export_dir, outputs on X, {variable name: value}) of a trained MLP."""
    graph = tf.Graph()
    x, y, sess = _train_mlp(graph)
    with graph.as_default(), sess:
        outputs = sess.run(y, {x: X})
        values = {v.op.name: sess.run(v) for v in tf.global_variables()}
        tf.saved_model.simple_save(sess, str(tmp_path / "model"), {"x": x}, {"y": y})
    return str(tmp_path / "model"), outputs, values


def test_simple_save_then_load_gives_identical_outputs_and_variables(exported):
    export_dir, outputs, values = exported
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, [tf.saved_model.tag_constants.SERVING],
                                          export_dir)
        sig = meta.signature_def["serving_default"]
        assert sig.method_name == "tensorflow/serving/predict"
        assert sig.inputs["x"].name == "x:0" and sig.outputs["y"].name == "y/BiasAdd:0"
        got = sess.run(sig.outputs["y"].name, {sig.inputs["x"].name: X})
        np.testing.assert_array_equal(got, outputs)
        restored = {v.op.name: sess.run(v) for v in tf.global_variables()}
        assert sorted(restored) == sorted(values) == ["h/bias", "h/kernel", "y/bias",
                                                      "y/kernel"]
        for name, value in values.items():
            np.testing.assert_array_equal(restored[name], value)
        assert [v.op.name for v in tf.trainable_variables()] == list(restored)


def test_written_protobuf_has_tf_saver_nodes_collections_and_signature(exported):
    export_dir, _, values = exported
    assert sorted(os.listdir(export_dir)) == ["saved_model.pb", "variables"]
    assert sorted(os.listdir(os.path.join(export_dir, "variables"))) == [
        "variables.data-00000-of-00001", "variables.index"]
    with open(os.path.join(export_dir, "saved_model.pb"), "rb") as f:
        saved = SavedModel.FromString(f.read())
    assert saved.saved_model_schema_version == 1 and len(saved.meta_graphs) == 1
    meta = saved.meta_graphs[0]
    assert list(meta.meta_info_def.tags) == ["serve"]
    saver = meta.saver_def
    assert (saver.filename_tensor_name, saver.save_tensor_name, saver.restore_op_name,
            saver.version) == ("save/Const:0", "save/control_dependency:0",
                               "save/restore_all", 2)
    nodes = {n.name: n for n in meta.graph_def.node}
    restore = nodes["save/RestoreV2"]
    assert restore.op == "RestoreV2" and list(restore.input) == [
        "save/Const", "save/RestoreV2/tensor_names", "save/RestoreV2/shape_and_slices"]
    names = tf.make_ndarray(nodes["save/RestoreV2/tensor_names"].attr["value"].tensor)
    assert sorted(n.decode() for n in names) == sorted(values)
    assert list(restore.attr["dtypes"].list.type) == [1] * 4                 # DT_FLOAT
    assigns = [n for n in meta.graph_def.node if n.name.startswith("save/Assign")]
    assert sorted(n.input[0] for n in assigns) == sorted(values)
    assert sorted(nodes["save/restore_all"].input) == sorted("^" + n.name for n in assigns)
    assert nodes["save/SaveV2"].input[3:] == [n.decode() for n in names]
    # the train op, whose gradients use zmtf-only helper ops, is left out; inference is kept
    assert "GradientDescent" not in nodes
    assert not [n for n in nodes if n.endswith("ApplyGradientDescent")]
    assert nodes["h/MatMul"].op == "MatMul" and nodes["x"].op == "Placeholder"
    variables = [VariableDef.FromString(b) for b in
                 meta.collection_def["variables"].bytes_list.value]
    assert [(v.variable_name, v.snapshot_name, v.initializer_name, v.trainable)
            for v in variables][0] == ("h/kernel:0", "h/kernel/read:0", "h/kernel/Assign", True)
    info = meta.signature_def["serving_default"].inputs["x"]
    assert info.dtype == 1 and [d.size for d in info.tensor_shape.dim] == [-1, 4]
    reader = BundleReader(os.path.join(export_dir, "variables", "variables"))
    for name, value in values.items():
        np.testing.assert_array_equal(reader.tensor(name), value)


def test_builder_two_tag_sets_main_op_text_format_and_atomic_save(tmp_path):
    export_dir = str(tmp_path / "out")
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 2], name="x")
        w = tf.Variable([[1.0], [2.0]], name="w")
        counter = tf.Variable(7, name="counter", collections=[tf.GraphKeys.LOCAL_VARIABLES])
        y = tf.matmul(x, w, name="y")
        init = tf.group(tf.local_variables_initializer(), name="legacy_init")
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(w.assign([[3.0], [-1.0]]))
            builder = tf.saved_model.builder.SavedModelBuilder(export_dir)
            sig = tf.saved_model.signature_def_utils.build_signature_def(
                {"x": tf.saved_model.utils.build_tensor_info(x)},
                {"y": tf.saved_model.utils.build_tensor_info(y)}, "tensorflow/serving/predict")
            builder.add_meta_graph_and_variables(sess, ["serve"], {"pred": sig},
                                                 legacy_init_op=init)
            builder.add_meta_graph(["serve", "gpu"])
            assert not os.path.exists(export_dir)          # nothing visible before save()
            path = builder.save(as_text=True)
    assert path == os.path.join(export_dir, "saved_model.pbtxt").encode()
    assert os.listdir(tmp_path) == ["out"]                  # the staging folder was renamed
    for tags in (["serve"], ["gpu", "serve"]):
        with tf.Session(graph=tf.Graph()) as sess:
            meta = tf.saved_model.loader.load(sess, tags, export_dir)
            assert set(meta.meta_info_def.tags) == set(tags)
            np.testing.assert_array_equal(sess.run("y:0", {"x:0": [[1.0, 1.0]]}), [[2.0]])
            assert sess.run("counter:0") == 7                 # the main op ran
    del counter


def test_import_scope_prefixes_loaded_names(exported):
    export_dir, outputs, _ = exported
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], export_dir, import_scope="m")
        x = tf.saved_model.utils.get_tensor_from_tensor_info(
            meta.signature_def["serving_default"].inputs["x"], import_scope="m")
        assert x.name == "m/x:0"
        np.testing.assert_array_equal(sess.run("m/y/BiasAdd:0", {x: X}), outputs)
        assert sorted(v.op.name for v in tf.global_variables()) == [
            "m/h/bias", "m/h/kernel", "m/y/bias", "m/y/kernel"]


def test_maybe_saved_model_directory(exported, tmp_path):
    assert tf.saved_model.loader.maybe_saved_model_directory(exported[0])
    assert not tf.saved_model.maybe_saved_model_directory(str(tmp_path))


def test_export_without_variables(tmp_path):
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.multiply(x, 2.0, name="y")
    with tf.Session() as sess:
        tf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
    with tf.Session(graph=tf.Graph()) as sess:
        meta = tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "m"))
        assert not meta.HasField("saver_def")
        np.testing.assert_array_equal(sess.run("y:0", {"x:0": [1, 2, 3]}), [2, 4, 6])

"""SavedModel errors: TF's classes and wording; corrupt files raise typed errors only."""

import os
import random
import shutil

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework import errors
from zmtf.formats.meta_graph_proto import SavedModel


def _save_small(export_dir):
    x = tf.placeholder(tf.float32, [None, 2], name="x")
    w = tf.Variable([[1.0], [2.0]], name="w")
    y = tf.matmul(x, w, name="y")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.saved_model.simple_save(sess, export_dir, {"x": x}, {"y": y})
    tf.reset_default_graph()


@pytest.fixture
def small(tmp_path):
    _save_small(str(tmp_path / "m"))
    return str(tmp_path / "m")


def test_existing_non_empty_export_dir_is_refused(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "old").write_text("x")
    with pytest.raises(AssertionError, match="already exists, and isn't empty"):
        tf.saved_model.builder.SavedModelBuilder(str(tmp_path / "m"))


def test_empty_export_dir_is_accepted_and_filled(tmp_path):
    (tmp_path / "m").mkdir()
    _save_small(str(tmp_path / "m"))
    assert tf.saved_model.maybe_saved_model_directory(str(tmp_path / "m"))


def test_builder_call_order_is_checked(tmp_path):
    builder = tf.saved_model.Builder(str(tmp_path / "m"))
    with pytest.raises(AssertionError, match="has not been saved yet"):
        builder.add_meta_graph(["serve"])
    tf.Variable(1.0, name="v")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        builder.add_meta_graph_and_variables(sess, ["serve"])
        with pytest.raises(AssertionError, match="has already been saved"):
            builder.add_meta_graph_and_variables(sess, ["serve"])


def test_signature_map_is_validated(tmp_path):
    x = tf.placeholder(tf.float32, name="x")
    sig = tf.saved_model.predict_signature_def({"x": x}, {"y": x})
    builder = tf.saved_model.Builder(str(tmp_path / "m"))
    with tf.Session() as sess:
        with pytest.raises(KeyError, match="is reserved for initialization"):
            builder.add_meta_graph_and_variables(sess, ["serve"],
                                                 {"__saved_model_init_op": sig})
        bad = tf.saved_model.build_signature_def(
            {"x": tf.saved_model.utils.build_tensor_info_from_op(x.op)})
        with pytest.raises(AssertionError, match="must have the dtype field set"):
            builder.add_meta_graph_and_variables(sess, ["serve"], {"s": bad})
        with pytest.raises(TypeError, match="Expected .* to be an Operation"):
            builder.add_meta_graph_and_variables(sess, ["serve"], main_op=x)


def test_export_of_a_signature_on_an_unwritable_op_names_it(tmp_path):
    x = tf.placeholder(tf.float32, [3], name="x")
    y = tf.py_func(lambda v: v * 2, [x], tf.float32, name="doubled")
    with tf.Session() as sess, pytest.raises(NotImplementedError,
                                             match="signature 'serving_default' needs node"):
        tf.saved_model.simple_save(sess, str(tmp_path / "m"), {"x": x}, {"y": y})
    assert not os.path.exists(tmp_path / "m")


def test_missing_saved_model_and_unknown_tags(small, tmp_path):
    with tf.Session() as sess:
        with pytest.raises(OSError, match="SavedModel file does not exist at: "):
            tf.saved_model.loader.load(sess, ["serve"], str(tmp_path / "nothing"))
        with pytest.raises(RuntimeError, match=r"MetaGraphDef associated with tags 'train' "
                                               r"could not be found in SavedModel, with "
                                               r"available tags '\[\{'serve'\}\]'"):
            tf.saved_model.loader.load(sess, ["train"], small)


def test_missing_variables_file_is_not_found(small):
    os.remove(os.path.join(small, "variables", "variables.index"))
    with tf.Session() as sess, pytest.raises(errors.NotFoundError):
        tf.saved_model.loader.load(sess, ["serve"], small)


def test_unsupported_op_is_not_found_error(small):
    path = os.path.join(small, "saved_model.pb")
    with open(path, "rb") as f:
        saved = SavedModel.FromString(f.read())
    node = next(n for n in saved.meta_graphs[0].graph_def.node if n.name == "y")
    node.op = "VarHandleOp"
    with open(path, "wb") as f:
        f.write(saved.SerializeToString())
    with tf.Session() as sess, pytest.raises(errors.NotFoundError,
                                             match="Op type not registered 'VarHandleOp'"):
        tf.saved_model.loader.load(sess, ["serve"], small)


def test_truncated_file_is_os_error(small):
    path = os.path.join(small, "saved_model.pb")
    with open(path, "rb") as f:
        data = f.read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])
    with tf.Session() as sess, pytest.raises(OSError, match="Cannot parse file"):
        tf.saved_model.loader.load(sess, ["serve"], small)


_TYPED = (OSError, ValueError, TypeError, KeyError, RuntimeError, NotImplementedError,
          errors.OpError)


def test_fuzzed_saved_model_raises_typed_errors_only(small, tmp_path):
    with open(os.path.join(small, "saved_model.pb"), "rb") as f:
        data = f.read()
    rng = random.Random(3)
    for trial in range(40):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        copy = str(tmp_path / f"fuzz{trial}")
        shutil.copytree(small, copy)
        with open(os.path.join(copy, "saved_model.pb"), "wb") as f:
            f.write(bytes(mutated))
        with tf.Session(graph=tf.Graph()) as sess:
            try:
                tf.saved_model.loader.load(sess, ["serve"], copy)
            except _TYPED:
                pass


def test_loaded_values_are_checked_against_the_graph(small):
    path = os.path.join(small, "saved_model.pb")
    with open(path, "rb") as f:
        saved = SavedModel.FromString(f.read())
    for node in saved.meta_graphs[0].graph_def.node:   # the graph now claims w is [2, 2]
        if node.name == "w":
            node.attr["shape"].shape.dim[1].size = 2
        if node.name == "w/initial_value":
            node.attr["value"].tensor.tensor_shape.dim[1].size = 2
            node.attr["value"].tensor.tensor_content = np.zeros(4, np.float32).tobytes()
    with open(path, "wb") as f:
        f.write(saved.SerializeToString())
    with tf.Session() as sess, pytest.raises(errors.InvalidArgumentError, match="shape"):
        tf.saved_model.loader.load(sess, ["serve"], small)

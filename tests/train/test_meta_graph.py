"""tf.train.export_meta_graph / import_meta_graph and the .meta file Saver.save writes."""

from __future__ import annotations

import json
import logging
import os

import numpy as np
import pytest

import zmtf as tf

BATCH_X = np.arange(6, dtype=np.float32).reshape(2, 3)
BATCH_Y = np.ones((2, 2), np.float32)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


def build_model():
    x = tf.placeholder(tf.float32, [None, 3], name="x")
    y = tf.placeholder(tf.float32, [None, 2], name="y")
    w = tf.Variable(np.full((3, 2), 0.1, np.float32), name="layer/w")
    b = tf.Variable(np.zeros(2, np.float32), name="layer/b")
    logits = tf.add(tf.matmul(x, w), b, name="logits")
    loss = tf.reduce_mean(tf.square(logits - y), name="loss")
    step = tf.train.get_or_create_global_step()
    train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=step)
    tf.add_to_collection("train_op", train_op)
    tf.add_to_collection("notes", "hello")
    tf.add_to_collection("notes", 3)
    return train_op, step


def train_and_save(folder, steps=2, **saver_args):
    train_op, step = build_model()
    saver = tf.train.Saver(**saver_args)
    feed = {"x:0": BATCH_X, "y:0": BATCH_Y}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(steps):
            sess.run(train_op, feed)
        path = saver.save(sess, str(folder / "ckpt"), global_step=step)
        logits = sess.run("logits:0", feed)
    return path, logits


def by_name(name):
    return tf.get_default_graph().get_tensor_by_name(name)


# ---- round trip ------------------------------------------------------------------------------


def test_a_trained_model_comes_back_by_name_and_keeps_training(tmp_path):
    path, want = train_and_save(tmp_path)
    assert path == str(tmp_path / "ckpt-2") and os.path.isfile(path + ".meta")
    tf.reset_default_graph()

    saver = tf.train.import_meta_graph(path + ".meta")
    assert [v.name for v in tf.trainable_variables()] == ["layer/w:0", "layer/b:0"]
    assert [v.name for v in tf.global_variables()] == ["layer/w:0", "layer/b:0", "global_step:0"]
    assert isinstance(tf.global_variables()[0], tf.Variable)
    assert tf.get_collection("notes") == ["hello", 3]
    feed = {by_name("x:0"): BATCH_X, by_name("y:0"): BATCH_Y}
    with tf.Session() as sess:
        saver.restore(sess, tf.train.latest_checkpoint(str(tmp_path)))
        np.testing.assert_array_equal(sess.run(by_name("logits:0"), feed), want)
        loss_before = sess.run(by_name("loss:0"), feed)
        sess.run(tf.get_collection("train_op")[0], feed)
        assert sess.run(by_name("loss:0"), feed) < loss_before
        assert sess.run(tf.train.get_global_step().value()) == 3
        again = saver.save(sess, str(tmp_path / "ckpt"), global_step=tf.train.get_global_step())
        assert again == str(tmp_path / "ckpt-3")
        sess.run(tf.global_variables_initializer())   # the imported initializers still work
        assert sess.run(tf.trainable_variables()[1].value()).tolist() == [0.0, 0.0]
        tf.train.Saver().restore(sess, again)         # so does a new Saver of the variables
        assert sess.run(tf.train.get_global_step().value()) == 3


def test_the_imported_saver_keeps_the_saved_settings(tmp_path):
    path, _ = train_and_save(tmp_path, max_to_keep=1, pad_step_number=True)
    assert path == str(tmp_path / "ckpt-00000002")
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph(path + ".meta")
    with tf.Session() as sess:
        saver.restore(sess, path)
        saver.save(sess, str(tmp_path / "m"), global_step=5)
        saver.save(sess, str(tmp_path / "m"), global_step=6)
    assert sorted(os.listdir(tmp_path)) == [
        "checkpoint", "ckpt-00000002.meta", "ckpt-00000002.npz", "m-00000006.meta",
        "m-00000006.npz"]


def test_export_returns_a_document_that_imports_without_a_file(tmp_path):
    build_model()
    document = tf.train.export_meta_graph()
    assert document["format"] == "zmtf.MetaGraph" and document["version"] == 1
    assert document["saver_def"] is None
    json.dumps(document)  # plain data only
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph(document)
    assert isinstance(saver, tf.train.Saver)      # no saver_def, but variables: a new Saver
    assert len(tf.get_default_graph().get_operations()) > 10


def test_no_variables_gives_no_saver_as_in_tf(tmp_path):
    x = tf.placeholder(tf.float32, [None], name="x")
    tf.add_to_collection("outputs", tf.identity(x * 2.0, name="y"))
    tf.train.export_meta_graph(str(tmp_path / "g.meta"))
    tf.reset_default_graph()
    assert tf.train.import_meta_graph(str(tmp_path / "g.meta")) is None
    (y,) = tf.get_collection("outputs")
    with tf.Session() as sess:
        assert sess.run(y, {by_name("x:0"): [1.0, 2.0]}).tolist() == [2.0, 4.0]


def test_write_graph_writes_json_that_imports(tmp_path):
    tf.constant(np.arange(4, dtype=np.int64).reshape(2, 2), name="c")
    path = tf.train.write_graph(tf.get_default_graph(), str(tmp_path / "logs"), "g.pbtxt")
    assert path == str(tmp_path / "logs" / "g.pbtxt")
    with open(path, encoding="utf-8") as f:
        assert json.load(f)["graph"]["nodes"][0]["name"] == "c"
    tf.reset_default_graph()
    tf.train.import_meta_graph(path)
    with tf.Session() as sess:
        assert sess.run("c:0").tolist() == [[0, 1], [2, 3]]


def test_clear_devices_drops_device_pins(tmp_path):
    with tf.device("/job:ps/task:0"):
        tf.Variable(1.0, name="v")
    tf.train.export_meta_graph(str(tmp_path / "g.meta"))
    tf.reset_default_graph()
    tf.train.import_meta_graph(str(tmp_path / "g.meta"))
    assert tf.get_default_graph().get_operation_by_name("v").device == "/job:ps/task:0"
    tf.reset_default_graph()
    tf.train.import_meta_graph(str(tmp_path / "g.meta"), clear_devices=True)
    assert {op.device for op in tf.get_default_graph().get_operations()} == {""}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert sess.run(tf.global_variables()[0].value()) == 1.0


def test_import_scope_prefixes_names_and_keeps_variables_apart(tmp_path):
    path, want = train_and_save(tmp_path)
    tf.reset_default_graph()
    first = tf.train.import_meta_graph(path + ".meta", import_scope="a")
    tf.train.import_meta_graph(path + ".meta", import_scope="b")
    assert [v.name for v in tf.trainable_variables()] == [
        "a/layer/w:0", "a/layer/b:0", "b/layer/w:0", "b/layer/b:0"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first.restore(sess, path)      # checkpoint keys stay unscoped, as in TF
        got_a = sess.run("a/logits:0", {"a/x:0": BATCH_X})
        got_b = sess.run("b/logits:0", {"b/x:0": BATCH_X})
    np.testing.assert_array_equal(got_a, want)
    assert not np.array_equal(got_b, want)    # b's variables are its own, still initial


def test_importing_twice_without_a_scope_is_a_clear_error(tmp_path):
    path, _ = train_and_save(tmp_path)
    tf.reset_default_graph()
    tf.train.import_meta_graph(path + ".meta")
    count = len(tf.get_default_graph().get_operations())
    with pytest.raises(tf.errors.InvalidArgumentError, match="import_scope"):
        tf.train.import_meta_graph(path + ".meta")
    assert len(tf.get_default_graph().get_operations()) == count


def test_a_partitioned_variable_round_trips_whole(tmp_path):
    with tf.variable_scope("p", partitioner=tf.fixed_size_partitioner(2)):
        pv = tf.get_variable("pv", initializer=np.arange(8, dtype=np.float32).reshape(4, 2))
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"))
        want = sess.run(pv.as_tensor())
    tf.reset_default_graph()
    saver = tf.train.import_meta_graph(path + ".meta")
    with tf.Session() as sess:
        saver.restore(sess, path)
        np.testing.assert_array_equal(sess.run("p/pv/ConcatPartitions:0"), want)
    assert tf.train.list_variables(path) == [("p/pv", [4, 2])]


# ---- what cannot be serialized ---------------------------------------------------------------


def test_a_collection_of_python_objects_is_skipped_with_a_warning(tmp_path, caplog):
    build_model()
    tf.add_to_collection("callbacks", lambda: None)
    with caplog.at_level(logging.WARNING):
        tf.train.export_meta_graph(str(tmp_path / "g.meta"))
    assert "callbacks" in caplog.text
    tf.reset_default_graph()
    tf.train.import_meta_graph(str(tmp_path / "g.meta"))
    assert tf.get_collection("callbacks") == [] and tf.get_collection("notes") == ["hello", 3]


def test_an_op_attr_holding_a_callable_is_a_typed_error_and_save_still_checkpoints(tmp_path,
                                                                                  caplog):
    v = tf.Variable(1.0, name="v")
    tf.get_default_graph().create_op("NoOp", [], [], name="hook", attrs={"fn": print})
    with pytest.raises(tf.errors.InvalidArgumentError, match="'hook'.*cannot be serialized"):
        tf.train.export_meta_graph()
    with tf.Session() as sess:
        sess.run(v.initializer)
        with caplog.at_level(logging.WARNING):
            path = tf.train.Saver().save(sess, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m.npz"]
    assert "without its .meta" in caplog.text and path == str(tmp_path / "m")


# ---- files: atomic, optional, hostile --------------------------------------------------------


def test_write_meta_graph_false_writes_no_meta(tmp_path):
    build_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tf.train.Saver().save(sess, str(tmp_path / "m"), write_meta_graph=False)
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m.npz"]


def test_a_crash_while_writing_the_meta_leaves_no_partial_file(tmp_path, monkeypatch):
    build_model()
    real_replace = os.replace

    def crash_on_meta(src, dst):
        if str(dst).endswith(".meta"):
            raise OSError("simulated crash")
        real_replace(src, dst)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        monkeypatch.setattr(os, "replace", crash_on_meta)
        with pytest.raises(OSError, match="simulated crash"):
            tf.train.Saver().save(sess, str(tmp_path / "m"))
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m.npz"]


def test_a_missing_file_is_an_os_error_as_in_tf(tmp_path):
    with pytest.raises(OSError, match="does not exist"):
        tf.train.import_meta_graph(str(tmp_path / "nothing.meta"))


@pytest.fixture
def meta_path(tmp_path):
    path, _ = train_and_save(tmp_path)
    tf.reset_default_graph()
    return path + ".meta"


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 2],                 # truncated
    lambda data: b"\x08\x01\x12\x00" + data[4:],         # binary garbage, e.g. a TF protobuf
    lambda data: b"[" * 100000 + b"]" * 100000,          # nested past the recursion limit
], ids=["truncated", "garbage", "deep"])
def test_an_unreadable_file_is_data_loss(meta_path, damage):
    with open(meta_path, "rb") as f:
        data = f.read()
    with open(meta_path, "wb") as f:
        f.write(damage(data))
    with pytest.raises(tf.errors.DataLossError, match="Cannot parse meta graph file"):
        tf.train.import_meta_graph(meta_path)
    assert tf.get_default_graph().get_operations() == []


def _set(path, value):
    def edit(document):
        *parents, last = path
        for key in parents:
            document = document[key]
        document[last] = value
    return edit


def _node(document, name):
    return next(n for n in document["graph"]["nodes"] if n["name"] == name)


@pytest.mark.parametrize("edit,message", [
    (_set(["format"], "TFMetaGraph"), "not a zmtf meta graph"),
    (_set(["version"], 99), "version 99 is not supported"),
    (_set(["arrays", 0, "dtype"], "object"), "dtype 'object'"),
    (_set(["arrays", 0, "shape"], [1000, 1000]), "needs 4000000 bytes"),
    (_set(["arrays", 0, "data"], "!!not base64!!"), "base64"),
    (lambda d: _node(d, "logits").__setitem__("op", "os.system"), "unknown op type"),
    (lambda d: _node(d, "logits").__setitem__("inputs", ["nowhere:0"]), "names no earlier"),
    (_set(["collections", "train_op", 0], {"operation": "missing_op"}), "missing_op"),
    (_set(["collections", "train_op", 0], {"pickle": "gASV"}), "one key of"),
    (_set(["variables", 0, "name"], "logits"), "not a Variable"),
    (_set(["saver_def", "restore_op"], "nope"), "restore_op"),
    (_set(["saver_def", "max_to_keep"], "5"), "max_to_keep"),
    (_set(["saver_def", "variables", 0], {"key": "w", "partitioned": {"name": 1}}), "entry"),
], ids=["format", "version", "dtype", "bytes", "base64", "op", "input", "collection",
        "item-kind", "variable", "saver-op", "saver-type", "saver-entry"])
def test_a_hostile_document_is_a_typed_error_and_changes_nothing(meta_path, edit, message):
    with open(meta_path, encoding="utf-8") as f:
        document = json.load(f)
    edit(document)
    with open(meta_path, "w", encoding="utf-8") as f:
        json.dump(document, f)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        tf.train.import_meta_graph(meta_path)
    assert tf.get_default_graph().get_operations() == []
    assert tf.global_variables() == []


@pytest.mark.parametrize("save_graph_def", [True, False])
def test_the_checkpoint_hook_writes_meta_files_unless_told_not_to(tmp_path, save_graph_def):
    train_op, _ = build_model()
    hooks = [tf.train.StopAtStepHook(last_step=2),
             tf.train.CheckpointSaverHook(str(tmp_path), save_steps=1,
                                          save_graph_def=save_graph_def)]
    with tf.train.MonitoredSession(hooks=hooks) as sess:
        while not sess.should_stop():
            sess.run(train_op, {"x:0": BATCH_X, "y:0": BATCH_Y})
    metas = sorted(p for p in os.listdir(tmp_path) if p.endswith(".meta"))
    assert metas == (["model.ckpt-0.meta", "model.ckpt-1.meta", "model.ckpt-2.meta"]
                     if save_graph_def else [])


def test_a_saver_rebuilds_from_its_saver_def_in_the_same_graph(tmp_path):
    build_model()
    saver = tf.train.Saver(max_to_keep=7)
    twin = tf.train.Saver(saver_def=saver.saver_def)
    assert twin.saver_def == saver.saver_def
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = twin.save(sess, str(tmp_path / "m"))
        sess.run(tf.trainable_variables()[0].assign(np.zeros((3, 2), np.float32)))
        saver.restore(sess, path)
        assert sess.run(tf.trainable_variables()[0].value())[0, 0] == np.float32(0.1)

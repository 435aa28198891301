"""tf.train.Saver: round trips, checkpoint bookkeeping, atomic files, typed errors, a cluster."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports as free_ports
from zmtf.training.saver import (
    CheckpointState, Saver, _format_state, _parse_state, checkpoint_exists, get_checkpoint_state,
    latest_checkpoint,
)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield




def make_model():
    w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    counts = tf.Variable(np.array([1, 2, 3], np.int32), name="layer/counts")
    step = tf.Variable(0, dtype=tf.int64, name="global_step", trainable=False)
    return w, counts, step


def files_in(folder):
    return sorted(os.listdir(folder))


# ---- round trips -----------------------------------------------------------------------------


def test_round_trip_into_a_fresh_session(tmp_path):
    w, counts, step = make_model()
    saver = Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run([w.assign(w * 2.0), counts.assign([7, 8, 9]), step.assign(41)])
        path = saver.save(sess, str(tmp_path / "model.ckpt"))
    assert path == str(tmp_path / "model.ckpt")
    assert checkpoint_exists(path)
    with tf.Session() as sess:                    # nothing initialized: restore is the initializer
        saver.restore(sess, path)
        got_w, got_counts, got_step = sess.run([w, counts, step])
    np.testing.assert_array_equal(got_w, np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    np.testing.assert_array_equal(got_counts, [7, 8, 9])
    assert got_step == 41
    assert (got_w.dtype, got_counts.dtype, np.asarray(got_step).dtype) == (
        np.float32, np.int32, np.int64)


def test_the_file_is_a_plain_npz_without_pickles(tmp_path):
    w, counts, step = make_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = Saver().save(sess, str(tmp_path / "m"))
    with np.load(path + ".npz", allow_pickle=False) as archive:
        assert sorted(archive.files) == ["global_step", "layer/counts", "w"]
        assert archive["global_step"].dtype == np.int64


def test_var_list_dict_uses_its_names_and_restores_across_graphs(tmp_path):
    a = tf.Variable([1.0, 2.0], name="a")
    with tf.Session() as sess:
        sess.run(a.initializer)
        path = Saver({"weights/kernel": a}).save(sess, str(tmp_path / "m"))
    with np.load(path + ".npz", allow_pickle=False) as archive:
        assert archive.files == ["weights/kernel"]
    tf.reset_default_graph()                      # a new graph names its variable differently
    renamed = tf.Variable([0.0, 0.0], name="renamed")
    with tf.Session() as sess:
        Saver(var_list={"weights/kernel": renamed}).restore(sess, path)
        np.testing.assert_array_equal(sess.run(renamed), [1.0, 2.0])


def test_var_list_subset_leaves_the_rest_alone(tmp_path):
    w, counts, step = make_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = Saver([step]).save(sess, str(tmp_path / "m"), global_step=3)
        sess.run(step.assign(99))
        Saver([step]).restore(sess, path)
        assert sess.run(step) == 0
    with np.load(path + ".npz", allow_pickle=False) as archive:
        assert archive.files == ["global_step"]


# ---- global_step, state file, max_to_keep ---------------------------------------------------


def test_global_step_suffix_and_latest_checkpoint(tmp_path):
    w, counts, step = make_model()
    saver = Saver()
    prefix = str(tmp_path / "model.ckpt")
    assert latest_checkpoint(str(tmp_path)) is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        assert saver.save(sess, prefix, global_step=7) == prefix + "-7"
        sess.run(step.assign(12))
        assert saver.save(sess, prefix, global_step=step) == prefix + "-12"   # a variable
    assert latest_checkpoint(str(tmp_path)) == prefix + "-12"
    state = get_checkpoint_state(str(tmp_path))
    assert state == CheckpointState(prefix + "-12", (prefix + "-7", prefix + "-12"))
    text = (tmp_path / "checkpoint").read_text()   # TF's text format, relative paths by default
    assert text == ('model_checkpoint_path: "model.ckpt-12"\n'
                    'all_model_checkpoint_paths: "model.ckpt-7"\n'
                    'all_model_checkpoint_paths: "model.ckpt-12"\n')
    assert saver.last_checkpoints == [prefix + "-7", prefix + "-12"]


def test_pad_step_number_and_custom_latest_filename(tmp_path):
    make_model()
    saver = Saver(pad_step_number=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "m"), global_step=5, latest_filename="latest")
    assert path.endswith("m-00000005")
    assert latest_checkpoint(str(tmp_path)) is None
    assert latest_checkpoint(str(tmp_path), "latest") == path


def test_max_to_keep_deletes_the_oldest_files(tmp_path):
    make_model()
    saver = Saver(max_to_keep=2)
    prefix = str(tmp_path / "m")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(4):
            saver.save(sess, prefix, global_step=i)
    assert files_in(tmp_path) == ["checkpoint", "m-2.meta", "m-2.npz", "m-3.meta", "m-3.npz"]
    assert saver.last_checkpoints == [prefix + "-2", prefix + "-3"]
    assert get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == (
        prefix + "-2", prefix + "-3")


def test_max_to_keep_none_keeps_every_file_but_lists_only_the_latest(tmp_path):
    make_model()
    saver = Saver(max_to_keep=None)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for i in range(3):
            saver.save(sess, str(tmp_path / "m"), global_step=i)
    assert files_in(tmp_path) == ["checkpoint", "m-0.meta", "m-0.npz", "m-1.meta", "m-1.npz",
                                  "m-2.meta", "m-2.npz"]
    assert get_checkpoint_state(str(tmp_path)).all_model_checkpoint_paths == (
        str(tmp_path / "m-2"),)
    assert saver.last_checkpoints == []


def test_saving_the_same_path_again_keeps_one_entry(tmp_path):
    make_model()
    saver = Saver(max_to_keep=2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for step in (1, 2, 2):
            saver.save(sess, str(tmp_path / "m"), global_step=step)
    assert files_in(tmp_path) == ["checkpoint", "m-1.meta", "m-1.npz", "m-2.meta", "m-2.npz"]


def test_write_state_false_touches_only_the_data_and_meta_files(tmp_path):
    make_model()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        Saver().save(sess, str(tmp_path / "m"), write_state=False)
    assert files_in(tmp_path) == ["m.meta", "m.npz"]


def test_state_file_text_format_round_trips_odd_paths():
    state = CheckpointState('dir "x"\\m-1', ("a", 'dir "x"\\m-1'))
    assert _parse_state(_format_state(state), "checkpoint") == state
    tf_written = ('model_checkpoint_path: "m-2"\nall_model_checkpoint_paths: "m-2"\n'
                  'all_model_checkpoint_timestamps: 1700000000.5\nlast_preserved_timestamp: 1.0\n')
    assert _parse_state(tf_written, "checkpoint") == CheckpointState("m-2", ("m-2",))


# ---- atomicity -------------------------------------------------------------------------------


def test_a_crash_before_the_rename_leaves_the_previous_checkpoint(tmp_path, monkeypatch):
    w, counts, step = make_model()
    saver = Saver()
    prefix = str(tmp_path / "m")
    real_replace = os.replace
    calls = []

    def crash_once(src, dst):
        calls.append(dst)
        if len(calls) == 1:
            raise OSError("simulated crash between write and rename")
        real_replace(src, dst)

    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        saver.save(sess, prefix, global_step=1)
        sess.run(step.assign(2))
        monkeypatch.setattr(os, "replace", crash_once)
        with pytest.raises(OSError, match="simulated crash"):
            saver.save(sess, prefix, global_step=2)
        monkeypatch.undo()
    assert calls == [prefix + "-2.npz"]            # the data file, before any state update
    assert files_in(tmp_path) == ["checkpoint", "m-1.meta", "m-1.npz"]   # no partial/temp file
    assert latest_checkpoint(str(tmp_path)) == prefix + "-1"
    assert saver.last_checkpoints == [prefix + "-1"]
    tf.reset_default_graph()
    w, counts, step = make_model()
    with tf.Session() as sess:
        Saver().restore(sess, latest_checkpoint(str(tmp_path)))
        assert sess.run(step) == 0


# ---- errors ----------------------------------------------------------------------------------


def test_restore_of_a_missing_checkpoint_names_it(tmp_path):
    make_model()
    missing = str(tmp_path / "nothing-here")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="nothing-here.*latest_checkpoint"):
            Saver().restore(sess, missing)
        with pytest.raises(ValueError, match="save_path when it is None"):
            Saver().restore(sess, None)


def test_restore_of_a_missing_key_names_it(tmp_path):
    v = tf.Variable(1.0, name="v")
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = Saver().save(sess, str(tmp_path / "m"))
    tf.reset_default_graph()
    tf.Variable(1.0, name="v")
    tf.Variable(2.0, name="w")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.NotFoundError, match="Key w not found in checkpoint"):
            Saver().restore(sess, path)


@pytest.mark.parametrize("saved,wanted,message", [
    (np.zeros(3, np.float32), np.zeros(2, np.float32), r"'w' has shape \[2\] .* shape \[3\]"),
    (np.zeros(3, np.float32), np.zeros(3, np.int32), "'w' is int32 in the graph .* float32"),
])
def test_restore_mismatch_names_the_variable(tmp_path, saved, wanted, message):
    w = tf.Variable(saved, name="w")
    with tf.Session() as sess:
        sess.run(w.initializer)
        path = Saver().save(sess, str(tmp_path / "m"))
    tf.reset_default_graph()
    tf.Variable(wanted, name="w")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            Saver().restore(sess, path)


def test_corrupt_file_is_data_loss(tmp_path):
    make_model()
    (tmp_path / "bad.npz").write_bytes(b"not a zip file")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DataLossError, match="bad.npz"):
            Saver().restore(sess, str(tmp_path / "bad"))


def test_restore_ops_are_colocated_with_their_variables():
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(1.0, name="v")
    Saver(name="my_saver")
    graph = tf.get_default_graph()
    assert graph.get_operation_by_name("my_saver/restore_all").type == "NoOp"
    for name in ("my_saver/restore_value", "my_saver/Assign"):
        assert graph.get_operation_by_name(name).colocation_groups() == [f"loc:@{v.op.name}"]


def test_construction_errors(tmp_path):
    with pytest.raises(ValueError, match="No variables to save"):
        Saver()
    assert Saver(allow_empty=True).save(object(), str(tmp_path / "m")) is None
    v = tf.Variable(1.0, name="v")
    with pytest.raises(ValueError, match="same name: v"):
        Saver([v, v])
    with tf.Session() as sess:
        sess.run(v.initializer)
        with pytest.raises(ValueError, match="Parent directory of .* doesn't exist"):
            Saver().save(sess, str(tmp_path / "no" / "such" / "m"))


# ---- a cluster: variables on two ps tasks, one ps restarted --------------------------------


def test_save_and_restore_through_a_cluster_across_a_ps_restart(tmp_path):
    ports = free_ports(3)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{p}" for p in ports[:2]],
                                 "worker": [f"127.0.0.1:{ports[2]}"]})
    servers = {("ps", 0): tf.train.Server(spec, "ps", 0), ("ps", 1): tf.train.Server(spec, "ps", 1),
               ("worker", 0): tf.train.Server(spec, "worker", 0)}
    try:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
        with tf.device("/job:ps/task:1"):
            step = tf.Variable(0, dtype=tf.int64, name="global_step")
        saver = Saver()
        with tf.Session(servers["worker", 0].target) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([w.assign([5.0, 6.0]), step.assign(30)])
            path = saver.save(sess, str(tmp_path / "model"), global_step=step)
            assert path.endswith("model-30")

            servers["ps", 1].stop()                        # ps1 loses its variables
            servers["ps", 1] = tf.train.Server(spec, "ps", 1, start=True)
            sess.run(w.assign([0.0, 0.0]))
            with pytest.raises(tf.errors.FailedPreconditionError, match="global_step"):
                sess.run(step)

            saver.restore(sess, latest_checkpoint(str(tmp_path)))
            got_w, got_step = sess.run([w, step])
        np.testing.assert_array_equal(got_w, [5.0, 6.0])
        assert got_step == 30
    finally:
        for server in servers.values():
            server.stop()


def test_init_from_checkpoint_maps_scopes_names_and_variables(tmp_path):
    with tf.variable_scope("old"):
        tf.get_variable("w", initializer=tf.constant([[1.0, 2.0]]))
        tf.get_variable("b", initializer=tf.constant([3.0]))
    tf.Variable([7.0, 8.0], name="other")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = tf.train.Saver().save(sess, str(tmp_path / "model.ckpt"))
    tf.reset_default_graph()
    with tf.variable_scope("new"):
        nw = tf.get_variable("w", shape=[1, 2], initializer=tf.zeros_initializer())
        nb = tf.get_variable("b", shape=[1], initializer=tf.zeros_initializer())
    single = tf.Variable([0.0, 0.0], name="single")
    obj = tf.Variable([0.0, 0.0], name="obj")
    untouched = tf.Variable([5.0], name="untouched")
    tf.train.init_from_checkpoint(str(tmp_path), {"old/": "new/", "other": "single"})
    tf.train.init_from_checkpoint(path, {"other:0": obj})
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(nw), [[1.0, 2.0]])
        np.testing.assert_array_equal(sess.run(nb), [3.0])
        np.testing.assert_array_equal(sess.run(single), [7.0, 8.0])
        np.testing.assert_array_equal(sess.run(obj), [7.0, 8.0])
        np.testing.assert_array_equal(sess.run(untouched), [5.0])
    with pytest.raises(ValueError, match="doesn't match with shape of tensor other"):
        tf.train.init_from_checkpoint(path, {"other": "untouched"})
    with pytest.raises(ValueError, match=r"tensor missing \(for variable untouched\) is not found in the checkpoint"):
        tf.train.init_from_checkpoint(path, {"missing": "untouched"})
    with pytest.raises(ValueError, match="tensor nowhere is not found in the graph"):
        tf.train.init_from_checkpoint(path, {"other": "nowhere"})
    with pytest.raises(ValueError, match="should map to scope only"):
        tf.train.init_from_checkpoint(path, {"old/": "new"})


def test_slots_of_a_partitioned_variable_are_saved_whole_as_tf_saves_them(tmp_path):
    """TF keys Adagrad's slots of "s/w" (two shards) as "s/w/Adagrad" [6, 2], not per shard;
    the values are the shards' slots concatenated (mod strategy: id 4 is shard 0, row 2)."""
    with tf.variable_scope("s", partitioner=tf.fixed_size_partitioner(2)):
        w = tf.get_variable("w", [6, 2], initializer=tf.ones_initializer())
    loss = tf.reduce_sum(tf.nn.embedding_lookup(w, [0, 4]) ** 2)
    train = tf.train.AdagradOptimizer(0.1).minimize(loss)   # the optimizer object is dropped
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        tf.train.Saver().save(sess, str(tmp_path / "m"))
    assert sorted(tf.train.list_variables(str(tmp_path))) == [("s/w", [6, 2]), ("s/w/Adagrad", [6, 2])]
    expected = np.full([6, 2], 0.1, np.float32)
    expected[[0, 2]] += 4.0                                  # accumulator 0.1 + (2 * w)^2
    np.testing.assert_allclose(tf.train.load_variable(str(tmp_path), "s/w/Adagrad"), expected, rtol=1e-6)

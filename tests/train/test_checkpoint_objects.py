"""tf.train.Checkpoint and CheckpointManager in graph mode: TF's object-graph format (keys and
object-graph bytes checked against what TF 2.21 wrote: make_tf_object_checkpoint.py), round
trips, retention, variables on ps tasks, and the errors for a checkpoint that does not match."""

from __future__ import annotations

import os

import numpy as np
import pytest

import zmtf as tf
from make_tf_object_checkpoint import FOLDER
from zmtf.testing import running_servers
from zmtf.training.tensor_bundle import BundleReader

TF_CHECKPOINT = os.path.join(FOLDER, "ckpt-1")
GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"
#: the keys TF 2.21 wrote for the graph of build() (make_tf_object_checkpoint.py)
TF_KEYS = [
    "_CHECKPOINTABLE_OBJECT_GRAPH",
    "d/a/.ATTRIBUTES/VARIABLE_VALUE",
    "d/w/.ATTRIBUTES/VARIABLE_VALUE",
    "l/1/.ATTRIBUTES/VARIABLE_VALUE",
    "l/1/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
    "l/1/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE",
    "optimizer/beta1_power/.ATTRIBUTES/VARIABLE_VALUE",
    "optimizer/beta2_power/.ATTRIBUTES/VARIABLE_VALUE",
    "save_counter/.ATTRIBUTES/VARIABLE_VALUE",
    "v/.ATTRIBUTES/VARIABLE_VALUE",
    "v/.OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/VARIABLE_VALUE",
    "v/.OPTIMIZER_SLOT/optimizer/v/.ATTRIBUTES/VARIABLE_VALUE",
]


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def build(v0=(1.0, 2.0), x0=(0.5, 0.25), w0=3, u0=((5.0,),)):
    """The graph of make_tf_object_checkpoint.py; returns (checkpoint, train op, variables)."""
    v = tf.get_variable("v", initializer=list(v0))
    w = tf.Variable(w0, name="w")
    u = tf.Variable([list(r) for r in u0], name="u")
    x = tf.get_variable("x", initializer=list(x0))
    opt = tf.train.AdamOptimizer(0.1)
    train = opt.minimize(tf.reduce_sum(v * v) + tf.reduce_sum(x))
    ckpt = tf.train.Checkpoint(v=v, d={"w": w, "a": u}, l=[w, x],
                               inner=tf.train.Checkpoint(u=u), optimizer=opt)
    beta1, beta2 = opt._get_beta_accumulators(tf.get_default_graph())
    names = {"v": v, "w": w, "u": u, "x": x, "v_m": opt.get_slot(v, "m"),
             "x_v": opt.get_slot(x, "v"), "beta1_power": beta1, "beta2_power": beta2}
    return ckpt, train, names


def adam_step_values():
    """What one Adam(0.1) step from build()'s initial values gives, computed in numpy."""
    v, x = np.array([1.0, 2.0], np.float32), np.array([0.5, 0.25], np.float32)
    out = {}
    lr = 0.1 * np.sqrt(1 - 0.999) / (1 - 0.9)
    for name, var, grad in (("v", v, 2 * v), ("x", x, np.ones_like(x))):
        m, s = 0.1 * grad, 0.001 * grad * grad
        out[name], out[name + "_m"], out[name + "_v"] = var - lr * m / (np.sqrt(s) + 1e-8), m, s
    return {"v": out["v"], "x": out["x"], "v_m": out["v_m"], "x_v": out["x_v"], "w": 3,
            "u": [[5.0]], "beta1_power": 0.81, "beta2_power": 0.999 ** 2}


def test_keys_and_object_graph_bytes_are_tfs(tmp_path):
    ckpt, train, _ = build()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        path = ckpt.save(str(tmp_path / "ckpt"), session=sess)
    assert path == str(tmp_path / "ckpt-1")
    assert [k for k, _ in tf.train.list_variables(path)] == TF_KEYS
    ours = BundleReader(path).tensor(GRAPH_KEY).reshape(-1)[0]
    assert bytes(ours) == bytes(BundleReader(TF_CHECKPOINT).tensor(GRAPH_KEY).reshape(-1)[0])
    assert tf.train.latest_checkpoint(str(tmp_path)) == path


def test_restores_the_checkpoint_tf_wrote():
    ckpt, _, names = build(v0=(0.0, 0.0), x0=(0.0, 0.0), w0=0, u0=((0.0,),))
    status = ckpt.restore(TF_CHECKPOINT)
    with tf.Session() as sess:
        status.assert_consumed().run_restore_ops(sess)
        got = sess.run(names)
        assert sess.run(ckpt.save_counter) == 1
    for name, value in adam_step_values().items():
        np.testing.assert_allclose(got[name], value, rtol=1e-4, err_msg=name)  # float32 1-beta2


def test_round_trip_by_object_not_by_variable_name(tmp_path):
    a = tf.Variable([1.0, 2.0], name="a")
    b = tf.Variable(7, dtype=tf.int64, name="b")
    ckpt = tf.train.Checkpoint(model={"weights": [a]}, step=b)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        ckpt.save(str(tmp_path / "c"), session=sess)
        second = ckpt.save(str(tmp_path / "c"), session=sess)
    assert second.endswith("c-2")
    tf.reset_default_graph()
    renamed = tf.Variable([0.0, 0.0], name="renamed")
    step = tf.Variable(0, dtype=tf.int64, name="other")
    ckpt = tf.train.Checkpoint(step=step, model={"weights": [renamed]})
    status = ckpt.restore(tf.train.latest_checkpoint(str(tmp_path)))
    with tf.Session() as sess:
        status.assert_consumed()
        status.initialize_or_restore(sess)
        assert sess.run([renamed, step, ckpt.save_counter]) == [pytest.approx([1.0, 2.0]), 7, 2]


def test_write_neither_numbers_nor_records(tmp_path):
    v = tf.Variable(1.5, name="v")
    ckpt = tf.train.Checkpoint(v=v)
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = ckpt.write(str(tmp_path / "plain"), session=sess)
    assert path == str(tmp_path / "plain")
    assert not os.path.exists(tmp_path / "checkpoint")
    assert [k for k, _ in tf.train.list_variables(path)] == [GRAPH_KEY, "v/.ATTRIBUTES/VARIABLE_VALUE"]


def test_manager_numbers_keeps_max_to_keep_and_adopts_state(tmp_path):
    v = tf.Variable(0.0, name="v")
    ckpt = tf.train.Checkpoint(v=v)
    manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        for _ in range(4):
            sess.run(v.assign_add(1.0))
            manager.save()
        assert manager.save(checkpoint_number=100).endswith("ckpt-100")
        assert sess.run(ckpt.save_counter) == 5
    kept = [str(tmp_path / "ckpt-4"), str(tmp_path / "ckpt-100")]
    assert manager.checkpoints == kept and manager.latest_checkpoint == kept[-1]
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "ckpt-100.data-00000-of-00001",
                                            "ckpt-100.index", "ckpt-4.data-00000-of-00001",
                                            "ckpt-4.index"]
    assert (tmp_path / "checkpoint").read_text() == (
        'model_checkpoint_path: "ckpt-100"\nall_model_checkpoint_paths: "ckpt-4"\n'
        'all_model_checkpoint_paths: "ckpt-100"\n')
    assert tf.train.latest_checkpoint(str(tmp_path)) == kept[-1]
    again = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=1, checkpoint_name="m")
    assert again.checkpoints == kept
    with tf.Session() as sess:
        sess.run([v.initializer, ckpt.save_counter.initializer])
        again.save()
    assert sorted(os.listdir(tmp_path)) == ["checkpoint", "m-1.data-00000-of-00001", "m-1.index"]


def test_manager_errors():
    ckpt = tf.train.Checkpoint(v=tf.Variable(0.0))
    with pytest.raises(ValueError, match="positive integer or `None` for `max_to_keep`"):
        tf.train.CheckpointManager(ckpt, "/tmp/unused", max_to_keep=0)
    with pytest.raises(ValueError, match="default session"):
        tf.train.CheckpointManager(ckpt, "/tmp/unused-zmtf", max_to_keep=1).save()
    with pytest.raises(ValueError, match="needs a session"):
        ckpt.save("/tmp/unused-zmtf/x")


def test_variables_on_ps_tasks_save_and_restore_through_a_cluster(tmp_path):
    with running_servers({"ps": 2, "worker": 1}) as servers:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.array([1.0, 2.0], np.float32), name="w")
        with tf.device("/job:ps/task:1"):
            step = tf.Variable(0, dtype=tf.int64, name="step")
        ckpt = tf.train.Checkpoint(w=w, step=step)
        manager = tf.train.CheckpointManager(ckpt, str(tmp_path), max_to_keep=3)
        with tf.Session(servers["worker", 0].target) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run([w.assign([5.0, 6.0]), step.assign(30)])
            path = manager.save()
            sess.run([w.assign([0.0, 0.0]), step.assign(0)])
            ckpt.restore(path).assert_consumed().run_restore_ops(sess)
            assert sess.run(step) == 30
            np.testing.assert_array_equal(sess.run(w), [5.0, 6.0])


def test_python_object_missing_from_checkpoint_fails_assertions(tmp_path):
    a = tf.Variable(1.0, name="a")
    with tf.Session() as sess:
        sess.run(a.initializer)
        path = tf.train.Checkpoint(v=a).save(str(tmp_path / "c"), session=sess)
    tf.reset_default_graph()
    a, b = tf.Variable(0.0, name="a"), tf.Variable(2.0, name="b")
    status = tf.train.Checkpoint(v=a, extra=b).restore(path)
    message = ("Found 1 Python objects that were not bound to checkpointed values, likely due "
               "to changes in the Python program. Showing 1 of 1 unmatched objects: ")
    with pytest.raises(AssertionError, match=message + r"\[<tf.Variable 'b:0'"):
        status.assert_consumed()
    with tf.Session() as sess:
        status.initialize_or_restore(sess)   # restores a, initializes b
        assert sess.run([a, b]) == [1.0, 2.0]


def test_checkpoint_value_without_python_object_fails_assert_consumed():
    v = tf.get_variable("v", initializer=[0.0, 0.0])
    status = tf.train.Checkpoint(v=v).restore(TF_CHECKPOINT)
    status.assert_existing_objects_matched()
    with pytest.raises(AssertionError, match="Unresolved object in checkpoint"):
        status.assert_consumed()
    with tf.Session() as sess:
        status.run_restore_ops(sess)
        np.testing.assert_allclose(sess.run(v), adam_step_values()["v"], rtol=1e-5)


def test_optimizer_that_never_ran_leaves_its_saved_variables_unresolved():
    ckpt, _, _ = build()
    ckpt.optimizer = tf.train.AdamOptimizer(0.1)   # no beta powers, no slots: minimize() never ran
    ckpt.restore(TF_CHECKPOINT).assert_existing_objects_matched()
    with pytest.raises(AssertionError, match=r"Unresolved object in checkpoint \(root\).optimizer.beta1_power"):
        ckpt.restore(TF_CHECKPOINT).assert_consumed()


def test_restore_none_only_initializes():
    v = tf.Variable(4.0, name="v")
    ckpt = tf.train.Checkpoint(v=v)
    status = ckpt.restore(None)
    with pytest.raises(AssertionError, match=r"No checkpoint specified \(save_path=None\)"):
        status.assert_consumed()
    with tf.Session() as sess:
        status.initialize_or_restore(sess)
        assert sess.run([v, ckpt.save_counter]) == [4.0, 0]


def test_mismatched_shape_and_wrong_files_raise_tf_errors(tmp_path):
    v = tf.get_variable("v", initializer=[0.0, 0.0, 0.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="has shape \\[3\\] in the graph"):
        tf.train.Checkpoint(v=v).restore(TF_CHECKPOINT)
    with pytest.raises(tf.errors.NotFoundError, match="Failed to find any matching files"):
        tf.train.Checkpoint(v=v).restore(str(tmp_path / "nothing"))
    with tf.Session() as sess:
        sess.run(v.initializer)
        saved = tf.train.Saver([v], write_version=tf.train.SaverDef.V2).save(
            sess, str(tmp_path / "named"), write_meta_graph=False)
    with pytest.raises(NotImplementedError, match="name-based checkpoint"):
        tf.train.Checkpoint(v=v).restore(saved)
    with pytest.raises(ValueError, match="was expecting a trackable object"):
        tf.train.Checkpoint(n=3)

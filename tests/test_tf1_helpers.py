"""TF1 helpers that scripts use around the graph: tf.app.flags and tf.app.run, tf.logging,
the learning-rate schedules, tf.layers.dropout and the to_* casts."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import zmtf as tf

SCRIPT = textwrap.dedent('''
    import zmtf as tf
    tf.app.flags.DEFINE_string("job_name", "worker", "ps or worker")
    tf.app.flags.DEFINE_integer("task_index", 0, "index")
    tf.app.flags.DEFINE_float("lr", 0.1, "learning rate")
    tf.app.flags.DEFINE_boolean("sync", False, "sync replicas")
    tf.app.flags.DEFINE_list("hosts", [], "hosts")
    FLAGS = tf.app.flags.FLAGS

    def main(argv):
        tf.logging.set_verbosity(tf.logging.INFO)
        tf.logging.info("job %s", FLAGS.job_name)
        print(FLAGS.job_name, FLAGS.task_index, FLAGS.lr, FLAGS.sync, FLAGS.hosts, argv[1:])
        return 3

    if __name__ == "__main__":
        tf.app.run()
''')


RUNS = {   # the script's command lines the tests below check
    "flags": ("--job_name=ps", "--task_index", "2", "--sync", "--hosts=a:1,b:2", "--lr=0.5", "extra"),
    "defaults": ("--nosync",),
    "bad": ("--task_index=two",),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Each of RUNS run as a script, the processes at once (each is mostly its start-up)."""
    path = tmp_path_factory.mktemp("flags") / "script.py"
    path.write_text(SCRIPT)
    procs = {name: subprocess.Popen([sys.executable, str(path), *args], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, args in RUNS.items()}
    done = {}
    try:
        for name, proc in procs.items():
            out, err = proc.communicate(timeout=60)
            done[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


def test_app_run_parses_the_flags_and_passes_the_rest_to_main(runs):
    done = runs["flags"]
    assert done.returncode == 3, done.stderr
    assert done.stdout.split("\n")[0] == "ps 2 0.5 True ['a:1', 'b:2'] ['extra']"
    assert "INFO:tensorflow:job ps" in done.stderr


def test_defaults_and_no_prefixed_booleans(runs):
    done = runs["defaults"]
    assert done.stdout.split("\n")[0] == "worker 0 0.1 False [] []"


def test_a_bad_flag_value_exits_with_a_message(runs):
    done = runs["bad"]
    assert done.returncode == 2 and "task_index" in done.stderr


def test_flags_are_defined_once():
    name = "zmtf_test_flag_once"
    tf.app.flags.DEFINE_string(name, "x", "")
    with pytest.raises(ValueError, match="defined twice"):
        tf.app.flags.DEFINE_string(name, "y", "")
    assert tf.flags.FLAGS is tf.app.flags.FLAGS


@pytest.mark.parametrize("schedule, expected", [
    (lambda s: tf.train.polynomial_decay(0.1, s, 10, 0.01, power=2.0), [0.1, 0.0541, 0.01, 0.01]),
    (lambda s: tf.train.polynomial_decay(0.1, s, 10, 0.01, cycle=True), [0.1, 0.073, 0.01, 0.0325]),
    (lambda s: tf.train.inverse_time_decay(0.1, s, 5, 0.5), [0.1, 0.1 / 1.3, 0.05, 0.04]),
    (lambda s: tf.train.natural_exp_decay(0.1, s, 5, 0.5, staircase=True),
     [0.1, 0.1, 0.1 * np.exp(-1), 0.1 * np.exp(-1.5)]),
    (lambda s: tf.train.piecewise_constant(s, [3, 6], [1.0, 0.5, 0.1]), [1.0, 1.0, 0.1, 0.1]),
    # cosine values as TF 2.21 printed them (scratch cross-check), for steps 0, 3, 10, 15
    (lambda s: tf.train.cosine_decay(0.1, s, 10, alpha=0.1),
     [0.1, 0.1 * (0.9 * 0.5 * (1 + np.cos(np.pi * 0.3)) + 0.1), 0.01, 0.01]),
    (lambda s: tf.train.linear_cosine_decay(0.1, s, 10, num_periods=2.0, alpha=0.05, beta=0.002),
     [0.1052, 0.1 * ((0.05 + 0.7) * 0.5 * (1 + np.cos(np.pi * 1.2)) + 0.002), 0.0052, 0.0052]),
], ids=["polynomial", "polynomial_cycle", "inverse_time", "natural_exp_staircase", "piecewise",
        "cosine", "linear_cosine"])
def test_learning_rate_schedules_follow_tfs_formulas(schedule, expected):
    step = tf.placeholder(tf.int64, [])
    lr = schedule(step)
    with tf.Session() as sess:
        got = [float(sess.run(lr, {step: k})) for k in (0, 3, 10, 15)]
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_dropout_layer_drops_only_when_training():
    x = tf.ones([4000])
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.dropout(x, rate=0.25, training=training)
    with tf.Session() as sess:
        on, off = sess.run(y, {training: True}), sess.run(y, {training: False})
        fixed = sess.run(tf.layers.dropout(x, rate=0.25))
    assert 0.2 < np.mean(on == 0) < 0.3 and np.allclose(on[on > 0], 1 / 0.75)
    np.testing.assert_array_equal(off, 1.0)
    np.testing.assert_array_equal(fixed, 1.0)


def test_to_casts():
    x = tf.constant([1.7, -2.2])
    with tf.Session() as sess:
        assert sess.run(tf.to_int32(x)).dtype == np.int32
        assert sess.run(tf.to_int64(x)).tolist() == [1, -2]
        assert sess.run(tf.to_double(x)).dtype == np.float64


def test_tf_math_holds_the_top_level_math_ops():
    assert tf.math.log is tf.log and tf.math.reduce_sum is tf.reduce_sum
    with tf.Session() as sess:
        assert sess.run(tf.math.squared_difference(3.0, 1.0)) == 4.0


def test_trig_log1p_expm1_and_logical_xor():
    x = np.float32([0.0, 0.5, 2.0])
    with tf.Session() as sess:
        got = sess.run([tf.sin(x), tf.cos(x), tf.log1p(x), tf.math.expm1(x),
                        tf.logical_xor([True, True, False], [True, False, False])])
    for value, expected in zip(got[:4], [np.sin(x), np.cos(x), np.log1p(x), np.expm1(x)]):
        np.testing.assert_allclose(value, expected, rtol=1e-6)
    assert got[4].tolist() == [False, True, False]


def l2(scale: float):
    return lambda w: scale * tf.nn.l2_loss(w)


def test_regularizers_collect_their_losses_and_the_total_adds_them():
    tf.reset_default_graph()
    x = tf.constant(np.ones((2, 3), np.float32))
    with tf.variable_scope("net", regularizer=l2(0.5)):
        w = tf.get_variable("w", [3, 2], initializer=tf.ones_initializer())
    hidden = tf.layers.dense(x, 4, kernel_regularizer=l2(0.1), name="dense",
                             kernel_initializer=tf.ones_initializer())
    with tf.variable_scope("net", reuse=True):
        assert tf.get_variable("w") is w          # reuse adds no second loss
    regs = tf.losses.get_regularization_losses()
    assert len(regs) == 2
    assert regs[0].op.name.startswith("net/w/Regularizer/")
    data_loss = tf.losses.mean_squared_error(tf.zeros([2, 4]), hidden)
    assert tf.losses.get_losses() == [data_loss]
    total = tf.losses.get_total_loss()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        reg, tot, data = sess.run([tf.losses.get_regularization_loss(), total, data_loss])
    assert reg == pytest.approx(0.5 * 6 / 2 + 0.1 * 12 / 2)     # l2_loss = sum(w^2) / 2
    assert tot == pytest.approx(reg + data)
    assert tf.losses.get_regularization_losses("dense") == regs[1:]


def test_partitioned_variables_are_regularized_per_shard_and_no_losses_is_zero():
    tf.reset_default_graph()
    with tf.Session() as sess:
        assert sess.run(tf.losses.get_regularization_loss()) == 0.0
    with tf.variable_scope("emb", partitioner=tf.fixed_size_partitioner(2)):
        tf.get_variable("table", [6, 2], regularizer=l2(1.0))
    assert len(tf.losses.get_regularization_losses()) == 2
    with pytest.raises(ValueError, match="No losses found"):
        tf.losses.get_total_loss(add_regularization_losses=False)


def test_a_checkpoint_reads_back_without_a_graph(tmp_path):
    tf.reset_default_graph()
    tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3), name="w")
    tf.Variable(7, dtype=tf.int64, name="step")
    saver = tf.train.Saver()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model.ckpt"), global_step=3)
    reader = tf.train.NewCheckpointReader(path)
    assert reader.get_variable_to_shape_map() == {"w": [2, 3], "step": []}
    assert reader.get_variable_to_dtype_map()["step"] == tf.int64
    np.testing.assert_array_equal(reader.get_tensor("w"), np.arange(6).reshape(2, 3))
    assert tf.train.list_variables(str(tmp_path)) == [("step", []), ("w", [2, 3])]
    assert tf.train.load_variable(str(tmp_path), "step:0") == 7
    with pytest.raises(tf.errors.NotFoundError, match="Key nope not found"):
        reader.get_tensor("nope")
    with pytest.raises(tf.errors.NotFoundError):
        tf.train.NewCheckpointReader(str(tmp_path / "missing.ckpt"))


def test_reduce_std_and_variance():
    x = np.arange(12, dtype=np.float32).reshape(3, 4) ** 1.5
    with tf.Session() as sess:
        std, var = sess.run([tf.math.reduce_std(x, axis=1), tf.math.reduce_variance(x, keepdims=True)])
    np.testing.assert_allclose(std, x.std(axis=1), rtol=1e-5)
    np.testing.assert_allclose(var, x.var(keepdims=True), rtol=1e-5)


def test_asserts_guard_the_ops_that_depend_on_them():
    x = tf.placeholder(tf.float32, [3])
    checks = [tf.assert_positive(x, message="x must be positive"), tf.assert_less(x, 10.0),
              tf.assert_equal(tf.shape(x), [3]), tf.assert_non_negative(x),
              tf.assert_greater(x, -1.0), tf.Assert(tf.reduce_all(x < 5.0), ["x too big:", x])]
    with tf.control_dependencies(checks):
        y = tf.identity(x * 2)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: [1, 2, 3]}), [2, 4, 6])
        with pytest.raises(tf.errors.InvalidArgumentError,
                           match=r"assertion failed: \[x must be positive\] \[Condition x > 0 did not "
                                 r"hold element-wise:\] \[x \(Placeholder:0\) =\] \[\[1. 0. 3.\]\]"):
            sess.run(y, {x: [1, 0, 3]})                     # only assert_positive fails
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[x too big:\] \[\[1. 2. 7.\]\]"):
            sess.run(y, {x: [1, 2, 7]})
    with pytest.raises(TypeError, match="must be bool"):
        tf.Assert(x, ["not a condition"])


def test_check_numerics_names_nan_and_inf_in_values_and_gradients():
    x = tf.placeholder(tf.float32, [2])
    logged = tf.check_numerics(tf.log(x), "log of x")
    root = tf.verify_tensor_all_finite(tf.sqrt(x), "sqrt of x")
    checked = tf.check_numerics(x, "x")
    grad = tf.gradients(tf.reduce_sum(tf.sqrt(checked)), x)[0]   # the gradient into it is checked
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(logged, {x: [1.0, np.e]}), [0.0, 1.0], rtol=1e-6)
        with pytest.raises(tf.errors.InvalidArgumentError, match="log of x : Tensor had Inf values"):
            sess.run(logged, {x: [1.0, 0.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="sqrt of x : Tensor had NaN values"):
            sess.run(root, {x: [1.0, -1.0]})
        with pytest.raises(tf.errors.InvalidArgumentError, match="detected in gradient"):
            sess.run(grad, {x: [1.0, 0.0]})                 # d sqrt(x) at 0 is inf
    with pytest.raises(TypeError, match="float tensors"):
        tf.check_numerics(tf.constant([1, 2]), "ints")


def test_tensordot_norm_and_matrix_transpose_match_numpy():
    # TF 2.21 printed the same values, gradients included (scratch cross-check)
    rng = np.random.default_rng(0)
    a_np = rng.normal(size=(2, 3, 4))
    b_np = rng.normal(size=(4, 3, 5))
    a, b = tf.constant(a_np), tf.constant(b_np)
    dot = tf.tensordot(a, b, [[1, 2], [1, 0]])
    with tf.Session() as sess:
        got = sess.run([dot, tf.tensordot(a, b[:, 0, :], 1), tf.norm(a), tf.norm(a, ord=1, axis=2),
                        tf.norm(a, ord=np.inf, axis=-1, keepdims=True), tf.norm(a, ord=3, axis=1),
                        tf.norm(a, axis=[1, 2]), tf.matrix_transpose(a),
                        tf.gradients(tf.reduce_sum(dot), a)[0]])
    want = [np.tensordot(a_np, b_np, [[1, 2], [1, 0]]), np.tensordot(a_np, b_np[:, 0, :], 1),
            np.linalg.norm(a_np), np.abs(a_np).sum(2), np.abs(a_np).max(-1, keepdims=True),
            (np.abs(a_np) ** 3).sum(1) ** (1 / 3), np.sqrt((a_np ** 2).sum((1, 2))),
            np.swapaxes(a_np, 1, 2), np.broadcast_to(b_np.sum(2).T, (2, 3, 4))]
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-10)
    with pytest.raises(ValueError, match="differ in size"):
        tf.tensordot(a, b, [[0], [0]])
    with pytest.raises(ValueError, match="matrix norm ord=1 is not built"):
        tf.norm(a, ord=1, axis=[1, 2])


def test_case_picks_the_first_true_predicate_and_checks_its_contract():
    x = tf.placeholder(tf.int32, [])
    with_default = tf.case([(x < 0, lambda: tf.constant(-1.0)), (x < 5, lambda: tf.constant(5.0))],
                           default=lambda: tf.constant(99.0))
    no_default = tf.case([(x < 0, lambda: tf.constant(-1.0)), (x < 5, lambda: tf.constant(5.0))])
    exclusive = tf.case({x < 3: lambda: tf.constant(1.0), x > 1: lambda: tf.constant(2.0)},
                        default=lambda: tf.constant(0.0), exclusive=True)
    with tf.Session() as sess:
        assert [sess.run(with_default, {x: v}) for v in (-3, 2, 7)] == [-1.0, 5.0, 99.0]
        assert [sess.run(no_default, {x: v}) for v in (-3, 2)] == [-1.0, 5.0]
        with pytest.raises(tf.errors.InvalidArgumentError, match="None of the conditions evaluated"):
            sess.run(no_default, {x: 7})
        assert sess.run(exclusive, {x: 0}) == 1.0 and sess.run(exclusive, {x: 4}) == 2.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="More than one condition"):
            sess.run(exclusive, {x: 2})


def test_small_tf1_conveniences():
    x = tf.constant([-50.0, 0.0, 3.0])
    a, b = tf.identity_n([x, tf.constant([1, 2])])
    shapes = tf.shape_n([x, tf.zeros([2, 5])])
    with tf.Session() as sess:
        got = sess.run([tf.log_sigmoid(x), tf.scalar_mul(2.0, x), a, b, shapes,
                        tf.reverse_v2(x, [0])])
    np.testing.assert_allclose(got[0], [-50.0, -np.log(2.0), -np.log1p(np.exp(-3.0))], rtol=1e-6)
    np.testing.assert_array_equal(got[1], [-100.0, 0.0, 6.0])
    np.testing.assert_array_equal(got[2], [-50.0, 0.0, 3.0])
    assert got[3].tolist() == [1, 2] and [s.tolist() for s in got[4]] == [[3], [2, 5]]
    np.testing.assert_array_equal(got[5], [3.0, 0.0, -50.0])
    with pytest.raises(ValueError, match="must be 0-d"):
        tf.scalar_mul([1.0, 2.0], x)


def test_unique_keeps_the_order_of_first_appearance_as_tf():
    # TF 2.21 gives y=[4, 1, 7, 9], idx=[0, 1, 0, 2, 1, 1, 3], count=[2, 3, 1, 1]
    ids = tf.placeholder(tf.int64, [None])
    y, idx, count = tf.unique_with_counts(ids)
    y2, idx2 = tf.unique(tf.constant([2.5, -1.0, 2.5]), out_idx=tf.int64)
    with tf.Session() as sess:
        got = sess.run([y, idx, count], {ids: [4, 1, 4, 7, 1, 1, 9]})
        assert [g.tolist() for g in got] == [[4, 1, 7, 9], [0, 1, 0, 2, 1, 1, 3], [2, 3, 1, 1]]
        assert got[1].dtype == np.int32
        empty = sess.run([y, idx], {ids: []})
        assert [e.size for e in empty] == [0, 0]
        values, where = sess.run([y2, idx2])
    assert values.tolist() == [2.5, -1.0] and where.tolist() == [0, 1, 0] and where.dtype == np.int64
    with pytest.raises(ValueError, match="1-D tensor"):
        tf.unique(tf.zeros([2, 2]))

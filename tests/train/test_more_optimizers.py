"""Adadelta, FTRL and ExponentialMovingAverage: steps against numpy transcriptions of TF's
formulas (training_ops.cc, moving_averages.py), slots and updates beside their variable, the
averages restored by a Saver, and small models that learn."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.training.device_setter import replica_device_setter

W0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])
C = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]])  # loss = sum(C * w^2) / 2: grad = C * w


@pytest.fixture(autouse=True)
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


def quadratic_loss(dtype):
    w = tf.Variable(W0.astype(dtype.np), name="w")
    return w, tf.reduce_sum(tf.constant(C.astype(dtype.np)) * w * w) / 2


def run_steps(train_op, fetches, steps: int) -> list:
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = []
        for _ in range(steps):
            sess.run(train_op)
            out.append(sess.run(fetches))
        return out


# ---- numpy references: TF's kernels line by line --------------------------------------------
def np_adadelta(var, accum, accum_update, grad, lr, rho, epsilon):
    accum = accum * rho + grad * grad * (1 - rho)
    update = np.sqrt(accum_update + epsilon) / np.sqrt(accum + epsilon) * grad
    accum_update = accum_update * rho + update * update * (1 - rho)
    return var - update * lr, accum, accum_update


def np_ftrl(var, accum, linear, grad, lr, l1, l2, lr_power, shrinkage=0.0):
    new_accum = accum + grad * grad
    shrunk = grad + 2 * shrinkage * var
    linear = linear + shrunk - (new_accum ** -lr_power - accum ** -lr_power) / lr * var
    quadratic = new_accum ** -lr_power / lr + 2 * l2
    var = np.where(np.abs(linear) > l1, (l1 * np.sign(linear) - linear) / quadratic, 0.0)
    return var, new_accum, linear


# float64 and float32 run the fused numba loop, float16 the numpy fallback
DTYPES = [(tf.float64, 1e-12), (tf.float32, 2e-5), (tf.float16, 2e-2)]


# ---- Adadelta -------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=lambda d: getattr(d, "name", ""))
def test_adadelta_steps_follow_tf_formulas(dtype, rtol):
    w, loss = quadratic_loss(dtype)
    opt = tf.train.AdadeltaOptimizer(1.0, rho=0.875, epsilon=2.0 ** -20)
    train = opt.minimize(loss)
    fetches = [w, opt.get_slot(w, "accum"), opt.get_slot(w, "accum_update")]
    var, accum, accum_update = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for got in run_steps(train, fetches, 4):
        var, accum, accum_update = np_adadelta(var, accum, accum_update, C * var, 1.0, 0.875,
                                               2.0 ** -20)
        for g, want in zip(got, (var, accum, accum_update)):
            np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol * 1e-3)
    assert opt.get_slot_names() == ["accum", "accum_update"]
    assert [s.op.name for s in fetches[1:]] == ["w/Adadelta", "w/Adadelta_1"]


def test_adadelta_sparse_updates_only_the_gathered_rows():
    table = tf.Variable(np.arange(12.0).reshape(6, 2) / 10, name="emb")
    weights = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]])
    loss = tf.reduce_sum(tf.gather(table, [1, 4, 1]) * weights)
    opt = tf.train.AdadeltaOptimizer(0.5, rho=0.875, epsilon=2.0 ** -20)
    train = opt.minimize(loss)
    fetches = [table, opt.get_slot(table, "accum"), opt.get_slot(table, "accum_update")]
    var = np.arange(12.0).reshape(6, 2) / 10
    accum, accum_update = np.zeros((6, 2)), np.zeros((6, 2))
    rows, grad = np.array([1, 4]), np.array([weights[0] + weights[2], weights[1]])
    for got in run_steps(train, fetches, 3):
        new = np_adadelta(var[rows], accum[rows], accum_update[rows], grad, 0.5, 0.875, 2.0 ** -20)
        for array, part in zip((var, accum, accum_update), new):
            array[rows] = part
        for g, want in zip(got, (var, accum, accum_update)):
            np.testing.assert_allclose(g, want, rtol=1e-12)


# ---- FTRL ---------------------------------------------------------------------------------
FTRL_CASES = {
    "plain": dict(),
    "l1_l2": dict(l1_regularization_strength=0.125, l2_regularization_strength=0.25),
    "power": dict(learning_rate_power=-0.75, l1_regularization_strength=0.125,
                  l2_regularization_strength=0.25),
    "shrinkage": dict(l1_regularization_strength=0.125, l2_regularization_strength=0.25,
                      l2_shrinkage_regularization_strength=0.375),
}


def _ftrl_reference_args(kwargs):
    return dict(l1=kwargs.get("l1_regularization_strength", 0.0),
                l2=kwargs.get("l2_regularization_strength", 0.0),
                lr_power=kwargs.get("learning_rate_power", -0.5),
                shrinkage=kwargs.get("l2_shrinkage_regularization_strength", 0.0))


@pytest.mark.parametrize("dtype,rtol", DTYPES, ids=lambda d: getattr(d, "name", ""))
@pytest.mark.parametrize("case", sorted(FTRL_CASES))
def test_ftrl_steps_follow_tf_formulas(case, dtype, rtol):
    w, loss = quadratic_loss(dtype)
    opt = tf.train.FtrlOptimizer(0.5, initial_accumulator_value=0.25, **FTRL_CASES[case])
    train = opt.minimize(loss)
    fetches = [w, opt.get_slot(w, "accum"), opt.get_slot(w, "linear")]
    var, accum, linear = W0.copy(), np.full_like(W0, 0.25), np.zeros_like(W0)
    for got in run_steps(train, fetches, 4):
        var, accum, linear = np_ftrl(var, accum, linear, C * var, 0.5,
                                     **_ftrl_reference_args(FTRL_CASES[case]))
        for g, want in zip(got, (var, accum, linear)):
            np.testing.assert_allclose(g, want, rtol=rtol, atol=rtol * 1e-2)
    op_type = "ApplyFtrlV2" if case == "shrinkage" else "ApplyFtrl"
    assert w.graph.get_operation_by_name(f"Ftrl/update_w/{op_type}").type == op_type
    assert [s.op.name for s in fetches[1:]] == ["w/Ftrl", "w/Ftrl_1"]


@pytest.mark.parametrize("case", ["l1_l2", "shrinkage"])
@pytest.mark.parametrize("dtype", [tf.float64, tf.float32])
def test_sparse_ftrl_sums_repeated_ids_and_leaves_other_rows(case, dtype):
    start = (np.arange(12.0).reshape(6, 2) - 5) / 4
    table = tf.Variable(start.astype(dtype.np), name="emb")
    weights = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25], [2.0, 1.0]])
    ids = tf.constant([3, 0, 3, 3])
    loss = tf.reduce_sum(tf.gather(table, ids) * tf.constant(weights.astype(dtype.np)))
    opt = tf.train.FtrlOptimizer(0.5, **FTRL_CASES[case])
    train = opt.minimize(loss)
    update = next(op for op in table.graph.get_operations() if "SparseApplyFtrl" in op.type)
    assert update.type == ("SparseApplyFtrlV2" if case == "shrinkage" else "SparseApplyFtrl")
    fetches = [table, opt.get_slot(table, "accum"), opt.get_slot(table, "linear")]
    var, accum, linear = start.copy(), np.full((6, 2), 0.1), np.zeros((6, 2))
    rows, grad = np.array([0, 3]), np.array([weights[1], weights[0] + weights[2] + weights[3]])
    for got in run_steps(train, fetches, 3):
        new = np_ftrl(var[rows], accum[rows], linear[rows], grad, 0.5,
                      **_ftrl_reference_args(FTRL_CASES[case]))
        for array, part in zip((var, accum, linear), new):
            array[rows] = part
        for g, want in zip(got, (var, accum, linear)):
            np.testing.assert_allclose(g, want, rtol=1e-12 if dtype == tf.float64 else 2e-5,
                                       atol=1e-6)
    np.testing.assert_array_equal(got[0][[1, 2, 4, 5]], start[[1, 2, 4, 5]].astype(dtype.np))


def test_sparse_ftrl_rejects_out_of_range_ids():
    table = tf.Variable(np.zeros((3, 2)), name="emb")
    loss = tf.reduce_sum(tf.gather(table, tf.placeholder_with_default([0], [None])))
    train = tf.train.FtrlOptimizer(0.5).minimize(loss)
    grad_op = table.graph.get_operation_by_name("Ftrl/update_emb/SparseApplyFtrl")
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        message = r"indices\[0\] = 7 is not in \[0, 3\)"
        with pytest.raises(tf.errors.InvalidArgumentError, match=message):
            sess.run(train, {grad_op.inputs[4]: [7]})


@pytest.mark.parametrize("kwargs,message", [
    (dict(learning_rate_power=0.5), "learning_rate_power"),
    (dict(initial_accumulator_value=-0.1), "initial_accumulator_value"),
    (dict(l1_regularization_strength=-1.0), "l1_regularization_strength"),
    (dict(l2_regularization_strength=-1.0), "l2_regularization_strength"),
    (dict(l2_shrinkage_regularization_strength=-1.0), "l2_shrinkage_regularization_strength"),
])
def test_ftrl_rejects_bad_hyperparameters(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tf.train.FtrlOptimizer(0.1, **kwargs)


# ---- colocation ---------------------------------------------------------------------------
@pytest.mark.parametrize("make_optimizer,name,op_type", [
    (lambda: tf.train.AdadeltaOptimizer(1.0), "Adadelta", "ApplyAdadelta"),
    (lambda: tf.train.FtrlOptimizer(0.5), "Ftrl", "ApplyFtrl"),
])
def test_slots_and_updates_sit_with_their_variable(graph, make_optimizer, name, op_type):
    with tf.device(replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
        w1 = tf.Variable(W0, name="w1")
        w2 = tf.Variable(W0, name="w2")
        opt = make_optimizer()
        opt.minimize(tf.reduce_sum(w1 * w2))
    assert (w1.device, w2.device) == ("/job:ps/task:0", "/job:ps/task:1")
    for var in (w1, w2):
        for slot_name in opt.get_slot_names():
            slot = opt.get_slot(var, slot_name)
            assert slot.device == var.device and not slot.trainable
            assert slot.op.colocation_groups() == [f"loc:@{var.op.name}"]
        update = graph.get_operation_by_name(f"{name}/update_{var.op.name}/{op_type}")
        assert update.device == var.device
        assert update.colocation_groups() == var.op.colocation_groups()


# ---- small models learn ------------------------------------------------------------------
@pytest.mark.parametrize("make_optimizer", [
    lambda: tf.train.AdadeltaOptimizer(0.5, rho=0.9, epsilon=0.1),
    lambda: tf.train.FtrlOptimizer(1.0),
    lambda: tf.train.FtrlOptimizer(1.0, l2_regularization_strength=1e-4),
], ids=["adadelta", "ftrl", "ftrl_l2"])
def test_linear_regression_learns(make_optimizer):
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    ys = xs @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3
    x, y = tf.placeholder(tf.float32, [None, 3]), tf.placeholder(tf.float32, [None, 1])
    w, b = tf.Variable(tf.zeros([3, 1])), tf.Variable(tf.zeros([1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    train = make_optimizer().minimize(loss)
    feed = {x: xs, y: ys}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(200):
            sess.run(train, feed)
        assert sess.run(loss, feed) < 1e-2


# ---- ExponentialMovingAverage -----------------------------------------------------------------
def _ema_reference(shadow, values, decays):
    out = []
    for value, decay in zip(values, decays):
        shadow = shadow - (np.float32(1) - np.float32(decay)) * (shadow - value)
        out.append(shadow)
    return out


VALUES = [np.array([1.0, -2.0], np.float32) * k for k in (1, 3, -2, 5)]


def test_ema_tracks_the_variable_over_several_applies(graph):
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.array([0.5, 0.25], np.float32), name="w")
    ema = tf.train.ExponentialMovingAverage(0.75)
    update = ema.apply([w])
    shadow = ema.average(w)
    assert shadow.op.name == "w/ExponentialMovingAverage" == ema.average_name(w)
    assert not shadow.trainable and shadow in tf.global_variables()
    assert shadow.op.colocation_groups() == ["loc:@w"] and shadow.device == w.device
    assignment = next(op for op in graph.get_operations() if op.type == "AssignSub")
    assert assignment.colocation_groups() == ["loc:@w"]
    assert tf.moving_average_variables() == [w]
    new_value = tf.placeholder(tf.float32, [2])
    set_w = w.assign(new_value)
    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_array_equal(sess.run(shadow), [0.5, 0.25])
        got = []
        for value in VALUES:
            sess.run(set_w, {new_value: value})
            sess.run(update)
            got.append(sess.run(shadow))
    want = _ema_reference(np.array([0.5, 0.25], np.float32), VALUES, [0.75] * 4)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_ema_with_num_updates_starts_fast(graph):
    step = tf.train.get_or_create_global_step()
    w = tf.Variable(np.array([0.5, 0.25], np.float32), name="w")
    ema = tf.train.ExponentialMovingAverage(0.999, num_updates=step)
    update = ema.apply([w])
    new_value = tf.placeholder(tf.float32, [2])
    set_w, bump = w.assign(new_value), tf.assign_add(step, 1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = []
        for value in VALUES:
            sess.run(set_w, {new_value: value})
            sess.run(update)
            sess.run(bump)
            got.append(sess.run(ema.average(w)))
    steps = np.arange(4, dtype=np.float32)
    decays = np.minimum(np.float32(0.999), (1 + steps) / (10 + steps))
    want = _ema_reference(np.array([0.5, 0.25], np.float32), VALUES, decays)
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_ema_rejects_what_it_cannot_average():
    w = tf.Variable([1.0], name="w")
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([w])
    with pytest.raises(ValueError, match="already computed for: w:0"):
        ema.apply([w])
    with pytest.raises(TypeError, match="half, float, or double"):
        ema.apply([tf.Variable([1], name="n")])
    with pytest.raises(ValueError, match="needs its full static shape"):
        ema.apply([tf.placeholder(tf.float32, [None])])
    with pytest.raises(TypeError, match="takes variables and tensors"):
        ema.apply([3.0])


def _debiased_reference(values, decay):
    """TF's zero-debiased average after each value: biased / (1 - decay^t)."""
    biased, out = np.zeros_like(values[0], dtype=np.float64), []
    for t, value in enumerate(values, start=1):
        biased = decay * biased + (1 - decay) * np.asarray(value, np.float64)
        out.append(biased / (1 - decay ** t))
    return out


def test_ema_of_tensors_starts_at_zero_and_zero_debias_corrects_it():
    # TF 2.21 (tf.compat.v1) gives the same values and variable names (scratch cross-check)
    x = tf.placeholder(tf.float32, [2])
    loss = tf.reduce_sum(x * x, name="loss")
    w = tf.Variable([1.0, 2.0], name="w")
    plain = tf.train.ExponentialMovingAverage(0.9, name="avg")
    debiased = tf.train.ExponentialMovingAverage(0.8, zero_debias=True, name="zd")
    update = tf.group(plain.apply([loss]), debiased.apply([loss, w]))
    names = sorted(v.op.name for v in tf.global_variables())
    assert names == ["loss/avg", "loss/zd", "loss/zd/biased", "loss/zd/local_step", "w", "w/zd"]
    feeds = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]]
    losses = [sum(v * v for v in f) for f in feeds]
    want = _debiased_reference(losses, 0.8)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_plain, got_debiased = [], []
        for f in feeds:
            sess.run(update, {x: f})
            got_plain.append(sess.run(plain.average(loss)))
            got_debiased.append(sess.run(debiased.average(loss)))
        np.testing.assert_allclose(sess.run(debiased.average(w)), [1.0, 2.0])   # a variable: no debias
    np.testing.assert_allclose(got_debiased, want, rtol=1e-6)
    np.testing.assert_allclose(got_plain[0], 0.1 * losses[0], rtol=1e-6)       # from zero, not debiased
    assert abs(got_debiased[0] - losses[0]) < 1e-5


def test_assign_moving_average_zero_debiases_by_default():
    from zmtf.training import moving_averages

    x = tf.placeholder(tf.float32, [2])
    v = tf.Variable([0.0, 0.0], name="v")
    update = moving_averages.assign_moving_average(v, x, 0.7)
    plain = moving_averages.assign_moving_average(tf.Variable([0.0, 0.0], name="u"), x, 0.7,
                                                  zero_debias=False)
    feeds = [[1.0, 2.0], [3.0, -1.0], [0.5, 0.5]]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got = [sess.run([update, plain], {x: f}) for f in feeds]
    np.testing.assert_allclose([g[0] for g in got], _debiased_reference(feeds, 0.7), rtol=1e-6)
    np.testing.assert_allclose(got[0][1], [0.3, 0.6], rtol=1e-6)


def test_variables_to_restore_names(graph):
    w = tf.Variable([1.0], name="w")
    b = tf.Variable([2.0], name="b")
    step = tf.train.get_or_create_global_step()
    ema = tf.train.ExponentialMovingAverage(0.9)
    ema.apply([w])
    restore = ema.variables_to_restore()
    # the shadow itself is left out: its checkpoint name is already taken by w
    assert restore == {"w/ExponentialMovingAverage": w, "b/ExponentialMovingAverage": b,
                       "global_step": step}
    assert ema.variables_to_restore([w]) == {"w/ExponentialMovingAverage": w, "b": b,
                                             "global_step": step}


def test_saver_restores_the_averages_into_the_model_variables(tmp_path):
    with tf.Graph().as_default():
        w = tf.Variable(np.array([0.5, 0.25], np.float32), name="w")
        loss = tf.reduce_sum(tf.square(w - [3.0, -1.0]))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        ema = tf.train.ExponentialMovingAverage(0.5)
        with tf.control_dependencies([train]):
            train = ema.apply([w])
        saver = tf.train.Saver()
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(5):
                sess.run(train)
            averaged, trained = sess.run([ema.average(w), w])
            path = saver.save(sess, str(tmp_path / "model"))
    assert not np.allclose(averaged, trained)
    with tf.Graph().as_default():
        w = tf.Variable(np.zeros(2, np.float32), name="w")
        restore = tf.train.ExponentialMovingAverage(0.5).variables_to_restore()
        assert restore == {"w/ExponentialMovingAverage": w}
        with tf.Session() as sess:
            tf.train.Saver(restore).restore(sess, path)
            np.testing.assert_array_equal(sess.run(w), averaged)

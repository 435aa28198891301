"""Optimizers: one step against numpy's formula, small models learn, slots sit by their variable."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.graph import GraphKeys
from zmtf.training.device_setter import replica_device_setter
from zmtf.training.optimizers import (
    AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer, Optimizer, create_global_step,
    get_global_step, get_or_create_global_step, global_step,
)


@pytest.fixture(autouse=True)
def graph():
    g = tf.Graph()
    with g.as_default():
        yield g


W0 = np.array([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])
C = np.array([[1.0, -2.0], [0.5, 3.0], [-1.5, 0.25]])  # d loss / d w for loss = sum(w * C)


def linear_loss(dtype=tf.float64):
    w = tf.Variable(W0.astype(dtype.np), name="w")
    return w, tf.reduce_sum(w * tf.constant(C.astype(dtype.np)))


def run_steps(train_op, fetch, steps: int, feed=None) -> list:
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = []
        for _ in range(steps):
            sess.run(train_op, feed)
            out.append(sess.run(fetch, feed))
        return out


# ---- one step equals the formula -----------------------------------------------------------
def test_gradient_descent_step():
    w, loss = linear_loss()
    (after,) = run_steps(GradientDescentOptimizer(0.1).minimize(loss), w, 1)
    np.testing.assert_allclose(after, W0 - 0.1 * C)


@pytest.mark.parametrize("nesterov", [False, True])
def test_momentum_steps(nesterov):
    w, loss = linear_loss()
    opt = MomentumOptimizer(0.1, 0.9, use_nesterov=nesterov)
    values = run_steps(opt.minimize(loss), w, 2)
    var, accum = W0.copy(), np.zeros_like(W0)
    for got in values:
        accum = 0.9 * accum + C
        var -= 0.1 * (C + 0.9 * accum) if nesterov else 0.1 * accum
        np.testing.assert_allclose(got, var)


def test_adam_steps():
    w, loss = linear_loss()
    opt = AdamOptimizer(0.01, beta1=0.8, beta2=0.95, epsilon=1e-7)
    train = opt.minimize(loss)
    beta1_power = opt._get_beta_accumulators(w.graph)[0]
    values = run_steps(train, [w, beta1_power], 3)
    var, m, v = W0.copy(), np.zeros_like(W0), np.zeros_like(W0)
    for t, (got, power) in enumerate(values, start=1):
        lr_t = 0.01 * np.sqrt(1 - 0.95 ** t) / (1 - 0.8 ** t)
        m = 0.8 * m + 0.2 * C
        v = 0.95 * v + 0.05 * C * C
        var -= lr_t * m / (np.sqrt(v) + 1e-7)
        np.testing.assert_allclose(got, var)
        np.testing.assert_allclose(power, 0.8 ** (t + 1))


def test_learning_rate_may_be_a_tensor():
    w, loss = linear_loss(tf.float32)
    lr = tf.placeholder(tf.float64, [])  # cast to the variable's dtype
    (after,) = run_steps(GradientDescentOptimizer(lr).minimize(loss), w, 1, {lr: 0.5})
    np.testing.assert_allclose(after, W0 - 0.5 * C, rtol=1e-6)


# ---- small models learn ------------------------------------------------------------------
def test_linear_regression_learns():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(64, 3)).astype(np.float32)
    ys = xs @ np.array([[1.5], [-2.0], [0.5]], np.float32) + 0.3
    x = tf.placeholder(tf.float32, [None, 3])
    y = tf.placeholder(tf.float32, [None, 1])
    w = tf.Variable(tf.zeros([3, 1]))
    b = tf.Variable(tf.zeros([1]))
    loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - y))
    train = GradientDescentOptimizer(0.1).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(100):
            sess.run(train, {x: xs, y: ys})
        assert sess.run(loss, {x: xs, y: ys}) < 1e-4


@pytest.mark.parametrize("make_optimizer", [
    lambda: AdamOptimizer(0.05),
    lambda: MomentumOptimizer(0.1, 0.9),
    lambda: GradientDescentOptimizer(0.5),
], ids=["adam", "momentum", "sgd"])
def test_logistic_regression_learns(make_optimizer):
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(128, 2)).astype(np.float32)
    labels = (xs[:, 0] + 2 * xs[:, 1] > 0).astype(np.int32)
    x = tf.placeholder(tf.float32, [None, 2])
    y = tf.placeholder(tf.int32, [None])
    hidden = tf.nn.relu(tf.matmul(x, tf.Variable(rng.normal(size=(2, 8)).astype(np.float32))))
    weights, bias = tf.Variable(tf.zeros([8, 2])), tf.Variable(tf.zeros([2]))
    logits = tf.nn.bias_add(tf.matmul(hidden, weights), bias)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    step = get_or_create_global_step()
    train = make_optimizer().minimize(loss, global_step=step)
    feed = {x: xs, y: labels}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, feed)
        for _ in range(150):
            sess.run(train, feed)
        assert sess.run(loss, feed) < min(0.25, first / 2)
        assert sess.run(step) == 150


# ---- global step -------------------------------------------------------------------------
def test_global_step_is_an_int64_scalar_in_its_collection(graph):
    assert get_global_step() is None
    with tf.name_scope("somewhere"):
        step = get_or_create_global_step()
    assert step.op.name == "global_step" and step.dtype == tf.int64 and step.shape.as_list() == []
    assert get_or_create_global_step() is step and get_global_step() is step
    assert graph.get_collection(GraphKeys.GLOBAL_STEP) == [step]
    assert step not in tf.trainable_variables() and step in tf.global_variables()
    with pytest.raises(ValueError, match="already exists"):
        create_global_step()


def test_global_step_increments_after_the_updates(graph):
    w, loss = linear_loss()
    step = get_or_create_global_step()
    train = GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    assert train.type == "AssignAdd" and train.name == "GradientDescent"
    assert [op.name for op in train.control_inputs] == ["GradientDescent/update"]
    assert graph.get_collection(GraphKeys.TRAIN_OP) == [train]
    assert run_steps(train, step, 3) == [1, 2, 3]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        assert global_step(sess, step) == 1


# ---- colocation --------------------------------------------------------------------------
def test_slots_and_updates_are_colocated_with_their_variable(graph):
    with tf.device("/job:ps/task:1"):
        w = tf.Variable(W0, name="w")
    with tf.device("/job:ps/task:0"):
        b = tf.Variable(np.zeros(2), name="b")
    with tf.device("/job:worker/task:0"):
        loss = tf.reduce_sum(tf.matmul(tf.constant(np.ones((1, 3))), w) + b)
        opt = AdamOptimizer()
        train = opt.minimize(loss, global_step=get_or_create_global_step())
    for var in (w, b):
        m, v = opt.get_slot(var, "m"), opt.get_slot(var, "v")
        assert (m.op.name, v.op.name) == (f"{var.op.name}/Adam", f"{var.op.name}/Adam_1")
        for slot in (m, v):
            assert slot.device == var.device
            assert slot.op.colocation_groups() == [f"loc:@{var.op.name}"]
            assert not slot.trainable
        update = graph.get_operation_by_name(f"Adam/update_{var.op.name}/ApplyAdam")
        assert update.device == var.device
        assert update.colocation_groups() == var.op.colocation_groups()
        assert update.inputs[0] is var._ref_tensor()
    beta1_power, beta2_power = opt._get_beta_accumulators(graph)
    assert beta1_power.device == b.device  # colocated with the first variable by name
    assert sorted(v.op.name for v in opt.variables()) == [
        "b/Adam", "b/Adam_1", "beta1_power", "beta2_power", "w/Adam", "w/Adam_1"]
    assert train.device == "/job:ps/task:0" or train.colocation_groups() == ["loc:@global_step"]


def test_replica_device_setter_puts_each_update_on_its_ps_task(graph):
    with tf.device(replica_device_setter(ps_tasks=2, worker_device="/job:worker/task:0")):
        w1 = tf.Variable(W0, name="w1")
        w2 = tf.Variable(W0, name="w2")
        loss = tf.reduce_sum(w1 * w2)
        opt = MomentumOptimizer(0.1, 0.9)
        opt.minimize(loss)
    assert (w1.device, w2.device) == ("/job:ps/task:0", "/job:ps/task:1")
    for var in (w1, w2):
        accum = opt.get_slot(var, "momentum")
        assert accum.op.name == f"{var.op.name}/Momentum" and accum.device == var.device
        update = graph.get_operation_by_name(f"Momentum/update_{var.op.name}/ApplyMomentum")
        assert update.device == var.device
        assert all(t.op.device == var.device for t in update.inputs if t.op.type == "Const")
    # gradients are computed on the worker; only the gates' NoOps are left to the placer, as in TF
    grad_ops = [op for op in graph.get_operations() if op.name.startswith("gradients/")]
    assert {op.device for op in grad_ops if op.type != "NoOp"} == {"/job:worker/task:0"}


# ---- errors and options ------------------------------------------------------------------
def test_var_list_and_missing_gradients():
    w, loss = linear_loss()
    other = tf.Variable(1.0, name="other")
    pairs = GradientDescentOptimizer(0.1).compute_gradients(loss)
    assert [v for _, v in pairs] == [w, other] and pairs[1][0] is None
    only_w = GradientDescentOptimizer(0.1).compute_gradients(loss, var_list=[w])
    assert [v for _, v in only_w] == [w]
    with pytest.raises(ValueError, match="No gradients provided for any variable"):
        GradientDescentOptimizer(0.1).minimize(loss, var_list=[other])
    with pytest.raises(ValueError, match="No variables provided"):
        GradientDescentOptimizer(0.1).apply_gradients([])
    with pytest.raises(ValueError, match="gate_gradients"):
        GradientDescentOptimizer(0.1).compute_gradients(loss, gate_gradients=7)


def test_apply_gradients_skips_none_and_gate_graph_gives_the_same_step():
    w, loss = linear_loss()
    tf.Variable(1.0, name="other")  # no gradient: apply_gradients skips its None
    opt = GradientDescentOptimizer(0.1)
    pairs = opt.compute_gradients(loss, gate_gradients=Optimizer.GATE_GRAPH)
    (after,) = run_steps(opt.apply_gradients(pairs), w, 1)
    np.testing.assert_allclose(after, W0 - 0.1 * C)


def test_integer_loss_is_rejected():
    tf.Variable(1.0)
    with pytest.raises(ValueError, match="Invalid type"):
        GradientDescentOptimizer(0.1).minimize(tf.constant(3))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adagrad_and_rmsprop_follow_tf_formulas(dtype):
    import zmtf as tf

    graph = tf.Graph()
    with graph.as_default():
        w = tf.Variable(np.array([1.0, -2.0, 3.0], dtype), name="w")
        v = tf.Variable(np.array([0.5, 0.5, 0.5], dtype), name="v")
        grad_w = np.array([0.1, -0.2, 0.3], dtype)
        loss = tf.reduce_sum(w * tf.constant(grad_w)) + tf.reduce_sum(v * tf.constant(grad_w))
        ada = tf.train.AdagradOptimizer(0.5, initial_accumulator_value=0.1).minimize(loss, var_list=[w])
        rms = tf.train.RMSPropOptimizer(0.01, decay=0.9, momentum=0.5, epsilon=1e-6).minimize(
            loss, var_list=[v])
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(2):
            sess.run([ada, rms])
        got_w, got_v = sess.run([w, v])
    acc, expect_w = np.full(3, 0.1), np.array([1.0, -2.0, 3.0])
    ms, mom, expect_v = np.ones(3), np.zeros(3), np.full(3, 0.5)
    for _ in range(2):
        acc = acc + grad_w ** 2
        expect_w = expect_w - 0.5 * grad_w / np.sqrt(acc)
        ms = f32(0.9) * ms + (1 - f32(0.9)) * grad_w ** 2
        mom = 0.5 * mom + f32(0.01) * grad_w / np.sqrt(ms + f32(1e-6))
        expect_v = expect_v - mom
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got_w, expect_w, rtol=rtol)
    np.testing.assert_allclose(got_v, expect_v, rtol=rtol)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_centered_rmsprop_follows_tf(dtype):
    # TF 2.21 gives the same slot names and values (scratch cross-check)
    import zmtf as tf

    graph = tf.Graph()
    with graph.as_default():
        v = tf.Variable(np.array([0.5, -0.5, 2.0], dtype), name="v")
        grad = np.array([0.1, -0.2, 0.3], dtype)
        opt = tf.train.RMSPropOptimizer(0.01, decay=0.8, momentum=0.5, epsilon=1e-3, centered=True)
        step = opt.minimize(tf.reduce_sum(v * tf.constant(grad)))
        names = sorted(x.op.name for x in tf.global_variables())
        init = tf.global_variables_initializer()
    assert names == ["v", "v/RMSProp", "v/RMSProp_1", "v/RMSProp_2"]   # rms, mg, momentum
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(step)
        got, got_mg = sess.run([v, opt.get_slot(v, "mg")])
    g = grad.astype(np.float64)
    ms, mg, mom, want = np.ones(3), np.zeros(3), np.zeros(3), np.array([0.5, -0.5, 2.0])
    for _ in range(3):
        ms = f32(0.8) * ms + (1 - f32(0.8)) * g * g
        mg = f32(0.8) * mg + (1 - f32(0.8)) * g
        mom = 0.5 * mom + f32(0.01) * g / np.sqrt(ms - mg * mg + f32(1e-3))
        want = want - mom
    rtol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}[dtype]
    np.testing.assert_allclose(got, want, rtol=rtol)
    np.testing.assert_allclose(got_mg, mg, rtol=max(rtol, 1e-6))


def f32(x):
    """A Python float hyperparameter as TF1 hands it to a float64 update: rounded to float32."""
    return np.float64(np.float32(x))


def _shrink(prox, rate, l1, l2):
    return np.sign(prox) * np.maximum(np.abs(prox) - rate * l1, 0) / (1 + rate * l2)


@pytest.mark.parametrize("adagrad", [False, True], ids=["gradient_descent", "adagrad"])
def test_proximal_optimizers_follow_tf_and_touch_only_gathered_rows(adagrad):
    # TF 2.21 gives the same values, dense and sparse (scratch cross-check)
    import zmtf as tf

    graph = tf.Graph()
    w0 = np.array([0.3, -0.7, 0.01], np.float64)
    e0 = np.array([[0.5, -0.2], [0.05, 0.3], [-1.0, 0.02]], np.float64)
    gw = np.array([0.2, -0.1, 0.4])
    with graph.as_default():
        w = tf.Variable(w0, name="w")
        e = tf.Variable(e0, name="e")
        rows = tf.gather(e, [0, 2, 0])                      # row 0 twice: its gradients add up
        loss = tf.reduce_sum(w * tf.constant(gw)) + tf.reduce_sum(rows)
        if adagrad:
            opt = tf.train.ProximalAdagradOptimizer(0.1, l1_regularization_strength=0.05,
                                                    l2_regularization_strength=0.01)
        else:
            opt = tf.train.ProximalGradientDescentOptimizer(0.05, l1_regularization_strength=0.02,
                                                            l2_regularization_strength=0.1)
        step = opt.minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(step)
        got_w, got_e = sess.run([w, e])
    want_w, want_e = w0.copy(), e0.copy()
    ge = np.array([[2.0, 2.0], [0.0, 0.0], [1.0, 1.0]])
    acc_w, acc_e = np.full(3, 0.1), np.full((3, 2), 0.1)
    for _ in range(3):
        if adagrad:
            acc_w += gw ** 2
            rate = f32(0.1) / np.sqrt(acc_w)
            want_w = _shrink(want_w - rate * gw, rate, f32(0.05), f32(0.01))
            touched = [0, 2]
            acc_e[touched] += ge[touched] ** 2
            rate_e = f32(0.1) / np.sqrt(acc_e[touched])
            want_e[touched] = _shrink(want_e[touched] - rate_e * ge[touched], rate_e, f32(0.05),
                                      f32(0.01))
        else:
            lr, l1, l2 = f32(0.05), f32(0.02), f32(0.1)
            want_w = _shrink(want_w - lr * gw, lr, l1, l2)
            want_e[[0, 2]] = _shrink(want_e[[0, 2]] - lr * ge[[0, 2]], lr, l1, l2)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-12)
    np.testing.assert_allclose(got_e, want_e, rtol=1e-12)
    np.testing.assert_array_equal(got_e[1], e0[1])            # an untouched row keeps its value

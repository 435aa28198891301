"""Sparse Adam/RMSProp, AdagradDA and tf.contrib.opt's LazyAdam/AdamW/MomentumW, against
numpy written from TF1's formulas (Python-float hyperparameters are float32 in TF1, then cast;
so are Adam's beta powers). TF 2.21 gives the same values (scratch cross-check; float64 bit
for bit)."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf

TABLE = np.linspace(-1.0, 1.0, 12).reshape(6, 2)
IDS = [1, 3, 1, 4]                                        # row 1 twice: its rows add up
GRAD = np.array([[0.3, -0.2], [0.5, 0.1], [-0.7, 0.4], [0.2, 0.2]])
ROWS = [1, 3, 4]
UNTOUCHED = [0, 2, 5]


def f32(x):
    return np.float64(np.float32(x))


def _summed(dtype):
    dense = np.zeros((6, 2), dtype)
    np.add.at(dense, IDS, GRAD.astype(dtype))
    return dense


def _train(make, dtype, sparse, steps=3, global_step=False, fetch_slots=()):
    """(table after each step, {slot: value}, optimizer) for a fixed gradient fed each step."""
    tf.reset_default_graph()
    emb = tf.Variable(TABLE.astype(dtype), name="emb")
    if sparse:
        grad = tf.IndexedSlices(tf.constant(GRAD.astype(dtype)), tf.constant(IDS), tf.constant([6, 2]))
    else:
        grad = tf.constant(_summed(dtype))
    step = tf.train.get_or_create_global_step() if global_step else None
    opt = make()
    train = opt.apply_gradients([(grad, emb)], global_step=step)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        tables = []
        for _ in range(steps):
            sess.run(train)
            tables.append(sess.run(emb))
        slots = {name: sess.run(opt.get_slot(emb, name)) for name in fetch_slots}
    return tables, slots, opt


def _check(got, want, dtype):
    if dtype == np.float64:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


# ---- Adam: TF1's sparse form decays m and v on every row -----------------------------------
def _adam_reference(dtype, steps, lazy=False, lr=0.1, b1=0.9, b2=0.999, eps=1e-8, decay=0.0):
    lr, b1, b2, eps = (dtype(f32(x)) for x in (lr, b1, b2, eps))
    var, m, v = TABLE.astype(dtype), np.zeros((6, 2), dtype), np.zeros((6, 2), dtype)
    p1, p2 = np.float32(f32(b1)), np.float32(f32(b2))
    g = _summed(dtype)[ROWS]
    out = []
    for _ in range(steps):
        var[ROWS] += -decay * var[ROWS]
        lr_t = lr * np.sqrt(1 - dtype(p2)) / (1 - dtype(p1))
        if lazy:
            m[ROWS] = b1 * m[ROWS] + (1 - b1) * g
            v[ROWS] = b2 * v[ROWS] + (1 - b2) * np.square(g)
            var[ROWS] -= lr_t * m[ROWS] / (np.sqrt(v[ROWS]) + eps)
        else:
            m = m * b1
            m[ROWS] += g * (1 - b1)
            v = v * b2
            v[ROWS] += (g * g) * (1 - b2)
            var -= lr_t * m / (np.sqrt(v) + eps)
        p1, p2 = p1 * np.float32(f32(b1)), p2 * np.float32(f32(b2))
        out.append(var.copy())
    return out, m, v


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_adam_decays_every_row_of_m_and_v_as_tf1_does(dtype):
    tables, slots, opt = _train(lambda: tf.train.AdamOptimizer(0.1), dtype, True, fetch_slots=("m", "v"))
    want, m, v = _adam_reference(dtype, 3)
    for got, expected in zip(tables, want):
        _check(got, expected, dtype)
    _check(slots["m"], m, dtype)
    _check(slots["v"], v, dtype)
    assert sorted(x.op.name for x in opt.variables()) == [
        "beta1_power", "beta2_power", "emb/Adam", "emb/Adam_1"]
    assert opt._get_beta_accumulators(tf.get_default_graph())[0].dtype == tf.float32   # as TF's


def test_sparse_adam_builds_no_dense_gradient():
    _train(lambda: tf.train.AdamOptimizer(0.1), np.float32, True, steps=1)
    types = {op.type for op in tf.get_default_graph().get_operations()}
    assert {"ScatterAdd", "Unique", "UnsortedSegmentSum"} <= types
    assert "ApplyAdam" not in types


# ---- RMSProp: rows only, TF's SparseApplyRMSProp -------------------------------------------
def _rmsprop_reference(dtype, steps, centered, lr=0.1, rho=0.8, momentum=0.5, eps=1e-4):
    lr, rho, momentum, eps = (dtype(f32(x)) for x in (lr, rho, momentum, eps))
    var, ms = TABLE.astype(dtype), np.ones((6, 2), dtype)
    mg, mom = np.zeros((6, 2), dtype), np.zeros((6, 2), dtype)
    g = _summed(dtype)[ROWS]
    out = []
    for _ in range(steps):
        ms[ROWS] = ms[ROWS] * rho + np.square(g) * (1 - rho)
        denom = ms[ROWS] + eps
        if centered:
            mg[ROWS] = mg[ROWS] * rho + g * (1 - rho)
            denom = denom - np.square(mg[ROWS])
        mom[ROWS] = mom[ROWS] * momentum + (1 / np.sqrt(denom)) * lr * g
        var[ROWS] -= mom[ROWS]
        out.append(var.copy())
    return out


@pytest.mark.parametrize("centered", [False, True], ids=["plain", "centered"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_rmsprop_updates_only_the_rows(dtype, centered):
    make = lambda: tf.train.RMSPropOptimizer(0.1, decay=0.8, momentum=0.5, epsilon=1e-4,  # noqa: E731
                                             centered=centered)
    tables, _, _ = _train(make, dtype, True)
    for got, expected in zip(tables, _rmsprop_reference(dtype, 3, centered)):
        _check(got, expected, dtype)
    np.testing.assert_array_equal(tables[-1][UNTOUCHED], TABLE.astype(dtype)[UNTOUCHED])
    op_type = "SparseApplyCenteredRMSProp" if centered else "SparseApplyRMSProp"
    assert op_type in {op.type for op in tf.get_default_graph().get_operations()}
    dense, _, _ = _train(make, dtype, False)
    np.testing.assert_allclose(tables[-1][ROWS], dense[-1][ROWS], rtol=1e-5)


# ---- AdagradDA --------------------------------------------------------------------------
def _adagrad_da_reference(dtype, steps, sparse, lr=0.2, l1=0.05, l2=0.1, initial=0.1):
    lr, l1, l2 = (dtype(f32(x)) for x in (lr, l1, l2))
    var = TABLE.astype(dtype)
    acc, sq = np.zeros((6, 2), dtype), np.full((6, 2), initial, dtype)
    g = _summed(dtype)
    rows = ROWS if sparse else slice(None)
    out = []
    for step in range(1, steps + 1):
        t = dtype(step)
        acc[rows] += g[rows]
        sq[rows] += np.square(g[rows])
        a, s = acc[rows], sq[rows]
        if sparse:
            var[rows] = -1 * np.sign(a) * np.maximum(np.abs(a) / t - l1, 0) / (l2 + np.sqrt(s) / (t * lr))
        else:
            var[rows] = lr * np.sign(-a) * np.maximum(np.abs(a) - l1 * t, 0) / (l2 * t * lr + np.sqrt(s))
        out.append(var.copy())
    return out


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adagrad_da_recomputes_weights_from_gradient_sums(dtype, sparse):
    make = lambda: tf.train.AdagradDAOptimizer(  # noqa: E731
        0.2, tf.train.get_global_step(), l1_regularization_strength=0.05, l2_regularization_strength=0.1)
    tables, slots, opt = _train(make, dtype, sparse, global_step=True,
                                fetch_slots=("gradient_accumulator",))
    for got, expected in zip(tables, _adagrad_da_reference(dtype, 3, sparse)):
        _check(got, expected, dtype)
    _check(slots["gradient_accumulator"], 3 * _summed(dtype), dtype)
    assert sorted(x.op.name for x in opt.variables()) == ["emb/AdagradDA", "emb/AdagradDA_1"]
    assert opt.get_slot_names() == ["gradient_accumulator", "gradient_squared_accumulator"]


def test_adagrad_da_needs_a_global_step_and_a_positive_accumulator():
    with pytest.raises(ValueError, match="must be positive: 0.0"):
        tf.train.AdagradDAOptimizer(0.1, None, initial_gradient_squared_accumulator_value=0.0)
    w = tf.Variable([1.0])
    with pytest.raises(ValueError, match="needs a global_step"):
        tf.train.AdagradDAOptimizer(0.1, None).minimize(tf.reduce_sum(w))


# ---- tf.contrib.opt -----------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lazy_adam_touches_only_the_looked_up_rows(dtype):
    tables, slots, opt = _train(lambda: tf.contrib.opt.LazyAdamOptimizer(0.1), dtype, True,
                                fetch_slots=("m", "v"))
    want, m, v = _adam_reference(dtype, 3, lazy=True)
    for got, expected in zip(tables, want):
        _check(got, expected, dtype)
    _check(slots["m"], m, dtype)
    np.testing.assert_array_equal(slots["v"][UNTOUCHED], 0)
    np.testing.assert_array_equal(tables[-1][UNTOUCHED], TABLE.astype(dtype)[UNTOUCHED])
    assert [x.op.name for x in opt.variables()][-2:] == ["emb/Adam", "emb/Adam_1"]


def test_lazy_adam_with_a_dense_gradient_is_adam():
    lazy, _, _ = _train(lambda: tf.contrib.opt.LazyAdamOptimizer(0.1), np.float64, False)
    adam, _, _ = _train(lambda: tf.train.AdamOptimizer(0.1), np.float64, False)
    np.testing.assert_array_equal(lazy[-1], adam[-1])


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_adamw_decays_then_steps(sparse):
    tables, _, opt = _train(lambda: tf.contrib.opt.AdamWOptimizer(0.01, 0.1), np.float64, sparse)
    # the reference's decay touches ROWS only; dense decays every row, so check those
    want, _, _ = _adam_reference(np.float64, 3, decay=0.01)
    if sparse:
        np.testing.assert_allclose(tables[-1], want[-1], rtol=1e-12)
    else:
        np.testing.assert_allclose(tables[-1][ROWS], want[-1][ROWS], rtol=1e-12)
        np.testing.assert_allclose(tables[-1][UNTOUCHED], TABLE[UNTOUCHED] * 0.99 ** 3, rtol=1e-12)
    assert "emb/AdamW" in [x.op.name for x in opt.variables()]


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_momentumw_decays_then_steps(sparse):
    tables, _, _ = _train(lambda: tf.contrib.opt.MomentumWOptimizer(0.1, 0.05, 0.9), np.float32, sparse)
    var, accum, g = TABLE.copy(), np.zeros((6, 2)), _summed(np.float64)
    decayed = ROWS if sparse else slice(None)
    for _ in range(3):
        var[decayed] -= 0.1 * var[decayed]
        accum = 0.9 * accum + g
        var -= 0.05 * accum
    np.testing.assert_allclose(tables[-1], var, rtol=1e-5, atol=1e-6)


def test_decay_var_list_limits_the_decay():
    tf.reset_default_graph()
    a, b = tf.Variable([1.0, 2.0], name="a"), tf.Variable([3.0], name="b")
    train = tf.contrib.opt.MomentumWOptimizer(0.5, 0.0, 0.0).minimize(
        tf.reduce_sum(a) + tf.reduce_sum(b), decay_var_list=[b])
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        got_a, got_b = sess.run([a, b])
    np.testing.assert_allclose(got_a, [1.0, 2.0])
    np.testing.assert_allclose(got_b, [1.5])


def test_contrib_opt_names_what_it_lacks():
    with pytest.raises(AttributeError, match="ModelAverageOptimizer is not in zmtf"):
        tf.contrib.opt.ModelAverageOptimizer  # noqa: B018
    extended = tf.contrib.opt.extend_with_decoupled_weight_decay(tf.train.GradientDescentOptimizer)
    tf.reset_default_graph()
    w = tf.Variable([2.0])
    train = extended(0.5, 0.25).minimize(tf.reduce_sum(w))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(w), [2.0 - 1.0 - 0.25])


# ---- an embedding on a ps, trained from a worker ----------------------------------------------
def _embedding_run(make, target=None, ps=None, worker=None):
    """The table after 3 steps of lookups of ids [7, 7, 9, 99], built on ``ps``/``worker``."""
    tf.reset_default_graph()
    with tf.device(ps):
        emb = tf.Variable(np.linspace(-1, 1, 800, dtype=np.float32).reshape(100, 8), name="emb")
    with tf.device(worker):
        ids = tf.placeholder(tf.int32, [4])
        loss = tf.reduce_sum(tf.square(tf.gather(emb, ids) - 0.5))
        train = make().minimize(loss)
    graph = tf.get_default_graph()
    with (tf.Session(target) if target else tf.Session()) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run(train, {ids: [7, 7, 9, 99]})
        return sess.run(emb), graph


@pytest.mark.parametrize("make", [lambda: tf.contrib.opt.LazyAdamOptimizer(0.05),
                                  lambda: tf.train.AdamOptimizer(0.05)], ids=["lazy_adam", "adam"])
def test_an_embedding_on_a_ps_gets_rows_from_the_worker_and_matches_a_local_run(make):
    from zmtf.testing import running_servers

    local, _ = _embedding_run(make)
    with running_servers() as servers:
        remote, graph = _embedding_run(make, servers[("worker", 0)].target, "/job:ps/task:0",
                                       "/job:worker/task:0")
    np.testing.assert_array_equal(remote, local)
    start = np.linspace(-1, 1, 800, dtype=np.float32).reshape(100, 8)
    assert np.flatnonzero(np.any(remote != start, axis=1)).tolist() == [7, 9, 99]
    scatters = [op for op in graph.get_operations() if op.type in ("ScatterAdd", "ScatterUpdate")]
    assert scatters and all(op.device.startswith("/job:ps/task:0") for op in scatters)
    # what crosses to the ps is the 4 gradient rows, not the 100-row table
    assert all(op.inputs[2].shape.as_list() in ([4, 8], [None, 8]) for op in scatters)

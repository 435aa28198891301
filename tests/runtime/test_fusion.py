"""Elementwise fusion (runtime.fusion, runtime.fused_kernels) and plumbing pruning
(runtime.plumbing), through sessions: the same values and gradients fused and unfused."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.step_stats_proto import node_runs
from zmtf.runtime import fused_kernels

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


@pytest.fixture(autouse=True)
def compiled_loops(monkeypatch):
    """The suite never compiles fused loops (tests/conftest.py); these tests are about them."""
    monkeypatch.setattr(fused_kernels, "HOT_CALLS", 3)


def _unfused() -> tf.ConfigProto:
    return tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(global_jit_level=tf.OptimizerOptions.OFF)))


def _run(graph, fetches, feed, config=None, times=1):
    """The values of the first and the last of ``times`` runs, and the last run's trace (a
    fused node runs member by member at first; its loop starts compiling on its third run,
    and the runs after that wait until it is ready, so the last one runs the loop)."""
    meta = tf.RunMetadata()
    runs = []
    with tf.Session(graph=graph, config=config) as sess:
        for k in range(times):
            if k == 3:
                assert fused_kernels.settle(120)
            runs.append(sess.run(fetches, feed, options=FULL, run_metadata=meta))
    labels = [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]
    return (runs[0] if times == 1 else (runs[0], runs[-1])), labels


_UNARY = [tf.nn.relu, tf.sigmoid, tf.tanh, tf.negative, tf.square]
_BINARY = [tf.add, tf.subtract, tf.multiply]


def _random_graph(seed: int, dtype):
    """Random elementwise ops over inputs of full, row, scalar and column shape; shared
    inputs, intermediates used outside the chain (a reduce) and one fetched."""
    rng = np.random.default_rng(seed)
    graph = tf.Graph()
    with graph.as_default():
        shapes = [[6, 5], [6, 5], [5], [], [6, 1]]
        inputs = [tf.placeholder(dtype, s, name=f"in{k}") for k, s in enumerate(shapes)]
        pool = list(inputs[:2])
        for k in range(10):
            pick = rng.integers(0, 10)
            a = pool[-1 - rng.integers(0, min(3, len(pool)))]
            if pick < 3:
                pool.append(_UNARY[rng.integers(0, len(_UNARY))](a))
            elif pick < 8:
                b = (inputs + pool)[rng.integers(0, len(inputs) + len(pool))]
                pool.append(_BINARY[rng.integers(0, len(_BINARY))](a, b))
            elif pick < 9:
                pool.append(tf.add_n([a, pool[-1], a]))
            else:
                pool.append(tf.nn.bias_add(a if a.shape.ndims == 2 else pool[0], inputs[2]))
        outside = tf.reduce_sum(pool[len(pool) // 2])          # used outside the chain
        loss = tf.reduce_sum(pool[-1]) + outside
        grads = [g for g in tf.gradients(loss, inputs) if g is not None]
        fetched = pool[len(pool) // 3]                          # a fetched intermediate
    feed = {x: rng.standard_normal(x.shape.as_list()).astype(dtype.as_numpy_dtype)
            for x in inputs}
    return graph, [loss, fetched, *grads], feed


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
def test_fused_and_unfused_steps_give_the_same_values_and_gradients(dtype):
    fused_any = 0
    for seed in range(6):
        graph, fetches, feed = _random_graph(seed, dtype)
        (first, fused), names = _run(graph, fetches, feed, times=4)
        plain, plain_names = _run(graph, fetches, feed, _unfused())
        assert not [n for n in plain_names if "_FusedElementwise[" in n]
        fused_any += any("_FusedElementwise[" in n for n in names)
        tol = 1e-5 if dtype == tf.float32 else 1e-12
        for got, got_first, want in zip(fused, first, plain):
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
            np.testing.assert_allclose(got_first, want, rtol=tol, atol=tol)
    assert fused_any >= 4, "the random graphs should mostly fuse"


def test_the_trace_shows_one_node_per_fusion_with_its_ops_and_the_switches_turn_it_off(monkeypatch):
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float32, [4, 3])
        b = tf.placeholder(tf.float32, [3])
        y = tf.reduce_sum(tf.nn.relu(a * b + a))
    feed = {a: np.arange(12, dtype=np.float32).reshape(4, 3) - 6, b: np.ones(3, np.float32)}
    (_, value), names = _run(graph, y, feed, times=4)
    fused = [n for n in names if "_FusedElementwise[" in n]
    # one node, named as the node its value ends in (a graph op), its label listing the ops
    assert fused == ["Relu = _FusedElementwise[Mul+Add+Relu](mul, add, Relu)"], names
    assert not {"mul", "add", "Relu"} & set(names)
    want = float(np.maximum(feed[a] * feed[b] + feed[a], 0).sum())
    assert value == pytest.approx(want)
    value, names = _run(graph, y, feed, _unfused())
    assert value == pytest.approx(want) and {"mul", "add", "Relu"} <= set(names)
    monkeypatch.setenv("ZMTF_FUSION", "0")
    value, names = _run(graph, y, feed)
    assert value == pytest.approx(want) and {"mul", "add", "Relu"} <= set(names)


def test_a_fused_member_that_fails_is_named_in_the_error():
    # unknown shapes: the plan fuses, the step's shapes do not broadcast
    graph = tf.Graph()
    with graph.as_default():
        a = tf.placeholder(tf.float32, [None])
        b = tf.placeholder(tf.float32, [None])
        y = tf.reduce_sum(tf.multiply(tf.add(a, b, name="bad_add"), a))
    with tf.Session(graph=graph) as sess:
        assert sess.run(y, {a: np.ones(3, np.float32), b: np.ones(1, np.float32)}) == 6.0
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad_add"):
            sess.run(y, {a: np.ones(3, np.float32), b: np.ones(2, np.float32)})


@pytest.mark.parametrize("axis", [1, 0])
def test_a_split_read_by_one_fused_node_is_folded_into_it(axis):
    """The pieces of a SplitV that only a fused node reads are read in place (the last
    axis) or split as the SplitV would (another axis) inside that node; a split that does
    not fit the fed tensor fails naming the SplitV."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [None, None])
        p, q, r = tf.split(x, [2, 2, 2], axis=axis, name="pieces")
        y = tf.reduce_sum((p * q + r) * 2.0 - p, axis=axis)
    data = np.random.default_rng(3).standard_normal((6, 6))
    parts = np.split(data, [2, 4], axis=axis)
    want = ((parts[0] * parts[1] + parts[2]) * 2.0 - parts[0]).sum(axis=axis)
    (first, last), names = _run(graph, y, {x: data}, times=5)
    assert [n for n in names if "SplitV+" in n and "pieces" in n], names
    np.testing.assert_array_equal(first, want)
    np.testing.assert_array_equal(last, want)
    with tf.Session(graph=graph) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="pieces"):
            sess.run(y, {x: np.ones((7, 7))})


def test_a_fused_lstm_cell_trains_as_the_unfused_one():
    def build():
        graph = tf.Graph()
        with graph.as_default():
            tf.set_random_seed(1)
            x = tf.placeholder(tf.float32, [4, 3])
            w = tf.Variable(tf.truncated_normal([3 + 5, 20], stddev=0.3, seed=2))
            h = c = tf.zeros([4, 5])
            for _ in range(3):
                i, f, g, o = tf.split(tf.matmul(tf.concat([x, h], 1), w), 4, axis=1)
                c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)
                h = tf.sigmoid(o) * tf.tanh(c)
            loss = tf.reduce_mean(tf.square(h - 0.5))
            train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
            init = tf.global_variables_initializer()
        return graph, x, loss, train, init, w

    feed_x = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
    results = []
    for config in (None, _unfused()):
        graph, x, loss, train, init, w = build()
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(init)
            meta = tf.RunMetadata()
            for _ in range(3):
                sess.run(train, {x: feed_x}, options=FULL, run_metadata=meta)
            results.append(sess.run([loss, w], {x: feed_x}))
            names = [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]
        fused = [n for n in names if "_FusedElementwise[" in n]
        assert bool(fused) == (config is None), names
        if config is None:   # the cells' gradient math: SigmoidGrad, TanhGrad and products in one
            assert any("SigmoidGrad" in n and "TanhGrad" in n and "Mul" in n for n in fused), fused
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-6)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-6, atol=1e-7)


def test_gradient_plumbing_does_not_run_but_its_ordering_holds():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [3])
        v = tf.Variable(tf.zeros([3]))
        loss = tf.reduce_sum(x * v + x)
        train = tf.train.GradientDescentOptimizer(1.0).minimize(loss)
        bump = v.assign_add(tf.ones([3]))
        with tf.control_dependencies([bump]):
            gate = tf.no_op(name="gate")
        with tf.control_dependencies([gate]):
            after = tf.identity(tf.reduce_sum(x * 1.0), name="after")   # fetched: kept
            seen = tf.reduce_sum(v * 1.0)                               # ordered after bump
        init = tf.global_variables_initializer()
    feed = {x: np.ones(3, np.float32)}
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        sess.run(train, feed, options=FULL, run_metadata=meta)
        names = {t.node_name for t in node_runs(meta.step_stats)}
        assert not [n for n in names if n.endswith(("tuple/control_dependency", "group_deps"))], names
        assert train.name in names        # a target stays
        assert sess.run(v).tolist() == [-1.0, -1.0, -1.0]
        for k in range(3):
            got_after, got_seen = sess.run([after, seen], feed, options=FULL, run_metadata=meta)
            assert got_after == 3.0 and got_seen == 3.0 * k
        names = {t.node_name for t in node_runs(meta.step_stats)}
        assert "after" in names and "gate" not in names


def test_a_cache_folder_others_can_write_is_not_used(tmp_path, monkeypatch):
    """Generated kernels are imported from the cache folder: one that another user could
    have planted files in (group/other writable) is refused, and kernels compile in memory."""
    from zmtf.runtime import fused_kernels
    folder = tmp_path / "cache"
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    monkeypatch.setenv("ZMTF_FUSION_CACHE", str(folder))
    assert fused_kernels._cache_dir() is None
    folder.chmod(0o700)
    assert fused_kernels._cache_dir() == str(folder)


def test_an_lstm_cells_forward_is_one_fused_node_with_its_sigmoids_and_tanhs():
    """float32 Sigmoid and Tanh fuse (kernels.cpu.elementwise: within 3 and 1 ulps of numpy's),
    so the gate math of a cell is one node; float64 ones stay their own nodes."""
    def build(dtype):
        graph = tf.Graph()
        with graph.as_default():
            gates = tf.placeholder(dtype, [8, 12])
            c = tf.placeholder(dtype, [8, 3])
            i, f, g, o = tf.split(gates, 4, axis=1)
            c2 = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)
            h = tf.sigmoid(o) * tf.tanh(c2)
            out = tf.reduce_sum(h, axis=1) + tf.reduce_sum(c2, axis=1)
        rng = np.random.default_rng(5)
        feed = {gates: (rng.standard_normal((8, 12)) * 4).astype(dtype.as_numpy_dtype),
                c: rng.standard_normal((8, 3)).astype(dtype.as_numpy_dtype)}
        return graph, out, feed

    graph, out, feed = build(tf.float32)
    (first, fused), names = _run(graph, out, feed, times=5)
    plain, _ = _run(graph, out, feed, _unfused())
    cells = [n for n in names if "_FusedElementwise[" in n]
    ops = cells[0].split("](")[0].split("[")[1].split("+") if len(cells) == 1 else []
    assert ops.count("Sigmoid") == 3 and ops.count("Tanh") == 2, names
    assert ops.count("SplitV") == 1, names   # its pieces read where they lie in the gates
    assert not [n for n in names if n.startswith(("Sigmoid", "Tanh", "split"))], names
    np.testing.assert_allclose(fused, plain, rtol=4e-7 * 8, atol=1e-6)   # a few ulps, 2 sums
    np.testing.assert_array_equal(first, plain)   # the first runs: the members' own kernels
    graph, out, feed = build(tf.float64)
    _, names = _run(graph, out, feed, times=4)
    assert not [n for n in names if "Sigmoid" in n and "_FusedElementwise[" in n], names

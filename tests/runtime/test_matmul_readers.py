"""runtime.matmul_readers: a MatMul whose one reader, a StridedSlice, keeps some of its
columns computes only those; one whose one reader adds a bias adds it in place. Each with
the reader's name, the same values, the graph's errors."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
_OP = "_SlicedMatMul"
_ADD = "_MatMulAdd"


def _labels(meta) -> list[str]:
    return [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]


def _unfused() -> tf.ConfigProto:
    return tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(global_jit_level=tf.OptimizerOptions.OFF)))


def _trained(config):
    """h = tanh(concat([x_k, h]) @ w + b) over four steps, trained by SGD: each step's
    gradient through the concat keeps only h's columns of dpre @ w^T (the bias add is fused
    with the tanh, so it stays out of the product)."""
    graph = tf.Graph()
    with graph.as_default():
        xs = [tf.placeholder(tf.float32, [3, 4]) for _ in range(4)]
        w = tf.Variable(tf.truncated_normal([9, 5], stddev=0.4, seed=2))
        b = tf.Variable(tf.fill([5], 0.1))
        h = tf.zeros([3, 5])
        for x in xs:
            h = tf.tanh(tf.matmul(tf.concat([x, h], 1), w) + b)
        loss = tf.reduce_mean(tf.square(h))
        train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(7)
    feed = {x: rng.standard_normal((3, 4)).astype(np.float32) for x in xs}
    meta = tf.RunMetadata()
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train, feed, options=FULL, run_metadata=meta)
        return sess.run([loss, w, b], feed), _labels(meta)


def test_an_rnns_gradient_through_its_concat_computes_only_hs_columns():
    values, labels = _trained(None)
    plain, plain_labels = _trained(_unfused())
    assert len([label for label in labels if _OP in label and "[:, 4:9]" in label]) == 3, labels
    assert not [label for label in plain_labels if _OP in label or _ADD in label]
    for got, want in zip(values, plain):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("transpose_b", [False, True])
def test_kept_columns_equal_numpys_and_other_slices_run_as_the_graph_says(transpose_b):
    rng = np.random.default_rng(4)
    a, b = rng.standard_normal((3, 6)), rng.standard_normal((7, 6) if transpose_b else (6, 7))
    product = a @ (b.T if transpose_b else b)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float64, [3, 6])
        y = tf.placeholder(tf.float64, b.shape)
        slices = {"cols": lambda p: p[:, 2:5], "strided": lambda p: p[:, ::-2], "tail": lambda p: p[:, -3:],
                  "rows": lambda p: p[1:, 2:5], "column": lambda p: p[:, 3]}
        fetched = {k: f(tf.matmul(x, y, transpose_b=transpose_b)) for k, f in slices.items()}
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        got = sess.run(fetched, {x: a, y: b}, options=FULL, run_metadata=meta)
    rewritten = [label for label in _labels(meta) if _OP in label]
    assert len(rewritten) == 3, rewritten   # rows sliced or an index: the MatMul runs whole
    for k, f in slices.items():
        np.testing.assert_allclose(got[k], f(product), rtol=1e-12, err_msg=k)


def test_a_product_read_elsewhere_runs_whole_and_bad_operands_fail_as_matmul():
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, None])
        y = tf.placeholder(tf.float32, [None, None])
        product = tf.matmul(x, y)
        kept, both = product[:, 1:], product[:, :1] + tf.reduce_sum(product)
        alone = tf.matmul(y, x)[:, 1:]
    meta = tf.RunMetadata()
    ones = np.ones((2, 2), np.float32)
    with tf.Session(graph=graph) as sess:
        sess.run([kept, both], {x: ones, y: ones}, options=FULL, run_metadata=meta)
        assert not [label for label in _labels(meta) if _OP in label]
        with pytest.raises(tf.errors.InvalidArgumentError, match="Matrix size-incompatible"):
            sess.run(alone, {x: np.ones((3, 2), np.float32), y: ones})


@pytest.mark.parametrize("shape", [(4,), (1, 4), (3, 4), (3, 1), (), (2, 3, 4)])
def test_a_product_plus_a_tensor_equals_the_add_for_every_broadcast(shape):
    """Shapes the product keeps are added in place; others (a batch of products) run as
    Add's kernel would, product first or second; values equal numpy's, bit for bit."""
    rng = np.random.default_rng(5)
    a, b, c = rng.standard_normal((3, 5)), rng.standard_normal((5, 4)), rng.standard_normal(shape)
    graph = tf.Graph()
    with graph.as_default():
        x, y = tf.placeholder(tf.float64, [3, 5]), tf.placeholder(tf.float64, [5, 4])
        z = tf.placeholder(tf.float64, shape)
        first, second = tf.matmul(x, y) + z, tf.add(z, tf.matmul(x, y))
    meta = tf.RunMetadata()
    with tf.Session(graph=graph) as sess:
        got = sess.run([first, second], {x: a, y: b, z: c}, options=FULL, run_metadata=meta)
    assert len([label for label in _labels(meta) if _ADD in label]) == 2, _labels(meta)
    np.testing.assert_array_equal(got[0], a @ b + c)
    np.testing.assert_array_equal(got[1], c + a @ b)

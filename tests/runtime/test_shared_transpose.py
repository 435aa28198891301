"""runtime.shared_transpose: MatMuls that read one variable's weight transposed share one
transposed copy made per step, only where the weight cannot change between copy and use."""

from __future__ import annotations

import numpy as np

import zmtf as tf

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
_OP = "_TransposeForMatMul"


def _unfused() -> tf.ConfigProto:
    return tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(global_jit_level=tf.OptimizerOptions.OFF)))


def _trained(config, steps=3):
    """An RNN-like chain: h = tanh(h @ w^T + x_k) five times, trained by SGD (the backward
    pass reads w transposed in every step, then the update writes it)."""
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(4)
        x = tf.placeholder(tf.float32, [6, 7])
        w = tf.Variable(tf.truncated_normal([7, 7], stddev=0.4, seed=5))
        h = x
        for _ in range(5):
            h = tf.tanh(tf.matmul(h, w, transpose_b=True) + x)
        loss = tf.reduce_mean(tf.square(h))
        train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {x: np.random.default_rng(6).standard_normal((6, 7)).astype(np.float32)}
    meta = tf.RunMetadata()
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for _ in range(steps):
            sess.run(train, feed, options=FULL, run_metadata=meta)
        names = [n.node_name for d in meta.step_stats.dev_stats for n in d.node_stats]
        return sess.run([loss, w], feed), names


def test_matmuls_reading_a_weight_transposed_share_one_copy_and_train_alike():
    (loss, w), names = _trained(None)
    (plain_loss, plain_w), plain_names = _trained(_unfused())
    assert [n for n in names if n.endswith(_OP)] == [f"Variable/read/{_OP}"], names
    assert not [n for n in plain_names if n.endswith(_OP)]
    np.testing.assert_allclose(loss, plain_loss, rtol=1e-5)
    np.testing.assert_allclose(w, plain_w, rtol=1e-5, atol=1e-6)


def test_a_weight_assigned_between_its_products_is_not_copied():
    """Products ordered after an assign to their weight: a copy made before it would be
    stale, so none is made (the update after every product, as in training, is fine)."""
    def run(config):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.placeholder(tf.float32, [2, 3])
            w = tf.Variable(tf.ones([4, 3]))
            before = [tf.matmul(x, w, transpose_b=True) for _ in range(4)]
            with tf.control_dependencies(before):
                double = w.assign(w * 2.0)
            with tf.control_dependencies([double]):
                after = [tf.matmul(x, w, transpose_b=True) for _ in range(4)]
            total = tf.add_n([tf.reduce_sum(y) for y in before + after])
            init = tf.global_variables_initializer()
        meta = tf.RunMetadata()
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(init)
            got = sess.run(total, {x: np.ones((2, 3), np.float32)}, options=FULL,
                           run_metadata=meta)
        return got, [n.node_name for d in meta.step_stats.dev_stats for n in d.node_stats]

    got, names = run(None)
    assert not [n for n in names if n.endswith(_OP)], names
    assert got == run(_unfused())[0]

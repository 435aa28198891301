"""tf.nn.batch_normalization and tf.layers.batch_normalization: TF1's formulas, variables,
moving averages through UPDATE_OPS, and training given as a bool or a bool tensor."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf

rng = np.random.default_rng(7)
X = (rng.normal(size=(8, 3, 3, 4)) * 2.0 + 1.5).astype(np.float32)
EPS = 1e-3


def _variables() -> dict[str, tf.Variable]:
    return {v.op.name.split("/", 1)[1]: v for v in tf.global_variables()}


def test_batch_normalization_is_tfs_formula():
    mean, var = np.float32([1.0, -1.0]), np.float32([4.0, 0.25])
    x = rng.normal(size=(5, 2)).astype(np.float32)
    with tf.Session() as sess:
        full = sess.run(tf.nn.batch_normalization(x, mean, var, [0.5, 0.0], [2.0, 3.0], EPS))
        bare = sess.run(tf.nn.batch_normalization(x, mean, var, None, None, EPS))
    np.testing.assert_allclose(full, (x - mean) / np.sqrt(var + EPS) * [2.0, 3.0] + [0.5, 0.0], rtol=1e-5)
    np.testing.assert_allclose(bare, (x - mean) / np.sqrt(var + EPS), rtol=1e-5)


def test_training_uses_the_batch_and_updates_the_moving_averages():
    y = tf.layers.batch_normalization(X, training=True, momentum=0.9)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    assert len(updates) == 2
    variables = _variables()
    assert set(variables) == {"gamma", "beta", "moving_mean", "moving_variance"}
    assert {v.op.name for v in tf.trainable_variables()} == {"batch_normalization/gamma",
                                                            "batch_normalization/beta"}
    m, v = X.mean(axis=(0, 1, 2)), X.var(axis=(0, 1, 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        out = sess.run(y)
        np.testing.assert_allclose(out, (X - m) / np.sqrt(v + EPS), atol=1e-5)
        np.testing.assert_array_equal(sess.run(variables["moving_mean"]), np.zeros(4))  # not run yet
        sess.run(updates)
        np.testing.assert_allclose(sess.run(variables["moving_mean"]), 0.1 * m, rtol=1e-5)
        np.testing.assert_allclose(sess.run(variables["moving_variance"]), 0.9 + 0.1 * v, rtol=1e-5)


def test_inference_uses_the_moving_averages_and_adds_no_updates():
    y = tf.layers.batch_normalization(X, training=False, center=False, scale=False)
    assert tf.get_collection(tf.GraphKeys.UPDATE_OPS) == []
    assert set(_variables()) == {"moving_mean", "moving_variance"}
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(y), X / np.sqrt(1.0 + EPS), rtol=1e-5)


def test_a_training_tensor_picks_the_statistics_and_gates_the_updates():
    training = tf.placeholder(tf.bool, [])
    y = tf.layers.batch_normalization(X, training=training, momentum=0.5)
    updates = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    moving_mean = _variables()["moving_mean"]
    m, v = X.mean(axis=(0, 1, 2)), X.var(axis=(0, 1, 2))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        off, _ = sess.run([y, updates], {training: False})
        np.testing.assert_allclose(off, X / np.sqrt(1.0 + EPS), rtol=1e-5)
        np.testing.assert_array_equal(sess.run(moving_mean), np.zeros(4))
        on, _ = sess.run([y, updates], {training: True})
        np.testing.assert_allclose(on, (X - m) / np.sqrt(v + EPS), atol=1e-5)
        np.testing.assert_allclose(sess.run(moving_mean), 0.5 * m, rtol=1e-5)


def test_axis_1_normalizes_channels_first_and_reuse_shares_variables():
    nchw = np.transpose(X, (0, 3, 1, 2))
    y = tf.layers.batch_normalization(nchw, axis=1, training=True, name="bn")
    again = tf.layers.batch_normalization(nchw, axis=1, training=True, name="bn", reuse=True)
    assert len(tf.global_variables()) == 4
    m = nchw.mean(axis=(0, 2, 3), keepdims=True)
    v = nchw.var(axis=(0, 2, 3), keepdims=True)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for out in sess.run([y, again]):
            np.testing.assert_allclose(out, (nchw - m) / np.sqrt(v + EPS), atol=1e-5)
    with pytest.raises(ValueError, match="known rank"):
        tf.layers.batch_normalization(tf.placeholder(tf.float32))


def test_a_net_with_batch_norm_trains_and_tracks_the_data_statistics():
    data = (rng.normal(size=(256, 6)) * 3.0 + 2.0).astype(np.float32)
    labels = (data[:, 0] > 2.0).astype(np.int64)
    x = tf.placeholder(tf.float32, [None, 6])
    y = tf.placeholder(tf.int64, [None])
    h = tf.layers.batch_normalization(x, training=True, momentum=0.8)
    logits = tf.layers.dense(h, 2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train = tf.train.GradientDescentOptimizer(0.5).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss, {x: data, y: labels})
        for _ in range(60):
            sess.run(train, {x: data, y: labels})
        last = sess.run(loss, {x: data, y: labels})
        moving_mean = sess.run(_variables()["moving_mean"])
    assert last < 0.3 < first
    np.testing.assert_allclose(moving_mean, data.mean(axis=0), rtol=1e-3)

"""Clipping, norms, dropout, losses, logsumexp, moments and friends: values against numpy."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run
from zmtf.training.gradients import gradients


def test_clipping_and_norms():
    a = np.array([3.0, -4.0], np.float32)
    b = np.array([[12.0]], np.float32)
    ta, tb = tf.constant(a), tf.constant(b)
    clipped, norm = tf.clip_by_global_norm([ta, None, tb], 6.5)
    values = run({"value": tf.clip_by_value(ta, -1.0, 2.0), "norm": norm,
                  "global": tf.global_norm([ta, tb]), "c0": clipped[0], "c2": clipped[2],
                  "by_norm": tf.clip_by_norm(ta, 2.5), "unit": tf.nn.l2_normalize(ta, 0),
                  "l2": tf.nn.l2_loss(ta)})
    assert values["value"].tolist() == [2.0, -1.0] and clipped[1] is None
    assert values["norm"] == pytest.approx(13.0) and values["global"] == pytest.approx(13.0)
    np.testing.assert_allclose(values["c0"], a * 0.5, rtol=1e-6)
    np.testing.assert_allclose(values["c2"], b * 0.5, rtol=1e-6)
    np.testing.assert_allclose(values["by_norm"], a * 0.5, rtol=1e-6)
    np.testing.assert_allclose(values["unit"], a / 5.0, rtol=1e-6)
    assert values["l2"] == pytest.approx(12.5)


def test_dropout_keeps_the_expected_fraction_scaled():
    x = tf.ones([200, 50])
    y = tf.nn.dropout(x, keep_prob=0.8, seed=7)
    out = run(y)
    kept = out != 0
    assert 0.75 < kept.mean() < 0.85
    np.testing.assert_allclose(out[kept], 1.25, rtol=1e-6)


def test_losses_logsumexp_moments_and_activations():
    logits = np.array([[2.0, -1.0, 0.5], [0.0, 3.0, -2.0]], np.float32)
    labels = np.array([0, 1])
    onehot = np.eye(3, dtype=np.float32)[labels]
    targets = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]], np.float32)
    x = tf.constant(logits)
    values = run({
        "lse": tf.reduce_logsumexp(x, axis=1), "lse_all": tf.reduce_logsumexp(x),
        "moments": tf.nn.moments(x, axes=[0]),
        "mse": tf.losses.mean_squared_error(tf.constant(targets), x),
        "xent": tf.losses.softmax_cross_entropy(tf.constant(onehot), x),
        "sparse": tf.losses.sparse_softmax_cross_entropy(tf.constant(labels), x),
        "sigmoid": tf.nn.sigmoid_cross_entropy_with_logits(labels=tf.constant(targets), logits=x),
        "leaky": tf.nn.leaky_relu(x, 0.1), "elu": tf.nn.elu(x),
        "nonzero": tf.count_nonzero(tf.constant([[0, 1], [2, 0]]), axis=1),
    })
    lse = np.log(np.exp(logits).sum(axis=1))
    np.testing.assert_allclose(values["lse"], lse, rtol=1e-5)
    np.testing.assert_allclose(values["lse_all"], np.log(np.exp(logits).sum()), rtol=1e-5)
    np.testing.assert_allclose(values["moments"][0], logits.mean(axis=0), rtol=1e-6)
    np.testing.assert_allclose(values["moments"][1], logits.var(axis=0), rtol=1e-5)
    np.testing.assert_allclose(values["mse"], ((logits - targets) ** 2).mean(), rtol=1e-6)
    xent = (lse - logits[[0, 1], labels]).mean()
    np.testing.assert_allclose([values["xent"], values["sparse"]], [xent, xent], rtol=1e-5)
    sig = 1 / (1 + np.exp(-logits))
    np.testing.assert_allclose(values["sigmoid"],
                               -(targets * np.log(sig) + (1 - targets) * np.log(1 - sig)), rtol=1e-5)
    np.testing.assert_allclose(values["leaky"], np.maximum(logits, 0.1 * logits), rtol=1e-6)
    np.testing.assert_allclose(values["elu"], np.where(logits > 0, logits, np.exp(logits) - 1), rtol=1e-6)
    assert values["nonzero"].tolist() == [1, 1]


def test_range_rounding_cumsum_and_placeholder_with_default():
    x = tf.constant([[1.5, -2.5], [0.5, np.nan]])
    d = tf.placeholder_with_default(tf.constant([1.0, 2.0]), [2])
    values = run({"r": tf.range(2, 8, 3), "f": tf.floor(x), "c": tf.ceil(x), "round": tf.round(x),
                  "nan": tf.is_nan(x), "finite": tf.is_finite(x),
                  "cum": tf.cumsum(tf.constant([[1.0, 2.0, 3.0]]), axis=1, exclusive=True, reverse=True),
                  "d": d * 2.0})
    assert values["r"].tolist() == [2, 5] and values["r"].dtype == np.int32
    assert values["round"][0].tolist() == [2.0, -2.0]                  # half to even
    assert values["f"][0].tolist() == [1.0, -3.0] and values["c"][0].tolist() == [2.0, -2.0]
    assert values["nan"].tolist() == [[False, False], [False, True]]
    assert values["finite"].tolist() == [[True, True], [True, False]]
    assert values["cum"].tolist() == [[5.0, 3.0, 0.0]]
    assert values["d"].tolist() == [2.0, 4.0]
    assert run(d * 2.0, {d: [5.0, 6.0]}).tolist() == [10.0, 12.0]   # fed like a placeholder


def test_range_with_tensor_bounds_follows_tf():
    x = tf.placeholder(tf.float32, [None, 3])
    n = tf.shape(x)[0]
    counted, stepped = tf.range(n), tf.range(2, n, 2)
    floats, down = tf.range(tf.constant(1.5), 4), tf.range(tf.constant(5), 0, -1)
    wide = tf.range(tf.constant(3, tf.int64))
    assert counted.shape.as_list() == [None] and floats.shape.as_list() == [3]
    assert (floats.dtype, down.dtype, wide.dtype) == (tf.float32, tf.int32, tf.int64)
    got = run([counted, stepped, floats, down, wide], {x: np.zeros((7, 3))})
    assert got[0].tolist() == list(range(7)) and got[1].tolist() == [2, 4, 6]
    assert got[2].tolist() == [1.5, 2.5, 3.5] and got[3].tolist() == [5, 4, 3, 2, 1]
    assert got[4].dtype == np.int64 and got[4].tolist() == [0, 1, 2]
    with pytest.raises(tf.errors.InvalidArgumentError, match="start <= limit when delta > 0"):
        run(tf.range(n, 0), {x: np.zeros((2, 3))})
    with pytest.raises(tf.errors.InvalidArgumentError, match="delta != 0"):
        run(tf.range(0, n, tf.constant(0)), {x: np.zeros((2, 3))})


def test_gradients_flow_through_the_compositions():
    w = tf.constant(np.array([0.5, -3.0, 2.0]))
    loss = tf.reduce_sum(tf.clip_by_value(w, -1.0, 1.0)) + tf.reduce_logsumexp(w) + \
        tf.reduce_sum(tf.cumsum(w, reverse=True))
    (g,) = gradients(loss, [w])
    softmax = np.exp([0.5, -3.0, 2.0]) / np.exp([0.5, -3.0, 2.0]).sum()
    np.testing.assert_allclose(run(g), np.array([1.0, 0.0, 0.0]) + softmax + np.array([1.0, 2.0, 3.0]),
                               rtol=1e-6)


def test_print_logs_first_n_and_passes_values_and_gradients(caplog):
    import logging

    x = tf.constant([1.0, 2.0])
    y = tf.Print(x, [x, tf.reduce_sum(x)], "values: ", first_n=2)
    (g,) = gradients(tf.reduce_sum(y * 3.0), [x])
    with caplog.at_level(logging.INFO, logger="zmtf.print"), tf.Session() as sess:
        for _ in range(3):
            value, grad = sess.run([y, g])
    assert value.tolist() == [1.0, 2.0] and grad.tolist() == [3.0, 3.0]
    printed = [r.getMessage() for r in caplog.records if r.name == "zmtf.print"]
    assert printed == ["values: [1. 2.] 3."] * 2                      # first_n=2: not a third time

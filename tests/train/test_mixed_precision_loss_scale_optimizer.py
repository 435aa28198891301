"""tf.train.experimental.MixedPrecisionLossScaleOptimizer: unscaled gradients, skipped
non-finite steps with a dynamic scale (halved; doubled after increment_period finite steps),
every step applied with a fixed one; TF's names and construction errors."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf

E = tf.train.experimental
LR, MOMENTUM = 0.1, 0.9


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def run_steps(loss_scale, xs):
    """loss = x * sum(w^2) under Momentum; returns [(w, global step, scale)] after each step."""
    x = tf.placeholder(tf.float32, [])
    w = tf.Variable([1.0, -2.0], name="w")
    step = tf.train.get_or_create_global_step()
    opt = E.MixedPrecisionLossScaleOptimizer(tf.train.MomentumOptimizer(LR, MOMENTUM), loss_scale)
    train = opt.minimize(x * tf.reduce_sum(w * w), global_step=step)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for value in xs:
            sess.run(train, {x: value})
            out.append(sess.run([w, step, opt._loss_scale()]))
    return train, out


def numpy_momentum(xs):
    """Momentum on the finite steps only; the skipped ones leave w and the step alone."""
    w, acc, ws = np.array([1.0, -2.0]), np.zeros(2), []
    for x in xs:
        if np.isfinite(x):
            acc = MOMENTUM * acc + 2 * x * w
            w = w - LR * acc
        ws.append(w)
    return ws


def test_dynamic_scale_skips_non_finite_steps():
    xs = [1.0, np.inf, 1.0, np.nan, 1.0, 1.0, 1.0]
    train, out = run_steps(E.DynamicLossScale(8.0, increment_period=2, multiplier=4.0), xs)
    assert train.name == "Momentum"
    for (w, _, _), want in zip(out, numpy_momentum(xs)):
        np.testing.assert_allclose(w, want, rtol=1e-5)
    assert [s for _, s, _ in out] == [1, 1, 2, 2, 3, 4, 5]
    assert [c for _, _, c in out] == [8.0, 2.0, 2.0, 1.0, 1.0, 4.0, 4.0]


def test_dynamic_scale_names_and_defaults():
    w = tf.Variable([3.0], name="w")
    opt = E.MixedPrecisionLossScaleOptimizer(tf.train.GradientDescentOptimizer(1.0), "dynamic")
    assert opt.get_name() == "GradientDescent"
    [(grad, _)] = opt.compute_gradients(tf.reduce_sum(5.0 * w))
    assert [v.name for v in tf.global_variables()] == ["w:0", "current_loss_scale:0",
                                                      "good_steps:0"]
    assert tf.global_variables()[2].dtype == tf.int64
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(grad), [5.0])
    scale = opt._loss_scale
    assert (scale.initial_loss_scale, scale.increment_period, scale.multiplier) == (2 ** 15, 2000, 2.0)


def test_fixed_scale_applies_every_step():
    _, out = run_steps(128.0, [1.0, 2.0])
    for (w, _, scale), want in zip(out, numpy_momentum([1.0, 2.0])):
        np.testing.assert_allclose(w, want, rtol=1e-5)
        assert scale == 128.0
    _, out = run_steps(4, [np.inf])
    assert out[0][1] == 1 and not np.isfinite(out[0][0]).any()   # TF applies it too


def test_scale_does_not_grow_past_float32():
    _, out = run_steps(E.DynamicLossScale(3e38, increment_period=1), [1e-38])  # grads finite
    assert out[0][2] == np.float32(3e38)


@pytest.mark.parametrize("opt, loss_scale, message", [
    ("notopt", "dynamic", '"opt" must be an instance of Optimizer'),
    (None, "x", "Could not interpret loss scale identifier: x"),
    (None, None, "loss_scale cannot be None"),
])
def test_construction_errors(opt, loss_scale, message):
    with pytest.raises(ValueError, match=message):
        E.MixedPrecisionLossScaleOptimizer(opt or tf.train.GradientDescentOptimizer(1.0), loss_scale)


def test_fixed_loss_scale_errors():
    with pytest.raises(ValueError, match="Python int or float"):
        E.FixedLossScale("3")
    with pytest.raises(ValueError, match="at least 1"):
        E.FixedLossScale(0.5)
    with pytest.raises(AttributeError, match="enable_mixed_precision_graph_rewrite is not in zmtf"):
        E.enable_mixed_precision_graph_rewrite  # noqa: B018

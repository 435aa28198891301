"""tf.contrib.mixed_precision.LossScaleOptimizer: gradients of loss * scale come back
unscaled; a step with a non-finite gradient moves nothing and shrinks the scale; the
exponential manager grows the scale after N finite steps (TF 1.15 contrib semantics)."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.contrib.mixed_precision import (ExponentialUpdateLossScaleManager,
                                          FixedLossScaleManager, LossScaleOptimizer)

LR = 0.1


@pytest.fixture(autouse=True)
def fresh_graph():
    with tf.Graph().as_default():
        yield


def build(manager, inner=None):
    """loss = x * sum(w^2): gradient 2 x w; x = inf makes it non-finite."""
    x = tf.placeholder(tf.float32, [])
    w = tf.Variable([1.0, -2.0], name="w")
    step = tf.train.get_or_create_global_step()
    opt = LossScaleOptimizer(inner or tf.train.GradientDescentOptimizer(LR), manager)
    loss = x * tf.reduce_sum(w * w)
    [(grad, _)] = opt.compute_gradients(loss, [w])
    train = opt.apply_gradients([(grad, w)], global_step=step)
    return dict(x=x, w=w, step=step, grad=grad, train=train)


def test_gradients_are_unscaled_with_a_fixed_scale():
    m = build(FixedLossScaleManager(1024.0))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(m["grad"], {m["x"]: 3.0}), [6.0, -12.0])
        sess.run(m["train"], {m["x"]: 1.0})
        np.testing.assert_allclose(sess.run(m["w"]), [1.0 - 2 * LR, -2.0 + 4 * LR], rtol=1e-6)


def test_fixed_scale_below_one_is_rejected():
    with pytest.raises(ValueError, match="at least 1"):
        FixedLossScaleManager(0.5)


def run_steps(manager, xs, inner=None):
    m = build(manager, inner)
    out = []
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for x in xs:
            sess.run(m["train"], {m["x"]: x})
            out.append(sess.run([m["w"], manager.get_loss_scale(), m["step"]]))
    return out


def test_non_finite_step_is_skipped_and_the_scale_shrinks():
    manager = ExponentialUpdateLossScaleManager(64.0, incr_every_n_steps=100,
                                                decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    w0 = np.array([1.0, -2.0])
    w1 = w0 - LR * 2 * w0
    (wa, sa, ga), (wb, sb, gb), (wc, sc, gc), (wd, sd, gd) = run_steps(
        manager, [1.0, np.inf, np.inf, 1.0])
    np.testing.assert_allclose(wa, w1, rtol=1e-6)
    assert (sa, ga) == (64.0, 1)
    np.testing.assert_allclose(wb, w1, rtol=1e-6)   # skipped: w and the step stay
    assert (sb, gb) == (64.0, 1)                    # 1 of 2 bad steps: not yet
    np.testing.assert_allclose(wc, w1, rtol=1e-6)
    assert (sc, gc) == (32.0, 1)                    # 2nd bad step: 64 * 0.5
    np.testing.assert_allclose(wd, w1 - LR * 2 * w1, rtol=1e-6)
    assert (sd, gd) == (32.0, 2)


def test_nan_gradient_is_skipped_too():
    manager = ExponentialUpdateLossScaleManager(4.0, 10, decr_every_n_nan_or_inf=1, decr_ratio=0.8)
    [(w, scale, step)] = run_steps(manager, [np.nan])
    np.testing.assert_allclose(w, [1.0, -2.0])
    assert step == 0 and scale == pytest.approx(3.2)


def test_scale_never_drops_below_one():
    manager = ExponentialUpdateLossScaleManager(1.5, 10, decr_every_n_nan_or_inf=1, decr_ratio=0.5)
    assert [s for _, s, _ in run_steps(manager, [np.inf, np.inf])] == [1.0, 1.0]


def numpy_manager(init, n_incr, n_decr, incr, decr, finite_steps):
    """TF 1.15's update rule, step by step."""
    scale, good, bad, scales = init, 0, 0, []
    for finite in finite_steps:
        if finite:
            if good + 1 >= n_incr:
                scale = scale * incr if np.isfinite(np.float32(scale * incr)) else scale
                good = bad = 0
            else:
                good += 1
        elif bad + 1 >= n_decr:
            scale, good, bad = max(1.0, scale * decr), 0, 0
        else:
            bad, good = bad + 1, 0
        scales.append(scale)
    return scales


def test_scale_grows_after_n_finite_steps_and_counts_reset():
    xs = [1.0, 1.0, 1.0, np.inf, 1.0, 1.0, 1.0, np.inf, np.inf, 1.0, 1.0, 1.0]
    manager = ExponentialUpdateLossScaleManager(8.0, incr_every_n_steps=3,
                                                decr_every_n_nan_or_inf=2, incr_ratio=2,
                                                decr_ratio=0.25)
    got = [s for _, s, _ in run_steps(manager, xs, tf.train.MomentumOptimizer(LR, 0.9))]
    want = numpy_manager(8.0, 3, 2, 2, 0.25, [np.isfinite(x) for x in xs])
    assert got == want
    assert want[2] == 16.0 and want[8] == 8.0         # the test exercises growth and shrink


def test_scale_does_not_grow_past_float32():
    manager = ExponentialUpdateLossScaleManager(3e38, incr_every_n_steps=1)
    assert [s for _, s, _ in run_steps(manager, [1.0])] == [np.float32(3e38)]


def test_manager_variables_and_sparse_gradients():
    manager = ExponentialUpdateLossScaleManager(16.0, 5)
    emb = tf.Variable([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], name="emb")
    opt = LossScaleOptimizer(tf.train.GradientDescentOptimizer(1.0), manager)
    train = opt.minimize(tf.reduce_sum(tf.gather(emb, [2, 0])))
    names = [v.op.name for v in tf.global_variables()]
    assert names[:3] == ["loss_scale", "good_steps", "bad_steps"]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        sess.run(train)
        np.testing.assert_allclose(sess.run(emb), [[0.0, 1.0], [3.0, 4.0], [4.0, 5.0]])

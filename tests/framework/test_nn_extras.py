"""tf.nn.zero_fraction, lrn, selu, crelu, weighted_cross_entropy_with_logits, log_poisson_loss,
sufficient_statistics / normalize_moments / weighted_moments: values against numpy and a
gradient against finite differences."""

import math

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run

RNG = np.random.default_rng(0)


def test_zero_fraction_and_the_activations():
    v = np.array([[0.0, 1.5, -2.0], [0.0, 0.0, 3.0]], np.float32)
    got = run([tf.nn.zero_fraction(v), tf.nn.selu(v), tf.nn.crelu(v)])
    assert got[0] == pytest.approx(0.5)
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    np.testing.assert_allclose(got[1], scale * np.where(v > 0, v, alpha * (np.exp(v) - 1)), rtol=1e-6)
    np.testing.assert_array_equal(got[2], np.concatenate([np.maximum(v, 0), np.maximum(-v, 0)], -1))


def _lrn(x, r, bias, alpha, beta):
    padded = np.pad(x ** 2, [(0, 0)] * 3 + [(r, r)])
    window = sum(padded[..., k:k + x.shape[-1]] for k in range(2 * r + 1))
    return x / (bias + alpha * window) ** beta


def test_lrn_matches_its_formula_and_its_gradient_finite_differences():
    x = RNG.standard_normal((2, 2, 3, 6))
    t = tf.placeholder(tf.float64, x.shape)
    out = tf.nn.lrn(t, depth_radius=2, bias=1.0, alpha=0.1, beta=0.75)
    [grad] = tf.gradients(tf.reduce_sum(out * out), [t])
    with tf.Session() as sess:
        got, g = sess.run([out, grad], {t: x})
        np.testing.assert_allclose(got, _lrn(x, 2, 1.0, 0.1, 0.75), rtol=1e-12)
        eps, index = 1e-6, (1, 0, 2, 3)
        step = np.zeros_like(x)
        step[index] = eps
        numeric = (np.sum(_lrn(x + step, 2, 1.0, 0.1, 0.75) ** 2)
                   - np.sum(_lrn(x - step, 2, 1.0, 0.1, 0.75) ** 2)) / (2 * eps)
    assert g[index] == pytest.approx(numeric, rel=1e-6)
    with pytest.raises(ValueError, match="channel depth"):
        tf.nn.lrn(tf.placeholder(tf.float32, [None, 2, 2, None]))


def test_losses_follow_tf1_formulas():
    z = (RNG.random((4, 3)) > 0.5).astype(np.float32)
    x = RNG.standard_normal((4, 3)).astype(np.float32)
    targets = RNG.poisson(2.0, (4, 3)).astype(np.float32)
    got = run([tf.nn.weighted_cross_entropy_with_logits(targets=z, logits=x, pos_weight=3.0),
               tf.nn.log_poisson_loss(targets, x),
               tf.nn.log_poisson_loss(targets, x, compute_full_loss=True)])
    sigmoid = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(got[0], -(3.0 * z * np.log(sigmoid) + (1 - z) * np.log(1 - sigmoid)), rtol=1e-5)
    np.testing.assert_allclose(got[1], np.exp(x) - x * targets, rtol=1e-6)
    safe = np.maximum(targets, 1)
    stirling = np.where(targets > 1, safe * np.log(safe) - safe + 0.5 * np.log(2 * math.pi * safe), 0)
    np.testing.assert_allclose(got[2], got[1] + stirling, rtol=1e-6)


def test_moments_helpers():
    x = RNG.standard_normal((3, 4, 5))
    w = RNG.random((3, 4, 5)) + 0.5
    count, mean_ss, var_ss, shift = tf.nn.sufficient_statistics(x, [0, 1], shift=0.25)
    mean, variance = tf.nn.normalize_moments(count, mean_ss, var_ss, shift)
    w_mean, w_var = tf.nn.weighted_moments(x, [0, 1], w)
    got = run([count, mean, variance, w_mean, w_var])
    assert got[0] == 12
    np.testing.assert_allclose(got[1], x.mean((0, 1)), rtol=1e-12)
    np.testing.assert_allclose(got[2], x.var((0, 1)), rtol=1e-10)
    ref_mean = (w * x).sum((0, 1)) / w.sum((0, 1))
    np.testing.assert_allclose(got[3], ref_mean, rtol=1e-12)
    np.testing.assert_allclose(got[4], (w * (x - ref_mean) ** 2).sum((0, 1)) / w.sum((0, 1)), rtol=1e-10)

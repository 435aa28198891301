"""tan, the inverse and hyperbolic functions and atan2: values against numpy, gradients
against central differences (TF 2.21 gives the same numbers to 6 places)."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf

X = np.array([0.3, -0.5, 0.7])
CASES = [("tan", np.tan, X), ("asin", np.arcsin, X), ("acos", np.arccos, X),
         ("atan", np.arctan, X), ("sinh", np.sinh, X), ("cosh", np.cosh, X),
         ("asinh", np.arcsinh, X), ("acosh", np.arccosh, X + 2.0), ("atanh", np.arctanh, X)]


def _central_difference(f, x, eps=1e-6):
    return np.array([(f(x + eps * e) - f(x - eps * e)).sum() / (2 * eps) for e in np.eye(len(x))])


@pytest.mark.parametrize("name,reference,x", CASES, ids=[c[0] for c in CASES])
def test_unary_values_and_gradients(name, reference, x):
    with tf.Graph().as_default(), tf.Session() as sess:
        t = tf.constant(x)
        out = getattr(tf, name)(t)
        (grad,) = tf.gradients(tf.reduce_sum(out), [t])
        value, g = sess.run([out, grad])
    np.testing.assert_allclose(value, reference(x))
    np.testing.assert_allclose(g, _central_difference(reference, x), rtol=1e-6)


def test_atan2_broadcasts_and_its_gradients_sum_back():
    y, x = np.array([[1.0], [-2.0]]), np.array([0.3, -0.5, 0.7])
    with tf.Graph().as_default(), tf.Session() as sess:
        ty, tx = tf.constant(y), tf.constant(x)
        out = tf.atan2(ty, tx)
        gy, gx = sess.run(tf.gradients(tf.reduce_sum(out), [ty, tx]))
        np.testing.assert_allclose(sess.run(out), np.arctan2(y, x))
    r2 = x ** 2 + y ** 2
    np.testing.assert_allclose(gy, (x / r2).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(gx, (-y / r2).sum(axis=0))


def test_trig_refuses_integers():
    with tf.Graph().as_default(), tf.Session() as sess:
        with pytest.raises(tf.errors.OpError):
            sess.run(tf.tan(tf.constant([1, 2])))

"""tf.erf, erfc, lgamma, digamma, polygamma, zeta: values against the math module and closed
forms (digamma and trigamma at 1, 1/2, integers; recurrence and reflection), TF's inf/nan at
poles, dtypes and broadcasting."""

import math

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run

EULER = 0.5772156649015329
rng = np.random.default_rng(11)


X = np.concatenate([rng.uniform(-8, 8, 40), rng.uniform(0.01, 3, 20), [0.5, 1.0, 25.0, 170.5]])
X = X[np.abs(X - np.round(X)) > 1e-3]   # away from the poles of lgamma


@pytest.mark.parametrize("name,reference", [("erf", math.erf), ("erfc", math.erfc),
                                            ("lgamma", math.lgamma)])
def test_math_module_functions_in_float64(name, reference):
    out = run(getattr(tf, name)(X))
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [reference(v) for v in X], rtol=1e-14, atol=1e-15)


def test_digamma_closed_forms():
    x = np.array([1.0, 0.5, 2.0, 5.0, -0.5])
    harmonic_4 = 1 + 1 / 2 + 1 / 3 + 1 / 4
    expected = [-EULER, -EULER - 2 * math.log(2), 1 - EULER, harmonic_4 - EULER,
                -EULER - 2 * math.log(2) + 2]     # psi(-1/2) = psi(1/2) + 2
    np.testing.assert_allclose(run(tf.digamma(x)), expected, rtol=1e-13)


def test_digamma_recurrence_and_reflection():
    x = rng.uniform(0.05, 30, 200)
    psi_x, psi_next = run([tf.digamma(x), tf.digamma(x + 1)])
    np.testing.assert_allclose(psi_next - psi_x, 1 / x, rtol=1e-12, atol=1e-12)
    x = x[np.abs(x - np.round(x)) > 1e-2]     # psi(1 - x) - psi(x) = pi cot(pi x)
    reflected = run(tf.digamma(1 - x) - tf.digamma(x))
    np.testing.assert_allclose(reflected, math.pi / np.tan(math.pi * x), rtol=1e-10, atol=1e-10)


def test_trigamma_closed_forms_and_reflection():
    x = np.array([1.0, 0.5, 4.0])
    expected = [math.pi ** 2 / 6, math.pi ** 2 / 2, math.pi ** 2 / 6 - (1 + 1 / 4 + 1 / 9)]
    np.testing.assert_allclose(run(tf.polygamma(1.0, x)), expected, rtol=1e-13)
    x = np.array([0.3, 0.75, 2.2, 3.6])   # psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)
    total = run(tf.polygamma(1.0, 1 - x) + tf.polygamma(1.0, x))
    np.testing.assert_allclose(total, math.pi ** 2 / np.sin(math.pi * x) ** 2, rtol=1e-12)


def test_polygamma_orders_and_zeta():
    x = np.array([0.5, 1.0, 2.5, 7.0])
    np.testing.assert_allclose(run(tf.polygamma(0.0, x)), run(tf.digamma(x)), rtol=0)
    # psi2(1) = -2 zeta(3); zeta(2, 1) = pi^2 / 6; zeta(x, q) - zeta(x, q + 1) = q^-x
    np.testing.assert_allclose(run(tf.polygamma(np.float64(2), np.float64(1))), -2 * 1.2020569031595942, rtol=1e-13)
    np.testing.assert_allclose(run(tf.zeta(np.float64(2), np.float64(1))), math.pi ** 2 / 6, rtol=1e-14)
    s, q = np.array([2.0, 3.5, 5.0]), np.array([0.7, 3.0, 12.5])
    np.testing.assert_allclose(run(tf.zeta(s, q) - tf.zeta(s, q + 1)), q ** -s, rtol=1e-12)


def test_poles_and_infinities_as_tf():
    x = np.array([0.0, -1.0, -3.0, np.inf, -np.inf, np.nan])
    lgamma, digamma, trigamma, psi2 = run([tf.lgamma(x), tf.digamma(x), tf.polygamma(1.0, x),
                                           tf.polygamma(2.0, x)])
    np.testing.assert_array_equal(lgamma, [np.inf, np.inf, np.inf, np.inf, np.inf, np.nan])
    np.testing.assert_array_equal(digamma, [np.nan, np.nan, np.nan, np.inf, np.nan, np.nan])
    np.testing.assert_array_equal(trigamma, [np.inf, np.inf, np.inf, 0.0, np.inf, np.nan])
    assert np.isnan(psi2[:3]).all()
    # a non-integer or negative order, and zeta with x < 1, are nan; zeta(1, q) is inf
    assert np.isnan(run(tf.polygamma([1.5, -1.0], [2.0, 2.0]))).all()
    np.testing.assert_array_equal(run(tf.zeta([0.5, 1.0], [2.0, 2.0])), [np.nan, np.inf])


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32])
def test_low_precision_dtypes_round_the_float64_value(dtype):
    x = np.array([0.3, 1.7, -2.5, 6.0], dtype.as_numpy_dtype)
    for fn in (tf.erf, tf.erfc, tf.lgamma, tf.digamma):
        out = run(fn(x))
        assert out.dtype == x.dtype
        exact = run(fn(x.astype(np.float64)))
        np.testing.assert_array_equal(out, exact.astype(x.dtype))


def test_polygamma_broadcasts_and_math_namespace():
    out = tf.math.polygamma(np.array([[0.0], [1.0]]), np.array([1.0, 2.0, 3.0]))
    assert out.shape.as_list() == [2, 3]
    np.testing.assert_allclose(run(out)[1], [math.pi ** 2 / 6, math.pi ** 2 / 6 - 1,
                                             math.pi ** 2 / 6 - 1.25], rtol=1e-13)
    assert tf.math.erf is tf.erf and tf.math.lgamma is tf.lgamma


def test_integer_inputs_are_refused():
    with pytest.raises(TypeError, match="Erf.*int32.*tf.cast"):
        tf.erf([1, 2])
    with pytest.raises(TypeError, match="Polygamma.*float16"):
        tf.polygamma(np.float16(1), np.float16(2))


def test_softsign_and_xlogy():
    x = np.array([-3.0, 0.0, 0.5, 10.0])
    np.testing.assert_allclose(run(tf.nn.softsign(x)), x / (1 + np.abs(x)), rtol=1e-15)
    assert tf.math.softsign is tf.nn.softsign
    out = run(tf.math.xlogy(np.array([[0.0], [2.0]]), np.array([0.0, 3.0, np.inf])))
    expected = [[0.0, 0.0, 0.0], [-np.inf, 2 * math.log(3.0), np.inf]]
    np.testing.assert_array_equal(out, expected)


def test_xlogy_gradient_is_zero_where_x_is_zero():
    x, y = tf.placeholder(tf.float64, [3]), tf.placeholder(tf.float64, [3])
    gx, gy = tf.gradients(tf.math.xlogy(x, y), [x, y])
    out = run([gx, gy], {x: [0.0, 0.0, 2.0], y: [0.0, 5.0, 4.0]})
    np.testing.assert_array_equal(out[0], [0.0, 0.0, math.log(4.0)])
    np.testing.assert_array_equal(out[1], [0.0, 0.0, 0.5])

"""erfinv, ndtri, the Bessel functions I0/I0e/I1/I1e, igamma/igammac, betainc, lbeta and
cumulative_logsumexp against closed forms and series written here, the inverse identities,
and edge values recorded from TF 2.21 (float64)."""

import math

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run


def test_erfinv_inverts_erf_and_keeps_precision_near_zero():
    assert tf.math.erfinv(np.float32(0.5)).name == "erfinv/Erfinv:0"   # TF's scope and op
    x = np.array([-0.999999, -0.5, -1e-10, 1e-300, 0.3, 0.99999999])
    y = run(tf.math.erfinv(x))
    for xi, yi in zip(x, y):
        if abs(xi) < 0.5:
            assert math.erf(yi) == pytest.approx(xi, rel=1e-15)
        else:   # compare the small complement, where the information is
            assert math.erfc(abs(yi)) == pytest.approx(1 - abs(xi), rel=1e-14)
    assert y[2] == pytest.approx(-1e-10 * math.sqrt(math.pi) / 2, rel=1e-15)
    edges = run(tf.math.erfinv(np.array([-1.5, -1.0, 0.0, 1.0, 2.0, np.nan])))
    np.testing.assert_array_equal(edges, [np.nan, -np.inf, 0.0, np.inf, np.nan, np.nan])


def test_ndtri_inverts_the_normal_cdf_tails_included():
    p = np.array([1e-300, 1e-20, 0.02, 0.3, 0.5, 0.7, 0.975, 0.9999])
    x = run(tf.math.ndtri(p))
    np.testing.assert_allclose([0.5 * math.erfc(-v / math.sqrt(2)) for v in x], p, rtol=1e-13)
    # recorded from TF 2.21
    np.testing.assert_allclose(x[:2], [-37.0470962993612, -9.262340089798409], rtol=1e-14)
    assert x[6] == pytest.approx(1.959963984540054, rel=1e-15)
    edges = run(tf.math.ndtri(np.array([-0.1, 0.0, 1.0, 1.1, np.nan])))
    np.testing.assert_array_equal(edges, [np.nan, -np.inf, np.inf, np.nan, np.nan])


def bessel_reference(x, order):
    """I_order(x) from the power series, each term through its logarithm, summed with fsum."""
    if x == 0:
        return 1.0 if order == 0 else 0.0
    log_half = math.log(abs(x) / 2)
    terms = [math.exp((2 * k + order) * log_half - math.lgamma(k + 1) - math.lgamma(k + order + 1))
             for k in range(150)]
    return math.copysign(math.fsum(terms), x) if order == 1 else math.fsum(terms)


@pytest.mark.parametrize("order", [0, 1])
def test_bessel_functions_against_their_series(order):
    x = np.array([-25.0, -3.0, -1e-3, 0.0, 0.5, 7.9, 19.9, 20.1, 30.0])
    plain, scaled = (tf.math.bessel_i0, tf.math.bessel_i0e) if order == 0 else \
                    (tf.math.bessel_i1, tf.math.bessel_i1e)
    values, scaled_values = run([plain(x), scaled(x)])
    expected = np.array([bessel_reference(v, order) for v in x])
    np.testing.assert_allclose(values, expected, rtol=1e-14)
    np.testing.assert_allclose(scaled_values, expected * np.exp(-np.abs(x)), rtol=1e-14)


def test_bessel_large_arguments_and_edges_as_tf():
    x = np.array([-750.0, 500.0, 713.0, np.inf, np.nan])
    i0, i0e, i1e = run([tf.math.bessel_i0(x), tf.math.bessel_i0e(x), tf.math.bessel_i1e(x)])
    # recorded from TF 2.21: I0 overflows where exp(|x|) does, the scaled ones stay finite
    np.testing.assert_allclose(i0[:3], [np.inf, 2.5048094765700785e+215, np.inf], rtol=1e-14)
    np.testing.assert_allclose(i0e, [0.01456974211674398, 0.01784570650015317,
                                     0.01494312718790497, 0.0, np.nan], rtol=1e-14)
    np.testing.assert_allclose(i1e[:3], [-0.01456002571328636, 0.01782785185289805,
                                         0.01493264445713479], rtol=1e-14)


def test_igamma_closed_forms():
    x = np.array([0.01, 0.5, 1.0, 2.5, 7.0, 30.0])
    p_half, p_one, p_two, q_three = run([tf.igamma(0.5, x), tf.igamma(1.0, x), tf.igamma(2.0, x),
                                          tf.igammac(3.0, x)])
    np.testing.assert_allclose(p_half, [math.erf(math.sqrt(v)) for v in x], rtol=1e-14)
    np.testing.assert_allclose(p_one, -np.expm1(-x), rtol=1e-14)
    # 1 - e^-x (1 + x) cancels at small x (2e-12 off at x = 0.01 on some CPUs' exp):
    # the same closed form without the cancellation of two values near 1
    np.testing.assert_allclose(p_two, -np.expm1(-x) - x * np.exp(-x), rtol=1e-13)
    np.testing.assert_allclose(q_three, np.exp(-x) * (1 + x + x * x / 2), rtol=1e-13)
    assert tf.igamma(np.ones((2, 1)), np.ones(3)).shape.as_list() == [2, 3]


def test_igamma_edge_values_as_tf():
    a = np.array([-1.0, 0.0, 0.0, 0.5, 2.0, np.inf, 1.0, 1.0, np.nan, 0.5])
    x = np.array([1.0, 0.0, 1.0, 0.0, 1e-300, 1.0, np.inf, -1.0, 1.0, 1e5])
    p, q = run([tf.igamma(a, x), tf.math.igammac(a, x)])
    # recorded from TF 2.21
    np.testing.assert_array_equal(p, [np.nan, 0, np.nan, 0, 0, 0, 1, np.nan, np.nan, 1])
    np.testing.assert_array_equal(q, [np.nan, np.nan, np.nan, 1, 1, 1, 0, np.nan, np.nan, 0])


def binomial_tail(a, b, x):
    """I_x(a, b) for integer a, b: P(Binomial(a + b - 1, x) >= a)."""
    n = a + b - 1
    return math.fsum(math.comb(n, j) * x ** j * (1 - x) ** (n - j) for j in range(a, n + 1))


def test_betainc_closed_forms_and_edges():
    a = np.array([1.0, 3.0, 1.0, 2.0, 50.0, 5.0])
    b = np.array([1.0, 1.0, 4.0, 3.0, 40.0, 500.0])
    x = np.array([0.3, 0.7, 0.2, 0.4, 0.55, 0.02])
    expected = [binomial_tail(int(i), int(j), k) for i, j, k in zip(a, b, x)]
    np.testing.assert_allclose(run(tf.betainc(a, b, x)), expected, rtol=1e-13)
    assert run(tf.math.betainc(2.0, 3.0, 0.4)) == pytest.approx(0.5248, rel=1e-15)
    edges = run(tf.betainc(np.array([0.0, 1, -1, 1, 1, np.inf, 2]), np.array([1.0, 0, 1, 1, 1, 1, 2]),
                           np.array([0.5, 0.5, 0.5, 0.0, 1.0, 0.5, 1.5])))
    np.testing.assert_array_equal(edges, [np.nan, np.nan, np.nan, 0, 1, np.nan, np.nan])


def test_betainc_shapes_dtypes_and_errors():
    assert tf.betainc(1.0, np.ones(3, np.float32), 0.5).shape.as_list() == [3]
    with pytest.raises(ValueError, match="Betainc"):
        tf.betainc(np.ones(2), np.ones(3), np.ones(2))
    with pytest.raises(TypeError, match="float16"):
        tf.betainc(np.ones(2, np.float16), np.ones(2, np.float16), np.ones(2, np.float16))
    with pytest.raises(TypeError, match="int32"):
        tf.math.erfinv(np.ones(2, np.int32))


def test_lbeta():
    x = np.array([[1.0, 2.0], [0.5, 0.5], [3.0, 40.0]])
    out = tf.lbeta(x)
    assert out.shape.as_list() == [3] and out.name.startswith("lbeta/")
    expected = [math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b) for a, b in x]
    np.testing.assert_allclose(run(out), expected, rtol=1e-14)
    np.testing.assert_array_equal(run(tf.math.lbeta(np.zeros((2, 0)))), [-np.inf, -np.inf])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_cumulative_logsumexp(exclusive, reverse):
    x = np.random.default_rng(2).normal(size=(3, 5))
    out = run(tf.math.cumulative_logsumexp(x, axis=1, exclusive=exclusive, reverse=reverse))
    y = x[:, ::-1] if reverse else x
    expected = np.log(np.cumsum(np.exp(y), axis=1))
    if exclusive:
        expected = np.concatenate([np.full((3, 1), -np.inf), expected[:, :-1]], axis=1)
    np.testing.assert_allclose(out, expected[:, ::-1] if reverse else expected, rtol=1e-14)


def test_cumulative_logsumexp_is_stable():
    out = run(tf.math.cumulative_logsumexp(np.array([1000.0, 1000.0, -1000.0, -np.inf])))
    np.testing.assert_allclose(out, 1000 + np.log([1, 2, 2, 2]), rtol=1e-15)
    single = run(tf.math.cumulative_logsumexp(np.array([[1e4, 1e4]], np.float32), axis=-1))
    assert single.dtype == np.float32 and np.isfinite(single).all()

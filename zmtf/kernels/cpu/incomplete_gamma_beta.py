"""Igamma, Igammac (the regularized incomplete gamma functions P and Q), IgammaGradA (dP/da)
and Betainc (the regularized incomplete beta function), in float64, rounded to the dtype.

P and Q follow Cephes (and Eigen, so TF): the power series of P where x <= 1 or x <= a, the
continued fraction of Q elsewhere, the other as 1 minus it. dP/da differentiates the same
series and continued fraction in forward mode, as Eigen does. Betainc is the Lentz continued
fraction, on the side of the symmetry I_x(a, b) = 1 - I_(1-x)(b, a) where it converges fast.
Edge values are TF's: P(a, 0) = 0 for any a; nan for x < 0, a <= 0 or a nan; P(a, inf) = 1;
P(inf, x) = 0. Betainc is nan for a or b not in (0, inf) or x outside [0, 1].
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zmtf.kernels.cpu.common import FLOATS
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.cpu.special import digamma
from zmtf.kernels.registry import register

_MACHEP = 1.11022302462515654042e-16
_MAXLOG = 7.09782712893383996843e2
_BIG = 4.503599627370496e15
_BIGINV = 2.22044604925031308085e-16


@jit()
def _log_prefactor(a: float, x: float) -> float:
    """log(x^a e^-x / Gamma(a))."""
    return a * math.log(x) - x - math.lgamma(a)


@jit()
def _series(a: float, x: float, with_derivative: bool) -> tuple[float, float]:
    """(P, dP/da) from P = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1)...(a + n))."""
    log_factor = _log_prefactor(a, x) - math.log(a)
    if log_factor < -_MAXLOG:
        return 0.0, 0.0
    term = 1.0
    total = 1.0
    d_term = 0.0       # d term / da
    d_total = 0.0
    r = a
    for _ in range(100000):
        r += 1.0
        d_term = d_term * x / r - term * x / (r * r)
        term *= x / r
        total += term
        d_total += d_term
        if term <= total * _MACHEP and (not with_derivative or abs(d_term) <= abs(d_total) * _MACHEP):
            break
    factor = math.exp(log_factor)
    p = total * factor
    if not with_derivative:
        return p, 0.0
    # d/da log(prefactor) = log x - psi(a + 1)
    return p, factor * (d_total + total * (math.log(x) - digamma(a + 1.0)))


@jit()
def _continued_fraction(a: float, x: float, with_derivative: bool) -> tuple[float, float]:
    """(Q, dQ/da) from Cephes' continued fraction of Q, differentiated in forward mode."""
    log_factor = _log_prefactor(a, x)
    if log_factor < -_MAXLOG:
        return 0.0, 0.0
    y = 1.0 - a
    z = x + y + 1.0
    c = 0.0
    pkm2, qkm2, pkm1, qkm1 = 1.0, x, x + 1.0, z * x
    d_pkm2, d_qkm2, d_pkm1, d_qkm1 = 0.0, 0.0, 0.0, -x      # derivatives in a (dz/da = -1)
    ans = pkm1 / qkm1
    d_ans = -pkm1 * d_qkm1 / (qkm1 * qkm1)
    for _ in range(2000):   # converges in far fewer steps where it is used (x > a, x > 1)
        c += 1.0
        y += 1.0
        z += 2.0
        yc = y * c
        d_yc = -c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        d_pk = d_pkm1 * z - pkm1 - d_pkm2 * yc - pkm2 * d_yc
        d_qk = d_qkm1 * z - qkm1 - d_qkm2 * yc - qkm2 * d_yc
        t = 1.0
        dt = 0.0
        if qk != 0.0:
            r = pk / qk
            d_r = (d_pk - r * d_qk) / qk
            t = abs((ans - r) / r)
            dt = abs(d_ans - d_r)
            ans, d_ans = r, d_r
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        d_pkm2, d_pkm1, d_qkm2, d_qkm1 = d_pkm1, d_pk, d_qkm1, d_qk
        if abs(pk) > _BIG:
            pkm2 *= _BIGINV
            pkm1 *= _BIGINV
            qkm2 *= _BIGINV
            qkm1 *= _BIGINV
            d_pkm2 *= _BIGINV
            d_pkm1 *= _BIGINV
            d_qkm2 *= _BIGINV
            d_qkm1 *= _BIGINV
        if t <= _MACHEP and (not with_derivative or dt <= abs(d_ans) * 4.0 * _MACHEP):
            break
    factor = math.exp(log_factor)
    q = ans * factor
    if not with_derivative:
        return q, 0.0
    return q, factor * (d_ans + ans * (math.log(x) - digamma(a)))


@jit()
def igamma(a: float, x: float, complement: bool, derivative: bool) -> float:
    """P(a, x), Q(a, x) (``complement``) or dP/da (``derivative``)."""
    if x == 0.0 and not complement and not derivative:
        return 0.0
    if math.isnan(a) or math.isnan(x) or x < 0.0 or a <= 0.0:
        return math.nan
    if x == 0.0:
        return 1.0 if complement else 0.0
    if math.isinf(x):
        if math.isinf(a):
            return math.nan
        return 0.0 if complement or derivative else 1.0
    if math.isinf(a):
        return 1.0 if complement else 0.0
    if x <= 1.0 or x <= a:
        p, dp = _series(a, x, derivative)
        return dp if derivative else (1.0 - p if complement else p)
    q, dq = _continued_fraction(a, x, derivative)
    return -dq if derivative else (q if complement else 1.0 - q)


@jit()
def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz), fast for x < (a + 1)/(a + b + 2)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (tiny if abs(d) < tiny else d)
    h = d
    for m in range(1, 100000):
        m2 = 2.0 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (tiny if abs(d) < tiny else d)
            c = 1.0 + aa / c
            c = tiny if abs(c) < tiny else c
            h *= d * c
        if abs(d * c - 1.0) <= _MACHEP:
            break
    return h


@jit()
def betainc(a: float, b: float, x: float) -> float:
    if not (0.0 < a < math.inf and 0.0 < b < math.inf and 0.0 <= x <= 1.0):
        return math.nan
    if x == 0.0 or x == 1.0:
        return x
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
                 + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


@jit()
def _igamma_loop(a: np.ndarray, x: np.ndarray, out: np.ndarray, complement: bool,
                 derivative: bool) -> None:
    for i in range(a.size):
        out[i] = igamma(a[i], x[i], complement, derivative)


@jit()
def _betainc_loop(a: np.ndarray, b: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    for i in range(a.size):
        out[i] = betainc(a[i], b[i], x[i])


def _flat64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1)


def _igamma_kernel(complement: bool, derivative: bool) -> Any:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        a, x = np.broadcast_arrays(*inputs)
        out = np.empty(a.size, np.float64)
        _igamma_loop(_flat64(a), _flat64(x), out, complement, derivative)
        return [out.astype(inputs[0].dtype).reshape(a.shape)]

    return kernel


register("Igamma", dtypes=FLOATS)(_igamma_kernel(False, False))
register("Igammac", dtypes=FLOATS)(_igamma_kernel(True, False))
register("IgammaGradA", dtypes=FLOATS)(_igamma_kernel(False, True))


@register("Betainc", dtypes=("float32", "float64"))
def betainc_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    a, b, x = np.broadcast_arrays(*inputs)    # the op's shape function allowed only scalars to differ
    out = np.empty(a.size, np.float64)
    _betainc_loop(_flat64(a), _flat64(b), _flat64(x), out)
    return [out.astype(inputs[0].dtype).reshape(a.shape)]

"""Erfinv, Ndtri, the modified Bessel functions I0, I0e, I1, I1e, and CumulativeLogsumexp.

Like special.py, every kernel computes in float64 and rounds to the input's dtype. There is
no scipy and no table of Cephes coefficients here:

* ndtri and erfinv start from Abramowitz & Stegun 26.2.23 (error < 4.5e-4) and polish with
  Newton steps on log Phi(x) (resp. erf/erfc), which converge to float64 precision in a few
  steps, tails included (log Phi uses its asymptotic series below x = -37). erfinv is solved
  directly, so it keeps its relative precision near 0, where TF's ndtri((x + 1) / 2) / sqrt(2)
  loses it.
* I0 and I1 sum their power series up to |x| = 20 (all terms of one sign: no cancellation)
  and their Hankel asymptotic series beyond, whose smallest term there is under 1e-17.
  I0 = exp(|x|) * I0e, as Eigen computes it, so it overflows to inf past |x| ~ 709.8 as TF's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zmtf.kernels.cpu.common import FLOATS, quiet_fp
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.cpu.reduce import _cumulative
from zmtf.kernels.registry import register

_LOG_SQRT_2PI = 0.91893853320467274178
_SQRT2 = 1.41421356237309504880
_EPS = 2.220446049250313e-16


@jit()
def log_ndtr(x: float) -> float:
    """log Phi(x): through erfc where Phi(x) is a normal float, else its asymptotic series."""
    if x > -37.0:
        return math.log(0.5 * math.erfc(-x / _SQRT2))
    z = 1.0 / (x * x)
    series = 1.0 - z * (1.0 - 3.0 * z * (1.0 - 5.0 * z * (1.0 - 7.0 * z)))
    return -0.5 * x * x - _LOG_SQRT_2PI - math.log(-x) + math.log(series)


@jit()
def _ndtri_lower(q: float) -> float:
    """Phi^-1(q) for 0 < q <= 0.5."""
    t = math.sqrt(-2.0 * math.log(q))
    x = -(t - (2.515517 + t * (0.802853 + t * 0.010328))
          / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308))))
    log_q = math.log(q)
    for _ in range(50):
        log_cdf = log_ndtr(x)
        density_over_cdf = math.exp(-0.5 * x * x - _LOG_SQRT_2PI - log_cdf)
        step = (log_cdf - log_q) / density_over_cdf
        x -= step
        if abs(step) <= 4.0 * _EPS * abs(x):
            break
    return x


@jit()
def ndtri(p: float) -> float:
    """The inverse of the standard normal CDF; -inf at 0, inf at 1, nan outside [0, 1]."""
    if not (0.0 <= p <= 1.0):
        return math.nan
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    if p == 0.5:
        return 0.0
    if p > 0.5:
        return -_ndtri_lower(1.0 - p)   # exact: 1 - p has no rounding error for p in (0.5, 1]
    return _ndtri_lower(p)


@jit()
def erfinv(y: float) -> float:
    """x with erf(x) = y; +-inf at +-1, nan outside [-1, 1]."""
    if not (-1.0 <= y <= 1.0):
        return math.nan
    if y == 1.0:
        return math.inf
    if y == -1.0:
        return -math.inf
    if y == 0.0:
        return y
    a = abs(y)
    complement = 1.0 - a      # exact for a >= 0.5, where erfc is the accurate residual
    x = abs(ndtri(0.5 * complement) / _SQRT2) if a >= 0.5 else a * 0.886226925452758
    for _ in range(50):
        # f = erf(x) - a, through erfc where erf(x) is close to 1
        f = complement - math.erfc(x) if a >= 0.5 else math.erf(x) - a
        newton = -f / (1.1283791670955126 * math.exp(-x * x))   # erf' = 2/sqrt(pi) exp(-x^2)
        step = newton / (1.0 - x * newton)                       # Halley (erf'' = -2x erf')
        x += step
        if abs(step) <= 2.0 * _EPS * x:
            break
    return x if y > 0 else -x


@jit()
def _bessel_series(x: float, order: int) -> float:
    """I_order(x) for order 0 or 1 from its power series (all terms of one sign)."""
    quarter_square = 0.25 * x * x
    term = 1.0 if order == 0 else 0.5 * x
    total = term
    k = 1
    while abs(term) > _EPS * 0.25 * abs(total) or k < 3:
        term *= quarter_square / (k * (k + order))
        total += term
        k += 1
    return total


@jit()
def _bessel_asymptotic_scaled(ax: float, order: int) -> float:
    """exp(-x) I_order(x) for x >= 20 from the Hankel expansion."""
    mu = 4.0 * order * order
    term = 1.0
    total = 1.0
    for k in range(1, 60):
        next_term = term * ((2.0 * k - 1.0) ** 2 - mu) / (8.0 * k * ax)
        if abs(next_term) >= abs(term):
            break
        term = next_term
        total += term
        if abs(term) <= _EPS * 0.25 * abs(total):
            break
    return total / math.sqrt(2.0 * math.pi * ax)


@jit()
def bessel_scaled(x: float, order: int) -> float:
    """exp(-|x|) I_order(x): I0e or I1e (odd in x)."""
    if math.isnan(x):
        return math.nan
    ax = abs(x)
    if math.isinf(ax):
        return 0.0
    if ax <= 20.0:
        value = math.exp(-ax) * _bessel_series(ax, order)
    else:
        value = _bessel_asymptotic_scaled(ax, order)
    return -value if order == 1 and x < 0 else value


@jit()
def bessel(x: float, order: int) -> float:
    """I_order(x) = exp(|x|) * I_order_e(x), as Eigen (inf past |x| ~ 709.8)."""
    ax = abs(x)
    if ax <= 20.0:
        return _bessel_series(x, order)
    return math.exp(ax) * bessel_scaled(x, order)


@jit()
def _map(kind: int, x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        v = x[i]
        if kind == 0:
            out[i] = erfinv(v)
        elif kind == 1:
            out[i] = ndtri(v)
        elif kind <= 3:
            out[i] = bessel(v, kind - 2)
        else:
            out[i] = bessel_scaled(v, kind - 4)


def _elementwise(kind: int) -> Any:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        x = inputs[0]
        out = np.empty(x.size, np.float64)
        _map(kind, np.ascontiguousarray(x, dtype=np.float64).reshape(-1), out)
        with quiet_fp():   # float16 may overflow to inf, as TF's does
            return [out.astype(x.dtype, copy=False).reshape(x.shape)]

    return kernel


for _kind, _op_type in enumerate(("Erfinv", "Ndtri", "BesselI0", "BesselI1", "BesselI0e",
                                  "BesselI1e")):
    register(_op_type, dtypes=FLOATS)(_elementwise(_kind))


def _logaddexp_scan(y: np.ndarray, axis: int, dtype: Any) -> np.ndarray:
    return np.logaddexp.accumulate(y.astype(np.float64), axis=axis).astype(dtype)


@register("CumulativeLogsumexp", dtypes=FLOATS)
def cumulative_logsumexp(ctx: Any, inputs: list, attrs: dict) -> list:
    """log(cumsum(exp(x))) along ``axis``, one stable log-add-exp per element; ``exclusive``
    starts at -inf (log 0), ``reverse`` from the end."""
    return [_cumulative(_logaddexp_scan, -np.inf, inputs[0], attrs)]

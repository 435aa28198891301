"""Special functions: Erf, Erfc, Lgamma, Digamma, and the binary Polygamma and Zeta.

Every kernel computes in float64 and rounds to the input's dtype, so float16/float32 get
correctly rounded values of the float64 result. There is no scipy here: digamma and the
Hurwitz zeta (polygamma(n, x) = (-1)^(n+1) n! zeta(n+1, x)) follow Cephes as Eigen, and so
TF, do, including where they give inf or nan: digamma is nan at 0 and the negative integers,
zeta(s, q) at such a q is inf for an even integer s (trigamma) and nan otherwise.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zmtf.kernels.cpu.common import FLOATS, quiet_fp
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.registry import register

_EULER = 0.57721566490153286061
_MACHEP = 1.11022302462515654042e-16
#: Cephes' Euler-Maclaurin coefficients of zeta: (2k)! / B_2k
_ZETA_A = np.array([
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18,
])


@jit()
def digamma(x: float) -> float:
    """psi(x): the recurrence up to x >= 10, then the asymptotic series; the reflection
    formula below 0 (Cephes ``psi`` as Eigen writes it)."""
    reflection = 0.0
    if x <= 0.0:
        p = math.floor(x)
        if p == x:
            return math.nan
        fraction = x - p
        if fraction != 0.5:
            if fraction > 0.5:
                fraction = x - (p + 1.0)
            reflection = math.pi / math.tan(math.pi * fraction)
        x = 1.0 - x
    shift = 0.0
    while x < 10.0:
        shift += 1.0 / x
        x += 1.0
    series = 0.0
    if x < 1e17:
        z = 1.0 / (x * x)
        # sum of B_2k / (2k) z^k, k = 1..7, in Horner form
        series = z * (((((((8.33333333333333333333e-2 * z - 2.10927960927960927961e-2) * z
                            + 7.57575757575757575758e-3) * z - 4.16666666666666666667e-3) * z
                          + 3.96825396825396825397e-3) * z - 8.33333333333333333333e-3) * z
                        + 8.33333333333333333333e-2))
    return math.log(x) - 0.5 / x - series - shift - reflection


@jit()
def zeta(s: float, q: float, coefficients: np.ndarray) -> float:
    """The Hurwitz zeta sum_k (q + k)^-s: direct terms until q + k > 9, then Euler-Maclaurin
    (Eigen's ``zeta_impl``; a negative q needs an integer s, as (q + k)^-s must be real)."""
    if s == 1.0:
        return math.inf
    if not s > 1.0:
        return math.nan
    if q <= 0.0:
        if q == math.floor(q):
            return math.inf if s == math.floor(s) and int(s) % 2 == 0 else math.nan
        if s != math.floor(s):
            return math.nan
    if q > 1e8:   # the asymptotic expansion (DLMF 25.11.43); 0 at q = inf
        return (1.0 / (s - 1.0) + 0.5 / q) * q ** (1.0 - s)
    total = q ** -s
    a = q
    b = 0.0
    terms = 0
    while terms < 9 or a <= 9.0:   # a negative q sums on until q + k > 9
        terms += 1
        a += 1.0
        b = a ** -s
        total += b
        if abs(b / total) < _MACHEP:
            return total
    w = a
    total += b * w / (s - 1.0) - 0.5 * b
    rising = 1.0
    k = 0.0
    for i in range(12):
        rising *= s + k
        b /= w
        term = rising * b / coefficients[i]
        total += term
        if abs(term / total) < _MACHEP:
            return total
        k += 1.0
        rising *= s + k
        b /= w
        k += 1.0
    return total


@jit()
def polygamma(n: float, x: float, coefficients: np.ndarray) -> float:
    """The n-th derivative of digamma, for an integer n >= 0 (nan otherwise, as TF)."""
    if n != math.floor(n):
        return math.nan
    if n == 0.0:
        return digamma(x)
    order = n + 1.0
    return (-1.0) ** order * math.exp(math.lgamma(order)) * zeta(order, x, coefficients)


@jit()
def _erf_loop(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = math.erf(x[i])


@jit()
def _erfc_loop(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = math.erfc(x[i])


@jit()
def _lgamma_loop(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = math.lgamma(x[i])


@jit()
def _digamma_loop(x: np.ndarray, out: np.ndarray) -> None:
    for i in range(x.size):
        out[i] = digamma(x[i])


@jit()
def _zeta_loop(s: np.ndarray, q: np.ndarray, out: np.ndarray, coefficients: np.ndarray) -> None:
    for i in range(s.size):
        out[i] = zeta(s[i], q[i], coefficients)


@jit()
def _polygamma_loop(n: np.ndarray, x: np.ndarray, out: np.ndarray,
                    coefficients: np.ndarray) -> None:
    for i in range(n.size):
        out[i] = polygamma(n[i], x[i], coefficients)


def _as_float64(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float64).reshape(-1)


def _unary(loop: Any) -> Any:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        x = inputs[0]
        out = np.empty(x.size, np.float64)
        loop(_as_float64(x), out)
        with quiet_fp():   # a float16 result may overflow to inf, as TF's does
            return [out.astype(x.dtype, copy=False).reshape(x.shape)]

    return kernel


def _binary(loop: Any) -> Any:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        a, x = np.broadcast_arrays(*inputs)
        out = np.empty(x.size, np.float64)
        loop(_as_float64(a), _as_float64(x), out, _ZETA_A)
        return [out.astype(inputs[0].dtype, copy=False).reshape(x.shape)]

    return kernel


for _op_type, _loop in (("Erf", _erf_loop), ("Erfc", _erfc_loop), ("Lgamma", _lgamma_loop),
                        ("Digamma", _digamma_loop)):
    register(_op_type, dtypes=FLOATS)(_unary(_loop))
register("Polygamma", dtypes=("float32", "float64"))(_binary(_polygamma_loop))
register("Zeta", dtypes=("float32", "float64"))(_binary(_zeta_loop))

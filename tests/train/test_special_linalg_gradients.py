"""Gradients of the special functions and the linear-algebra ops against finite differences
(the Case harness of test_gradients.py)."""

import numpy as np
import pytest

import zmtf as tf
from test_gradients import Case, finite_difference_check, positive

rng = np.random.default_rng(5)


def away_from_poles(*shape: int) -> np.ndarray:
    """Values in (-3, 6) at least 0.2 from 0 and the negative integers."""
    x = rng.uniform(-3, 6, size=shape)
    return np.where(np.abs(x - np.round(x)) < 0.2, x + 0.4, x)


CASES = [
    Case("erf", tf.erf, [rng.normal(size=(2, 3))]),
    Case("erfc", tf.erfc, [rng.normal(size=(3,))]),
    Case("lgamma", tf.lgamma, [away_from_poles(2, 3)]),
    Case("digamma", tf.digamma, [away_from_poles(2, 3)], rtol=1e-5),
    Case("polygamma", lambda x: tf.polygamma(np.array([1.0, 2.0, 3.0]), x), [positive(2, 3)],
         rtol=1e-5),
    Case("zeta", lambda q: tf.zeta(np.array([[2.0], [3.5]]), q), [positive(3)]),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_gradient_matches_finite_differences(case):
    finite_difference_check(case)

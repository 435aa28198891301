"""The kernels' float-error policy: silent, as in TF, whether or not a quiet section is open.

pytest runs with warnings as errors, so a numpy RuntimeWarning fails these tests.
"""

from __future__ import annotations

import numpy as np
import pytest

from zmtf.kernels.fp import quiet_section, quietly
from zmtf.kernels import VariableRef


def _state() -> dict:
    return dict(np.geterr())


def test_quietly_silences_numpy_outside_a_quiet_section_and_restores_the_state() -> None:
    before = _state()
    zero = np.zeros(3, np.float32)
    out = quietly(np.divide, zero, zero)
    assert np.isnan(out).all()
    assert _state() == before
    with pytest.raises(RuntimeWarning):   # the policy is the kernels', not the process's
        np.divide(zero, zero)


def test_quietly_passes_keywords_and_inside_a_section_calls_straight_through() -> None:
    big = np.full(2, 3e38, np.float32)
    out = np.empty(2, np.float32)
    with quiet_section():
        seen = quietly(lambda: _state())
        assert quietly(np.add, big, big, out=out) is out
    assert set(seen.values()) == {"ignore"}
    assert np.isinf(out).all()


@pytest.mark.parametrize(("op_type", "a", "b"), [
    ("RealDiv", np.zeros(4, np.float32), np.zeros(4, np.float32)),          # 0/0 -> nan
    ("Mul", np.full(4, 3e38, np.float32), np.full(4, 10, np.float32)),      # overflow -> inf
    ("MatMul", np.full((2, 2), 3e38, np.float32), np.full((2, 2), 3e38, np.float32)),
])
def test_hot_kernels_called_outside_the_executor_stay_silent(run, op_type, a, b) -> None:
    extra = {"transpose_a": False, "transpose_b": False} if op_type == "MatMul" else {}
    [out] = run(op_type, [a, b], **extra)
    assert not np.isfinite(out).any()


def test_mean_and_sum_of_overflowing_floats_stay_silent(run) -> None:
    x = np.full((2, 3), 3e38, np.float32)
    axis = np.array([1], np.int32)
    [total] = run("Sum", [x, axis], keep_dims=False)
    [mean] = run("Mean", [x, axis], keep_dims=False)
    assert np.isinf(total).all()
    assert mean.dtype == np.float32


def test_assign_add_overflow_stays_silent(ctx, run) -> None:
    ref = VariableRef(ctx.resources, "v")
    run("Assign", [ref, np.full(3, 3e38, np.float32)])
    run("AssignAdd", [ref, np.full(3, 3e38, np.float32)])
    assert np.isinf(ctx.resources.read("v")).all()

"""Convolutions split over the calling thread and the intra-op helper (kernels/cpu/parts.py,
runtime/intra_op.py): every part runs once, errors come back to the caller, and the values
are the same bits whether the helper runs or not (the batch chunks depend on the shapes
only)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zmtf.kernels.cpu.conv as conv_kernels
from zmtf.kernels.cpu import parts
from zmtf.runtime import intra_op


def test_parts_run_once_each_on_the_caller_and_the_helper():
    helped = threading.Event()
    ran: list[tuple[int, int, str]] = []

    def part(k: int, worker: int) -> None:
        if worker == 1:
            helped.set()
        elif k == 0:
            assert helped.wait(10), "the helper never took a part"
        ran.append((k, worker, threading.current_thread().name))

    parts.run_parts(6, part, 2)
    assert sorted(k for k, _, _ in ran) == list(range(6))
    assert {name for _, worker, name in ran if worker == 1} == {"zmtf-intra-op"}


def test_one_worker_runs_every_part_on_the_calling_thread():
    ran: list[tuple[int, str]] = []
    parts.run_parts(3, lambda k, worker: ran.append((k, threading.current_thread().name)), 1)
    assert ran == [(k, threading.current_thread().name) for k in range(3)]


def test_a_part_error_is_raised_on_the_calling_thread():
    def part(k: int, worker: int) -> None:
        if k == 3:
            raise ValueError("part 3 failed")

    with pytest.raises(ValueError, match="part 3 failed"):
        parts.run_parts(5, part, 2)


def _conv_ops(case, dtype, rng):
    """The four convolution kernels of a training step on ``case``'s shapes."""
    in_shape, (f_h, f_w, out_c), strides, padding, dilations = case
    x = rng.standard_normal(in_shape).astype(dtype)
    w = rng.standard_normal((f_h, f_w, in_shape[3], out_c)).astype(dtype)
    b = rng.standard_normal(out_c).astype(dtype)
    attrs = dict(strides=[1, *strides, 1], padding=padding, dilations=[1, *dilations, 1],
                 _node_name="conv")
    y, kept = conv_kernels.conv2d_bias_relu(None, x, w, b, True, attrs, keep_columns=True)
    dy = rng.standard_normal(y.shape).astype(dtype)
    sizes = np.array(w.shape, np.int32)
    return [y, conv_kernels.conv2d(None, [x, w], attrs)[0],
            conv_kernels.conv2d_backprop_filter(None, [x, sizes, dy, kept], attrs)[0],
            conv_kernels.conv2d_backprop_filter(None, [x, sizes, dy], attrs)[0],
            conv_kernels.conv2d_backprop_input(None, [np.array(x.shape, np.int32), w, dy], attrs)[0]]


# each at least SPLIT_MIN_FLOPS: two chunks, whatever the column budget
SPLIT_CASES = [
    ((8, 20, 20, 16), (3, 3, 32), (1, 1), "VALID", (1, 1)),
    ((40, 13, 12, 8), (3, 2, 64), (2, 1), "SAME", (1, 2)),
    ((64, 28, 28, 1), (3, 3, 32), (1, 1), "VALID", (1, 1)),   # one channel: transposed columns
]


@pytest.mark.parametrize("case", SPLIT_CASES, ids=["rows", "strided-dilated", "one-channel"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_split_convolutions_are_the_same_bits_with_and_without_the_helper(case, dtype, helper_runs_a_part,
                                                                         monkeypatch):
    assert len(conv_kernels._Conv(None, case[0], (*case[1][:2], case[0][3], case[1][2]),
                                  dict(strides=[1, *case[2], 1], padding=case[3],
                                       dilations=[1, *case[4], 1], _node_name="c")).batch_chunks()) >= 2
    helped = _conv_ops(case, dtype, np.random.default_rng(0))
    assert helper_runs_a_part, "the helper ran no part of a split convolution"
    monkeypatch.setattr(parts, "ENABLED", False)
    alone = _conv_ops(case, dtype, np.random.default_rng(0))
    for a, b in zip(helped, alone):
        assert a.dtype == np.dtype(dtype) and np.array_equal(a, b)
    # and as one chunk (the kernels before the split): equal up to the filter gradient's sums
    monkeypatch.setattr(conv_kernels, "SPLIT_MIN_FLOPS", 1 << 60)
    monkeypatch.setattr(conv_kernels, "_COLUMN_BUDGET", 1 << 30)
    whole = _conv_ops(case, dtype, np.random.default_rng(0))
    tolerance = 1e-4 if dtype == "float32" else 1e-11
    for a, b in zip(helped, whole):
        np.testing.assert_allclose(a, b, rtol=tolerance, atol=tolerance)


def test_two_workers_are_kept_only_while_they_are_timed_faster(monkeypatch):
    """parts._Timings: the first call of a key runs on one worker, the second on two; then
    the faster kind, the other one every PROBE_EVERY-th call; it follows when times change."""
    monkeypatch.setattr(intra_op._Spare, "MIN_CORES", -1.0)
    monkeypatch.setattr(parts, "ENABLED", True)
    monkeypatch.setattr(parts.blas, "threads_cap", lambda: 2)
    monkeypatch.setattr(parts, "_TIMINGS", parts._Timings())
    wall = {1: 1.0, 2: 0.6}   # seconds a call takes with 1 / 2 workers, on a fake clock
    clock = [0.0]
    monkeypatch.setattr(parts, "perf_counter", lambda: clock[0])

    def call(key="conv"):
        chosen = []

        def body(workers):
            chosen.append(workers)
            clock[0] += wall[workers]

        parts.run_keyed(key, 2, body)
        return chosen[0]

    first = [call() for _ in range(2 * parts._Timings.PROBE_EVERY)]
    assert first[:2] == [1, 2]
    assert first.count(1) == 1 + 2   # the first call and two probes
    assert [call("other shapes") for _ in range(2)] == [1, 2]   # each key timed apart
    wall[2] = 1.5   # two workers now lose (a CPU quota, a busy core)
    later = [call() for _ in range(4 * parts._Timings.PROBE_EVERY)]
    assert later[-parts._Timings.PROBE_EVERY:].count(2) == 1   # only the probe
    wall[2] = 0.5   # and win again: the probes see it
    again = [call() for _ in range(8 * parts._Timings.PROBE_EVERY)]
    assert again[-parts._Timings.PROBE_EVERY:].count(1) == 1
    assert parts.workers_for(1, "conv") == 1   # one part: nothing to share

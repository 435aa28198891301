"""Big float products in two halves over the calling thread and the intra-op helper
(kernels/cpu/matmul.py SPLIT_MIN_FLOPS): the same bits as one product, whoever runs which
half; small products and integer ones stay whole."""

from __future__ import annotations

import numpy as np
import pytest

from zmtf.kernels.cpu import matmul

SHAPES = [(256, 640, 512), (1000, 300, 130), (130, 300, 1000), (400, 400, 400), (130, 9000, 70)]


@pytest.mark.parametrize("m,k,n", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("transpose_a,transpose_b", [(False, False), (True, False), (False, True), (True, True)])
def test_a_product_in_halves_has_the_bits_of_one_product(m, k, n, dtype, transpose_a, transpose_b,
                                                          helper_runs_a_part, monkeypatch):
    assert matmul.SPLIT_MIN_FLOPS <= 2 * m * k * n < matmul.SINGLE_THREAD_FLOPS
    rng = np.random.default_rng(m + k + n)
    a = rng.standard_normal((k, m) if transpose_a else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if transpose_b else (k, n)).astype(dtype)
    attrs = {"_node_name": "product", "transpose_a": transpose_a, "transpose_b": transpose_b}
    got = matmul.mat_mul(None, [a, b], attrs)[0]
    assert helper_runs_a_part == [1], "the helper did not multiply the second half"
    # one product on one BLAS thread (two BLAS threads may add a long inner dimension's
    # blocks in another order)
    monkeypatch.setattr(matmul, "SPLIT_MIN_FLOPS", 1 << 62)
    whole = matmul.mat_mul(None, [a, b], attrs)[0]
    assert got.dtype == whole.dtype and np.array_equal(got, whole)


def test_small_and_integer_products_stay_whole(helper_runs_a_part):
    rng = np.random.default_rng(1)
    small = rng.standard_normal((64, 800)).astype(np.float32), rng.standard_normal((800, 128)).astype(np.float32)
    ints = rng.integers(-9, 9, (256, 640)), rng.integers(-9, 9, (640, 512))
    for a, b in (small, ints):
        got = matmul.mat_mul(None, [a, b], {"_node_name": "product"})[0]
        np.testing.assert_array_equal(got, a @ b)
    assert helper_runs_a_part == []


def test_a_stacked_weight_gradient_splits_by_its_whole_size(helper_runs_a_part):
    """An RNN's 20 per-step products of 2^22 flops each, stacked: 2^26.3 flops in halves."""
    rng = np.random.default_rng(2)
    xs = [rng.standard_normal((32, 256)).astype(np.float32) for _ in range(20)]
    gs = [rng.standard_normal((32, 512)).astype(np.float32) for _ in range(20)]
    inputs = [t for pair in zip(xs, gs) for t in pair]
    got = matmul.stacked_mat_mul(None, inputs, {"_node_name": "dW", "transpose_a": True})[0]
    assert helper_runs_a_part == [1]
    np.testing.assert_array_equal(got, np.concatenate(xs).T @ np.concatenate(gs))

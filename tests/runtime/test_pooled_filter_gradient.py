"""A first layer's filter gradient computed from its max pool's gradient chunk by chunk
(runtime.pooled_filter_gradient): the same bits as the unfused kernels, on the one-pass path
and on the member-by-member one; no fusion where the layer's input gradient is wanted."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.kernels.cpu import conv as conv_kernels
from zmtf.kernels.cpu import pool as pool_kernels

from tests.runtime.test_conv_fusion import assert_same_bits, run_traced, unfused_config

JOINED = "_FusedMaxPoolGradFilter[MaxPoolGrad+ReluGrad+SumToShape+"


def _first_layer(dtype, channels: int, pool: int, padding: str, input_gradient: bool = False):
    """conv -> bias -> relu -> max_pool -> loss on 25 14x15 images, the gradients of the
    filter and bias (and of the input if asked), each times 1 (a fetched gradient is not
    fused)."""
    rng = np.random.default_rng(12)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.standard_normal((25, 14, 15, channels)), dtype)
        if input_gradient:
            x = x * 1.5
        w = tf.constant(rng.standard_normal((3, 3, channels, 6)) * 0.5, dtype)
        b = tf.constant(rng.standard_normal(6) * 0.1, dtype)
        h = tf.nn.relu(tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding=padding) + b)
        h = tf.nn.max_pool(h, ksize=[1, pool, pool, 1], strides=[1, pool, pool, 1], padding="VALID")
        loss = tf.reduce_sum(h * h)
        wanted = [w, b] + ([x] if input_gradient else [])
        fetches = [loss] + [g * 1.0 for g in tf.gradients(loss, wanted)]
    return graph, fetches


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("channels", [1, 3], ids=["kept-columns", "own-columns"])
@pytest.mark.parametrize("pool,padding", [(2, "VALID"), (2, "SAME"), (3, "SAME")],
                         ids=["2x2", "2x2-odd-rows-left-out", "3x3-member-by-member"])
def test_the_joined_gradient_gives_the_unfused_bits(dtype, channels, pool, padding, monkeypatch):
    # chunks of 2 images (13 of them) whatever the column budgets
    pixels = 12 * 13 if padding == "VALID" else 14 * 15
    monkeypatch.setattr(conv_kernels, "_ONE_CHANNEL_BUDGET", 2 * pixels * 9 * channels + 1)
    monkeypatch.setattr(conv_kernels, "_COLUMN_BUDGET", 2 * pixels * 9 * channels + 1)
    filled: list[tuple[int, int]] = []
    by_images = pool_kernels.relu_pool_grad_by_images

    def counted(*args, **kwargs):
        made = by_images(*args, **kwargs)
        if made is None:
            return None
        fill, sums = made
        return (lambda lo, hi, out: (filled.append((lo, hi)), fill(lo, hi, out))), sums

    monkeypatch.setattr(pool_kernels, "relu_pool_grad_by_images", counted)
    graph, fetches = _first_layer(dtype, channels, pool, padding)
    joined, labels = run_traced(graph, fetches, runs=1)
    if pool == 2:   # the one-pass path, chunk after chunk
        assert filled == [(lo, min(lo + 2, 25)) for lo in range(0, 25, 2)]
    else:           # windows 3 wide: the members' kernels
        assert filled == []
    unfused, plain = run_traced(graph, fetches, unfused_config())
    assert_same_bits(joined, unfused)
    assert sum(JOINED in label for label in labels) == 1
    assert not any("MaxPoolGrad" in label and JOINED not in label for label in labels)
    assert not any(JOINED in label for label in plain)


def test_a_layer_whose_input_gradient_is_wanted_keeps_its_pool_gradient():
    graph, fetches = _first_layer(tf.float32, 1, 2, "VALID", input_gradient=True)
    values, labels = run_traced(graph, fetches)
    assert not any(JOINED in label for label in labels)
    assert any("_FusedMaxPoolGrad[MaxPoolGrad+ReluGrad+SumToShape]" in label for label in labels)
    assert_same_bits(values, run_traced(graph, fetches, unfused_config())[0])

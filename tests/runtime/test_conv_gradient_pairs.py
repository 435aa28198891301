"""A convolution's two gradients as one node run side by side (runtime.conv_gradient_pairs):
the same bits as unpaired, with the helper running one of them; a failing member named; no
pair where one gradient waits for the other or is fetched."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import zmtf as tf
from zmtf.kernels.cpu import parts

from tests.runtime.test_conv_fusion import assert_same_bits, run_traced, unfused_config

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)
PAIR = "_Conv2DGradients[Conv2DBackpropInput+"


def _layer_gradients(dtype, padding, strides, dilations, batch=3):
    """A conv's value, loss and gradients for its filter and its (non-constant) input, each
    times 1 (a fetched gradient is not paired)."""
    rng = np.random.default_rng(4)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.standard_normal((batch, 11, 12, 5)), dtype)
        x = x * 1.5   # the input gradient is wanted: x is not a leaf constant
        w = tf.constant(rng.standard_normal((3, 2, 5, 7)) * 0.5, dtype)
        y = tf.nn.conv2d(x, w, strides=[1, strides, strides, 1], padding=padding,
                         dilations=[1, dilations, dilations, 1])
        loss = tf.reduce_sum(y * y)
        fetches = [y, loss] + [g * 1.0 for g in tf.gradients(loss, [w, x])]
    return graph, fetches


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("padding,strides,dilations", [
    ("VALID", 1, 1), ("SAME", 1, 1), ("SAME", 2, 1), ("VALID", 1, 2)])
def test_paired_gradients_give_the_unpaired_bits_with_the_helper_running_one(
        dtype, padding, strides, dilations, helper_runs_a_part):
    graph, fetches = _layer_gradients(dtype, padding, strides, dilations)
    paired, labels = run_traced(graph, fetches)
    assert helper_runs_a_part, "the helper ran neither gradient"
    unpaired, plain = run_traced(graph, fetches, unfused_config())
    assert_same_bits(paired, unpaired)
    assert sum(PAIR in label for label in labels) == 1
    assert not any("Conv2DBackpropInput" in label and PAIR not in label for label in labels)
    assert not any("_Conv2DGradients" in label for label in plain)


def test_kernels_inside_a_part_keep_their_chunks_on_their_thread(helper_runs_a_part):
    """A big convolution run as one part of a pair splits no further: the other worker is
    busy with the other gradient. Outside a part it splits."""
    seen: dict[str, int] = {}

    def part(k: int, worker: int) -> None:
        seen[threading.current_thread().name] = parts.workers_for(4)

    parts.run_parts(2, part, 2)
    assert sorted(seen.values()) == [1, 1] and len(seen) == 2
    assert parts.workers_for(4) == 2


def test_a_failing_member_is_named():
    rng = np.random.default_rng(2)
    graph = tf.Graph()
    with graph.as_default():
        g = tf.constant(rng.standard_normal((2, 4, 4, 3)), tf.float32)
        sizes = tf.placeholder(tf.int32, [4])
        w = tf.constant(rng.standard_normal((3, 3, 2, 3)), tf.float32)
        x = tf.constant(rng.standard_normal((2, 6, 6, 2)), tf.float32)
        dx = tf.nn.conv2d_backprop_input(sizes, w, g, strides=[1, 1, 1, 1], padding="VALID",
                                         name="the_input_gradient")
        dw = tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], g, strides=[1, 1, 1, 1], padding="VALID")
        total = tf.reduce_sum(dx) + tf.reduce_sum(dw)
    with tf.Session(graph=graph) as sess:
        good = sess.run(total, {sizes: [2, 6, 6, 2]}, options=FULL, run_metadata=(meta := tf.RunMetadata()))
        with pytest.raises(tf.errors.InvalidArgumentError, match="the_input_gradient"):
            sess.run(total, {sizes: [2, 7, 6, 2]})
    labels = [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]
    assert sum(PAIR in label for label in labels) == 1
    assert np.isfinite(good)


def _two_gradients(fetch_one: bool, one_waits: bool):
    rng = np.random.default_rng(8)
    graph = tf.Graph()
    with graph.as_default():
        g = tf.constant(rng.standard_normal((2, 4, 4, 3)), tf.float32)
        w = tf.constant(rng.standard_normal((3, 3, 2, 3)), tf.float32)
        x = tf.constant(rng.standard_normal((2, 6, 6, 2)), tf.float32)
        dw = tf.nn.conv2d_backprop_filter(x, [3, 3, 2, 3], g, strides=[1, 1, 1, 1], padding="VALID")
        with tf.control_dependencies([dw] if one_waits else []):
            dx = tf.nn.conv2d_backprop_input([2, 6, 6, 2], w, g, strides=[1, 1, 1, 1], padding="VALID")
        fetches = [tf.reduce_sum(dx) * tf.reduce_sum(dw)] + ([dw] if fetch_one else [])
    return graph, fetches


@pytest.mark.parametrize("fetch_one,one_waits", [(False, False), (True, False), (False, True)])
def test_a_fetched_gradient_or_one_waiting_for_the_other_is_not_paired(fetch_one, one_waits):
    graph, fetches = _two_gradients(fetch_one, one_waits)
    values, labels = run_traced(graph, fetches)
    assert any(PAIR in label for label in labels) == (not fetch_one and not one_waits)
    assert_same_bits(values, run_traced(graph, fetches, unfused_config())[0])

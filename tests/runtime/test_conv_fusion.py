"""Convolution fusion (runtime.conv_fusion): Conv2D + bias + Relu as one node, the first
conv's im2col columns handed to its filter gradient. Fused and unfused steps must give the
same bits, locally and on a server."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf

FULL = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)


def unfused_config() -> tf.ConfigProto:
    return tf.ConfigProto(graph_options=tf.GraphOptions(
        optimizer_options=tf.OptimizerOptions(global_jit_level=tf.OptimizerOptions.OFF)))


def _cnn(dtype, padding: str, strides: int, dilations: int, bias_shape=None, add=tf.add):
    """A 2-layer CNN's forward values and all gradients, on fixed random inputs."""
    rng = np.random.default_rng(7)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.standard_normal((3, 12, 11, 1)), dtype)
        h, params = x, []
        for cin, cout in ((1, 4), (4, 6)):
            w = tf.constant(rng.standard_normal((3, 3, cin, cout)) * 0.5, dtype)
            b = tf.constant(rng.standard_normal(bias_shape or [cout]) * 0.1, dtype)
            conv = tf.nn.conv2d(h, w, strides=[1, strides, strides, 1], padding=padding,
                                dilations=[1, dilations, dilations, 1])
            h = tf.nn.relu(add(conv, b))
            params += [w, b]
            if cin == 1:
                h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="SAME")
        loss = tf.reduce_sum(h * h)
        fetches = [h, loss] + tf.gradients(loss, params + [x])
    return graph, fetches


def run_traced(graph, fetches, config=None, runs=2):
    """The values of ``runs`` traced runs' last, and its trace's timeline labels."""
    meta = tf.RunMetadata()
    with tf.Session(graph=graph, config=config) as sess:
        for _ in range(runs):
            values = sess.run(fetches, options=FULL, run_metadata=meta)
    labels = [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]
    return values, labels


def assert_same_bits(got, want):
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("padding,strides,dilations", [
    ("VALID", 1, 1), ("SAME", 1, 1), ("VALID", 2, 1), ("SAME", 2, 1), ("SAME", 1, 2), ("VALID", 1, 2)])
def test_fused_convolutions_give_the_unfused_bits(dtype, padding, strides, dilations):
    graph, fetches = _cnn(dtype, padding, strides, dilations)
    fused, labels = run_traced(graph, fetches)
    unfused, plain_labels = run_traced(graph, fetches, unfused_config())
    assert_same_bits(fused, unfused)
    assert sum("_FusedConv2D[Conv2D+Add+Relu]" in label for label in labels) == 2
    # the one-channel input's columns reach its filter gradient; the 4-channel one's gradient
    # is linked too (it copies its own columns: see conv.SharedColumns)
    assert sum("_Conv2DBackpropFilterWithColumns" in label for label in labels) == 2
    assert not any("_FusedConv2D" in label or "WithColumns" in label for label in plain_labels)


@pytest.mark.parametrize("add,op", [(tf.nn.bias_add, "BiasAdd"), (lambda c, b: b + c, "Add")])
def test_bias_add_a_bias_first_and_a_bias_of_another_shape_give_the_unfused_bits(add, op):
    graph, fetches = _cnn(tf.float32, "SAME", 1, 1, add=add)
    fused, labels = run_traced(graph, fetches)
    assert_same_bits(fused, run_traced(graph, fetches, unfused_config())[0])
    assert sum(f"_FusedConv2D[Conv2D+{op}+Relu]" in label for label in labels) == 2
    # a [1, 1, 1] bias broadcasts over everything: the fused node runs its members one by one
    graph, fetches = _cnn(tf.float32, "VALID", 1, 1, bias_shape=[1, 1, 1])
    fused, labels = run_traced(graph, fetches)
    assert_same_bits(fused, run_traced(graph, fetches, unfused_config())[0])
    assert sum("_FusedConv2D" in label for label in labels) == 2


def test_a_fetched_convolution_or_sum_is_not_fused_and_keeps_its_value():
    rng = np.random.default_rng(3)
    x = tf.constant(rng.standard_normal((2, 6, 6, 1)), tf.float32)
    w = tf.constant(rng.standard_normal((3, 3, 1, 2)), tf.float32)
    conv = tf.nn.conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME")
    summed = conv + tf.constant([0.5, -0.5])
    relu = tf.nn.relu(summed)
    with tf.Session() as sess:
        conv_v, summed_v, relu_v = sess.run([conv, summed, relu], options=FULL,
                                            run_metadata=(meta := tf.RunMetadata()))
        relu_only = sess.run(relu)
    labels = [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]
    assert not any("_FusedConv2D" in label for label in labels)
    np.testing.assert_array_equal(summed_v, conv_v + np.float32([0.5, -0.5]))
    np.testing.assert_array_equal(relu_v, np.maximum(summed_v, 0))
    np.testing.assert_array_equal(relu_only, relu_v)   # fused there: nothing else fetched


def _fused_and_unfused(graph, fetches, init=None):
    runs = []
    for config in (None, unfused_config()):
        with tf.Session(graph=graph, config=config) as sess:
            if init is not None:
                sess.run(init)
            meta = tf.RunMetadata()
            values = sess.run(fetches, options=FULL, run_metadata=meta)
        runs.append((values, [n.timeline_label for d in meta.step_stats.dev_stats for n in d.node_stats]))
    assert_same_bits(runs[0][0], runs[1][0])
    return runs[0][1]


def test_columns_of_another_window_are_not_used():
    """A 1x3 conv's columns and a 3x1 filter gradient of the same input: the same [70, 3]
    shape, another window. The gradient is linked to the conv, and copies its own."""
    rng = np.random.default_rng(5)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.standard_normal((2, 7, 7, 1)), tf.float32)
        wide = tf.constant(rng.standard_normal((1, 3, 1, 2)), tf.float32)
        out = tf.nn.conv2d(x, wide, strides=[1, 1, 1, 1], padding="VALID")      # [2, 7, 5, 2]
        grad = tf.nn.conv2d_backprop_filter(x, [3, 1, 1, 2], tf.transpose(out, [0, 2, 1, 3]),
                                            strides=[1, 1, 1, 1], padding="VALID")
    labels = _fused_and_unfused(graph, [grad])
    assert sum("_Conv2DBackpropFilterWithColumns" in label for label in labels) == 1


def test_a_variable_input_does_not_share_its_columns():
    rng = np.random.default_rng(6)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(rng.standard_normal((2, 7, 7, 1)), tf.float32)
        v = tf.Variable(rng.standard_normal((2, 7, 7, 1)).astype(np.float32))
        w = tf.constant(rng.standard_normal((3, 3, 1, 2)), tf.float32)
        outs = [tf.nn.conv2d(t, w, strides=[1, 1, 1, 1], padding="SAME") for t in (x, v)]
        loss = tf.add_n([tf.reduce_sum(o * o) for o in outs])
        fetches = [loss] + tf.gradients(loss, [w])
        init = tf.global_variables_initializer()
    labels = _fused_and_unfused(graph, fetches, init)
    assert sum("_Conv2DBackpropFilterWithColumns" in label for label in labels) == 1   # x's only


def test_a_cnn_trains_alike_fused_on_a_server_and_unfused_locally():
    rng = np.random.default_rng(11)
    images = rng.random((8, 10, 10, 1), dtype=np.float32)
    labels = rng.integers(0, 3, 8).astype(np.int32)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(1)
        x = tf.placeholder(tf.float32, [8, 10, 10, 1])
        y = tf.placeholder(tf.int32, [8])
        w = tf.Variable(tf.truncated_normal([3, 3, 1, 4], stddev=0.3))
        b = tf.Variable(tf.fill([4], 0.01))
        h = tf.nn.max_pool(tf.nn.relu(tf.nn.conv2d(x, w, [1, 1, 1, 1], "VALID") + b),
                           [1, 2, 2, 1], [1, 2, 2, 1], "VALID")
        w2 = tf.Variable(tf.truncated_normal([64, 3], stddev=0.3))
        logits = tf.matmul(tf.reshape(h, [8, 64]), w2)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.AdamOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
        params = tf.trainable_variables()
    losses = []
    server = tf.train.Server.create_local_server()
    try:
        for target, config in ((server.target, None), ("", unfused_config())):
            with tf.Session(target, graph=graph, config=config) as sess:
                sess.run(init)
                steps = [sess.run([train, loss], {x: images, y: labels})[1] for _ in range(4)]
                losses.append(steps + list(sess.run(params)))
    finally:
        server.stop()
    assert_same_bits([np.asarray(v) for v in losses[0]], [np.asarray(v) for v in losses[1]])


@pytest.mark.parametrize("dtype", [tf.float32, tf.float64])
@pytest.mark.parametrize("shape", [(2, 9, 8, 3), (4, 32, 33, 3)])
def test_max_pool_grad_relu_grad_and_bias_grad_fused_give_the_unfused_bits(dtype, shape):
    """2-wide tiling windows run as one pass, the bias's gradient summed in it when the
    input is big enough for SumToShape's row-order sum; others (overlapping, padded, 3
    wide, small) run the kernels in the fused node. NaNs, ties, zeros, negatives."""
    rng = np.random.default_rng(9)
    values = rng.integers(-3, 4, shape).astype(np.float64)
    values[rng.random(values.shape) < 0.1] = np.nan
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(values, dtype)
        bias = tf.constant(rng.integers(-1, 2, shape[-1]) * 0.5, dtype)
        h = tf.nn.relu(x * 1.5 + bias)
        pools = [tf.nn.max_pool(h, [1, a, b, 1], [1, s, t, 1], pad) for a, b, s, t, pad in (
            (2, 2, 2, 2, "VALID"), (3, 2, 3, 2, "VALID"), (2, 2, 2, 2, "SAME"), (3, 3, 2, 2, "VALID"))]
        weights = [tf.constant(rng.standard_normal(p.shape.as_list()), dtype) for p in pools]
        fetches = [g for p, w in zip(pools, weights) for g in tf.gradients(tf.reduce_sum(p * w), [x, bias])]
    labels = _fused_and_unfused(graph, fetches)
    assert sum("_FusedMaxPoolGrad[MaxPoolGrad+ReluGrad+SumToShape]" in label for label in labels) == 4

"""tf.layers.conv2d_transpose, separable_conv2d and conv1d: TF1's variable names and shapes,
output sizes (conv2d_transpose's 'same' / 'valid' rule, an unknown batch), values equal to
the tf.nn ops under the layer's own variables, and reuse."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf


def variables():
    return {v.op.name: v.shape.as_list() for v in tf.global_variables()}


def evaluate(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


@pytest.mark.parametrize("padding, strides, expected", [
    ("same", (2, 2), [None, 10, 8, 4]),
    ("valid", (2, 2), [None, 11, 9, 4]),
    ("valid", (1, 3), [None, 7, 12, 4]),
])
def test_conv2d_transpose_sizes_variables_and_values(padding, strides, expected):
    x = tf.placeholder(tf.float32, [None, 5, 4, 3])
    y = tf.layers.conv2d_transpose(x, 4, 3, strides=strides, padding=padding,
                                   bias_initializer=tf.constant_initializer(0.5))
    assert y.shape.as_list() == expected
    assert variables() == {"conv2d_transpose/kernel": [3, 3, 4, 3], "conv2d_transpose/bias": [4]}
    kernel = tf.global_variables()[0]
    by_hand = tf.nn.conv2d_transpose(x, kernel, [2, *expected[1:]], [1, *strides, 1],
                                     padding.upper()) + 0.5
    feed = {x: np.random.default_rng(0).normal(size=(2, 5, 4, 3))}
    got, wanted = evaluate([y, by_hand], feed)
    assert got.shape == (2, *expected[1:])
    np.testing.assert_allclose(got, wanted, rtol=1e-5, atol=1e-5)


def test_separable_conv2d_variables_and_values():
    x = tf.placeholder(tf.float32, [2, 7, 6, 3])
    y = tf.layers.separable_conv2d(x, 5, (3, 3), depth_multiplier=2, padding="same",
                                   activation=tf.nn.relu)
    assert y.shape.as_list() == [2, 7, 6, 5]
    assert variables() == {"separable_conv2d/depthwise_kernel": [3, 3, 3, 2],
                           "separable_conv2d/pointwise_kernel": [1, 1, 6, 5],
                           "separable_conv2d/bias": [5]}
    depthwise, pointwise, bias = tf.global_variables()
    by_hand = tf.nn.relu(tf.nn.separable_conv2d(x, depthwise, pointwise, [1, 1, 1, 1], "SAME")
                         + bias)
    got, wanted = evaluate([y, by_hand], {x: np.random.default_rng(1).normal(size=(2, 7, 6, 3))})
    np.testing.assert_allclose(got, wanted, rtol=1e-6, atol=1e-6)


def test_conv1d_variables_values_and_reuse():
    x = tf.placeholder(tf.float32, [None, 11, 3])
    y = tf.layers.conv1d(x, 4, 3, strides=2, name="temporal")
    again = tf.layers.conv1d(x, 4, 3, strides=2, name="temporal", reuse=True)
    assert y.shape.as_list() == [None, 5, 4]
    assert variables() == {"temporal/kernel": [3, 3, 4], "temporal/bias": [4]}
    kernel = tf.global_variables()[0]
    by_hand = tf.nn.conv1d(x, kernel, 2, "VALID")
    got, same, wanted = evaluate([y, again, by_hand],
                                 {x: np.random.default_rng(2).normal(size=(2, 11, 3))})
    np.testing.assert_array_equal(got, same)
    np.testing.assert_allclose(got, wanted, rtol=1e-6, atol=1e-6)


def test_default_names_count_up_and_bad_inputs_are_refused():
    x = tf.placeholder(tf.float32, [1, 4, 4, 2])
    tf.layers.conv2d_transpose(x, 1, 2)
    tf.layers.conv2d_transpose(x, 1, 2)
    tf.layers.separable_conv2d(x, 1, 2)
    assert sorted(variables()) == [
        "conv2d_transpose/bias", "conv2d_transpose/kernel", "conv2d_transpose_1/bias",
        "conv2d_transpose_1/kernel", "separable_conv2d/bias", "separable_conv2d/depthwise_kernel",
        "separable_conv2d/pointwise_kernel"]
    with pytest.raises(ValueError, match="tf.layers.conv1d needs a 3-D"):
        tf.layers.conv1d(x, 1, 2)
    with pytest.raises(ValueError, match="channels_last"):
        tf.layers.separable_conv2d(x, 1, 2, data_format="channels_first")


def test_a_small_separable_network_trains():
    # A fixed graph seed: an unlucky draw of the initial weights (seen once in
    # CI) can start near the answer, and then halving the loss takes longer.
    tf.set_random_seed(7)
    rng = np.random.default_rng(3)
    images = rng.normal(size=(16, 6, 6, 2)).astype(np.float32)
    targets = images.mean(axis=(1, 2, 3))[:, None].astype(np.float32)
    x = tf.constant(images)
    features = tf.layers.separable_conv2d(x, 4, 3, padding="same", activation=tf.nn.relu)
    up = tf.layers.conv2d_transpose(features, 2, 2, strides=2)
    pooled = tf.reduce_mean(up, axis=[1, 2])
    prediction = tf.layers.dense(pooled, 1)
    loss = tf.reduce_mean(tf.square(prediction - targets))
    train = tf.train.AdamOptimizer(0.05).minimize(loss)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first = sess.run(loss)
        for _ in range(60):
            sess.run(train)
        assert sess.run(loss) < 0.5 * first

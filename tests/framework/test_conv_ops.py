"""tf.nn.conv2d / max_pool / avg_pool and tf.layers.conv2d & co: static shapes, argument
errors, layer variables, placement beside a GPU, and a small CNN that must learn."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.device_spec import DeviceSpec
from zmtf.kernels import supports
from zmtf.placement.placer import place


def run(fetches, feed=None):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


# ---- static shapes ------------------------------------------------------------------------
# (input shape, filter shape, strides, padding, dilations, expected output shape)
CONV_SHAPES = [
    ([None, 28, 28, 1], [5, 5, 1, 32], [1, 1, 1, 1], "SAME", 1, [None, 28, 28, 32]),
    ([4, 28, 28, 1], [5, 5, 1, 32], [1, 1, 1, 1], "VALID", 1, [4, 24, 24, 32]),
    ([2, 7, 6, 3], [3, 2, 3, 4], [1, 2, 2, 1], "SAME", 1, [2, 4, 3, 4]),
    ([2, 10, 9, 2], [3, 3, 2, 2], [1, 3, 2, 1], "VALID", 1, [2, 3, 4, 2]),
    ([1, 9, 9, 2], [3, 3, 2, 5], 1, "VALID", 2, [1, 5, 5, 5]),
    ([1, None, 9, 2], [3, 3, 2, 5], [2, 2], "SAME", 1, [1, None, 5, 5]),
]


@pytest.mark.parametrize("in_shape,f_shape,strides,padding,dilations,expected", CONV_SHAPES)
def test_conv2d_static_shape_matches_the_computed_one(in_shape, f_shape, strides, padding,
                                                      dilations, expected):
    x = tf.placeholder(tf.float32, in_shape)
    w = tf.constant(np.ones(f_shape, np.float32))
    y = tf.nn.conv2d(x, w, strides, padding, dilations=dilations)
    assert y.shape.as_list() == expected
    concrete = [d if d is not None else 3 for d in in_shape]
    value = run(y, {x: np.ones(concrete, np.float32)})
    assert all(e is None or e == v for e, v in zip(expected, value.shape)), value.shape


@pytest.mark.parametrize("pool", [tf.nn.max_pool, tf.nn.avg_pool, tf.nn.max_pool2d,
                                  tf.nn.avg_pool2d])
def test_pool_static_shapes(pool):
    x = tf.placeholder(tf.float32, [None, 7, 5, 3])
    assert pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").shape.as_list() == [None, 3, 2, 3]
    assert pool(x, [1, 3, 3, 1], [1, 2, 2, 1], "SAME").shape.as_list() == [None, 4, 3, 3]


def test_conv2d_accepts_filters_keyword_and_transpose_inverts_its_shape():
    x = tf.placeholder(tf.float32, [2, 6, 6, 3])
    w = tf.ones([3, 3, 3, 4])
    y = tf.nn.conv2d(x, filters=w, strides=[1, 2, 2, 1], padding="SAME")
    back = tf.nn.conv2d_transpose(y, w, [2, 6, 6, 3], [1, 2, 2, 1], "SAME")
    assert y.shape.as_list() == [2, 3, 3, 4] and back.shape.as_list() == [2, 6, 6, 3]
    assert run(back, {x: np.ones((2, 6, 6, 3), np.float32)}).shape == (2, 6, 6, 3)


def test_a_constant_image_under_an_all_ones_filter_counts_the_covered_pixels():
    # 3x3 ones over a 4x4 ones image, SAME: corners see 4 pixels, edges 6, inside 9
    y = tf.nn.conv2d(tf.ones([1, 4, 4, 1]), tf.ones([3, 3, 1, 1]), [1, 1, 1, 1], "SAME")
    np.testing.assert_array_equal(run(y)[0, :, :, 0], [[4, 6, 6, 4], [6, 9, 9, 6],
                                                       [6, 9, 9, 6], [4, 6, 6, 4]])


# ---- argument errors ----------------------------------------------------------------------
def test_nchw_is_refused_with_the_fix():
    x = tf.placeholder(tf.float32, [1, 3, 8, 8])
    nhwc_only = "Conv2D on CPU only supports NHWC"
    with pytest.raises(tf.errors.InvalidArgumentError, match=nhwc_only) as info:
        tf.nn.conv2d(x, tf.ones([3, 3, 3, 4]), [1, 1, 1, 1], "SAME", data_format="NCHW")
    assert "data_format='NHWC'" in str(info.value) and "tf.transpose" in str(info.value)
    with pytest.raises(tf.errors.InvalidArgumentError, match="MaxPool on CPU only supports NHWC"):
        tf.nn.max_pool(x, [1, 1, 2, 2], [1, 1, 2, 2], "VALID", data_format="NCHW")


def test_bad_arguments_fail_while_building_the_graph():
    x = tf.placeholder(tf.float32, [1, 4, 4, 3])
    with pytest.raises(ValueError, match=r"input \(3\) must match the filter's input depth \(2\)"):
        tf.nn.conv2d(x, tf.ones([2, 2, 2, 1]), [1, 1, 1, 1], "SAME")
    with pytest.raises(ValueError, match="Computed output size would be negative"):
        tf.nn.conv2d(x, tf.ones([6, 6, 3, 1]), [1, 1, 1, 1], "VALID")
    with pytest.raises(ValueError, match="padding must be 'SAME' or 'VALID'"):
        tf.nn.conv2d(x, tf.ones([2, 2, 3, 1]), [1, 1, 1, 1], "FULL")
    with pytest.raises(tf.errors.UnimplementedError, match="batch and depth"):
        tf.nn.max_pool(x, [1, 2, 2, 1], [2, 1, 1, 1], "VALID")
    with pytest.raises(TypeError, match="must be float16, float32 or float64, got int32"):
        tf.nn.conv2d(tf.zeros([1, 4, 4, 3], tf.int32), tf.ones([2, 2, 3, 1], tf.int32), 1, "SAME")


# ---- layers -------------------------------------------------------------------------------
def test_layers_conv2d_makes_scoped_variables_and_reuses_them():
    x = tf.placeholder(tf.float32, [None, 8, 8, 3])
    y = tf.layers.conv2d(x, 16, (3, 5), strides=2, padding="same", name="conv")
    assert y.shape.as_list() == [None, 4, 4, 16]
    tf.layers.conv2d(x, 16, (3, 5), strides=2, padding="same", name="conv", reuse=True)
    second = tf.layers.conv2d(x, 4, 3, use_bias=False)
    assert second.shape.as_list() == [None, 6, 6, 4]
    names = {v.name: v.shape.as_list() for v in tf.trainable_variables()}
    assert names == {"conv/kernel:0": [3, 5, 3, 16], "conv/bias:0": [16],
                     "conv2d/kernel:0": [3, 3, 3, 4]}
    kernel = run(tf.trainable_variables()[0])
    limit = np.sqrt(6.0 / (3 * 5 * 3 + 3 * 5 * 16))  # Glorot uniform over receptive-field fans
    assert np.abs(kernel).max() <= limit and kernel.std() > limit / 4


def test_layers_pooling_and_flatten():
    x = tf.placeholder(tf.float32, [None, 5, 5, 2])
    pooled = tf.layers.max_pooling2d(x, 2, 2)
    averaged = tf.layers.average_pooling2d(x, [3, 3], 2, padding="same")
    flat = tf.layers.flatten(averaged)
    assert pooled.shape.as_list() == [None, 2, 2, 2] and flat.shape.as_list() == [None, 18]
    assert pooled.op.name == "max_pooling2d/MaxPool"
    image = np.arange(50, dtype=np.float32).reshape(1, 5, 5, 2)
    got_pooled, got_flat = run([pooled, flat], {x: image})
    np.testing.assert_array_equal(got_pooled[0, 0, 0], image[0, 1, 1])  # a window's max: its last
    assert got_flat.shape == (1, 18)


# ---- placement ----------------------------------------------------------------------------
def test_conv_and_pool_ops_fall_back_to_cpu_beside_a_gpu():
    import zmtf.kernels.cuda as gpu_kernels  # registers the GPU kernels (the simulator in tests)

    if not gpu_kernels.AVAILABLE:
        pytest.skip(f"GPU kernels not registered: {gpu_kernels.REASON}")
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    loss = tf.reduce_sum(tf.nn.avg_pool(tf.nn.max_pool(tf.layers.conv2d(x, 2, 3), 2, 2, "VALID"),
                                        2, 1, "SAME"))
    tf.gradients(loss, tf.trainable_variables())
    ops = tf.get_default_graph().get_operations()
    gpu, cpu = ("/job:localhost/replica:0/task:0/device:GPU:0",
                "/job:localhost/replica:0/task:0/device:CPU:0")
    task = DeviceSpec(job="localhost", replica=0, task=0)
    devices = place(ops, [gpu, cpu], supports, task=task).devices  # GPU:0 is the default device
    conv_types = {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "MaxPool", "MaxPoolGrad",
                  "AvgPool", "AvgPoolGrad"}
    placed = {op.type: devices[op.name] for op in ops if op.type in conv_types}
    assert placed == {t: cpu for t in conv_types}  # no CUDA kernel: the CPU one runs
    assert devices[loss.op.name] == gpu  # while the rest goes to the default device


# ---- learning -----------------------------------------------------------------------------
def bars(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """8x8 noisy images with one bright bar; the class: horizontal or vertical, and which half."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, count)
    images = rng.normal(0.0, 0.3, (count, 8, 8, 1)).astype(np.float32)
    for image, label in zip(images, labels):
        position = rng.integers(0, 4) + 4 * (label % 2)
        if label < 2:
            image[position, :, 0] += 1.0
        else:
            image[:, position, 0] += 1.0
    return images, labels.astype(np.int32)


def test_a_small_cnn_learns_to_tell_bars_apart():
    tf.set_random_seed(3)
    x = tf.placeholder(tf.float32, [None, 8, 8, 1])
    y = tf.placeholder(tf.int32, [None])
    hidden = tf.layers.conv2d(x, 8, 3, padding="same", activation=tf.nn.relu)
    hidden = tf.layers.max_pooling2d(hidden, 2, 2)
    logits = tf.layers.dense(tf.layers.flatten(hidden), 4)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.train.GradientDescentOptimizer(0.3).minimize(loss)
    images, labels = bars(64, seed=0)
    held_out_images, held_out_labels = bars(200, seed=1)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        losses = [sess.run([train, loss], {x: images, y: labels})[1] for _ in range(40)]
        predicted = np.argmax(sess.run(logits, {x: held_out_images}), axis=1)
    assert losses[0] > 1.0 and losses[-1] < 0.25, losses
    assert np.mean(predicted == held_out_labels) > 0.85

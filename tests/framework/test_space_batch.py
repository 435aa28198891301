"""space_to_depth / depth_to_space and space_to_batch(_nd) / batch_to_space(_nd): values
against numpy index arithmetic, static shapes, errors, and gradients (each the other's)."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run

X = np.arange(2 * 4 * 6 * 3, dtype=np.float32).reshape(2, 4, 6, 3)


def test_space_to_depth_orders_block_rows_then_columns_then_channels():
    out = tf.space_to_depth(X, 2)
    assert out.op.type == "SpaceToDepth" and out.shape.as_list() == [2, 2, 3, 12]
    got = run(out)
    for b, i, j, d in [(0, 0, 0, 0), (1, 1, 2, 7), (0, 1, 1, 11), (1, 0, 2, 5)]:
        block_row, rest = divmod(d, 2 * 3)
        block_col, channel = divmod(rest, 3)
        assert got[b, i, j, d] == X[b, 2 * i + block_row, 2 * j + block_col, channel]
    np.testing.assert_array_equal(run(tf.nn.depth_to_space(out, 2)), X)


def test_space_to_batch_nd_matches_a_padded_strided_gather():
    block, pads = [2, 3], [[1, 1], [0, 3]]
    out = tf.space_to_batch_nd(X, block, pads)
    assert out.shape.as_list() == [12, 3, 3, 3]
    got = run(out)
    padded = np.pad(X, [(0, 0), (1, 1), (0, 3), (0, 0)])
    for a in range(2):
        for c in range(3):
            for b in range(2):
                np.testing.assert_array_equal(got[(a * 3 + c) * 2 + b], padded[b, a::2, c::3])
    np.testing.assert_array_equal(run(tf.batch_to_space_nd(out, block, pads)), X)


def test_remaining_dims_and_one_spatial_dim():
    x = np.arange(24.0).reshape(2, 6, 2)
    got = run(tf.space_to_batch_nd(x, [3], [[0, 0]]))
    np.testing.assert_array_equal(got, np.concatenate([x[:, k::3] for k in range(3)]))


def test_tf1_square_block_wrappers():
    moved = tf.space_to_batch(X, [[0, 0], [1, 1]], block_size=2)
    nn_moved = tf.nn.space_to_batch(X, [[0, 0], [1, 1]], 2)
    assert moved.op.type == "SpaceToBatchND" and moved.shape.as_list() == [8, 2, 4, 3]
    back = tf.batch_to_space(moved, [[0, 0], [1, 1]], 2)
    got, nn_got, got_back = run([moved, nn_moved, back])
    np.testing.assert_array_equal(got, nn_got)
    np.testing.assert_array_equal(got_back, X)


@pytest.mark.parametrize("build", [
    lambda x: tf.space_to_depth(x, 2),
    lambda x: tf.depth_to_space(tf.tile(x, [1, 1, 1, 4]), 2),
    lambda x: tf.space_to_batch_nd(x, [2, 3], [[1, 1], [0, 3]]),
    lambda x: tf.batch_to_space_nd(x, [1, 2], [[1, 1], [0, 3]]),
])
def test_gradients_route_each_element_back(build):
    x = tf.placeholder(tf.float32, X.shape)
    y = build(x)
    weights = np.random.default_rng(0).standard_normal(y.shape.as_list()).astype(np.float32)
    grad = tf.gradients(tf.reduce_sum(y * weights), x)[0]
    # d/dx sum(w * f(x)) for a linear f that only moves data: f^T(w), found with a one-hot x
    got = run(grad, {x: X})
    flat = np.zeros(X.size, np.float32)
    for k in np.random.default_rng(1).choice(X.size, 12, replace=False):
        flat[:] = 0
        flat[k] = 1
        assert got.reshape(-1)[k] == pytest.approx(float((run(y, {x: flat.reshape(X.shape)}) *
                                                          weights).sum()))


def test_build_and_run_time_errors():
    with pytest.raises(ValueError, match="evenly divisible by 3 but is 4"):
        tf.space_to_depth(X, 3)
    with pytest.raises(ValueError, match="passed 1 less than minimum 2"):
        tf.space_to_depth(X, 1)
    with pytest.raises(ValueError, match="evenly divisible by 3 but is 4"):
        tf.space_to_batch_nd(X, [3, 2], [[0, 0], [0, 0]])
    x = tf.placeholder(tf.float32, [None, None, None, 3])
    with pytest.raises(InvalidArgumentError, match="should be divisible by block_size: 5"):
        run(tf.space_to_depth(x, 5), {x: X})
    with pytest.raises(InvalidArgumentError, match="not divisible by product of block sizes"):
        run(tf.batch_to_space_nd(x, [3, 1], [[0, 0], [0, 0]]), {x: X})

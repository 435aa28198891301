"""The SparseTensor ops against numpy on dense equivalents: to_dense, sparse_to_dense, matmul
(all adjoint cases), reduce_sum, add, reorder, reshape, retain, fill_empty_rows, concat, slice,
mask; TF's index-validation messages; gradients against finite differences."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run

INDICES = np.array([[0, 1], [2, 0], [2, 3]], np.int64)
VALUES = np.array([1.0, 3.0, 2.0])
SHAPE = [3, 4]


def dense_of(indices, values, shape):
    out = np.zeros(shape, np.asarray(values).dtype)
    np.add.at(out, tuple(np.asarray(indices).T), values)
    return out


def sparse():
    return tf.SparseTensor(INDICES, VALUES, SHAPE)


def test_to_dense_with_a_default_and_the_static_shape():
    dense = tf.sparse.to_dense(sparse(), default_value=-1.0)
    assert dense.shape.as_list() == SHAPE and dense.dtype == tf.float64
    want = np.full(SHAPE, -1.0)
    want[tuple(INDICES.T)] = VALUES
    np.testing.assert_array_equal(run(dense), want)


@pytest.mark.parametrize("indices,message", [
    ([[2, 0], [0, 1]], r"indices\[1\] = \[0,1\] is out of order. Many sparse ops require sorted"),
    ([[0, 1], [5, 0]], r"indices\[1\] = \[5,0\] is out of bounds: need 0 <= index < \[3,4\]"),
    ([[0, 1], [0, 1]], r"indices\[1\] = \[0,1\] is repeated"),
])
def test_to_dense_validates_indices_with_tfs_messages(indices, message):
    with pytest.raises(InvalidArgumentError, match=message):
        run(tf.sparse_tensor_to_dense(tf.SparseTensor(indices, [1.0, 2.0], SHAPE)))


def test_unvalidated_indices_may_come_in_any_order():
    out = tf.sparse_tensor_to_dense(tf.SparseTensor([[2, 0], [0, 1]], [1.0, 2.0], SHAPE),
                                    validate_indices=False)
    np.testing.assert_array_equal(run(out), dense_of([[2, 0], [0, 1]], [1.0, 2.0], SHAPE))


def test_sparse_to_dense_forms():
    vector = tf.sparse_to_dense([1, 3], [5], [1.0, 2.0], default_value=-1.0)
    scalar_value = tf.sparse_to_dense([[1], [3]], [5], 7)
    assert vector.shape.as_list() == [5] and scalar_value.dtype == tf.int32
    np.testing.assert_array_equal(run(vector), [-1.0, 1.0, -1.0, 2.0, -1.0])
    np.testing.assert_array_equal(run(scalar_value), [0, 7, 0, 7, 0])


@pytest.mark.parametrize("adjoint_a,adjoint_b", [(False, False), (True, False), (False, True),
                                                 (True, True)])
def test_matmul_matches_dense_matmul(adjoint_a, adjoint_b):
    rng = np.random.default_rng(0)
    a = dense_of(INDICES, VALUES, SHAPE)
    a_op = a.T if adjoint_a else a
    b = rng.normal(size=(a_op.shape[1], 2))
    b_in = b.T.copy() if adjoint_b else b
    out = tf.sparse_tensor_dense_matmul(sparse(), b_in, adjoint_a=adjoint_a, adjoint_b=adjoint_b)
    assert out.shape.as_list() == [a_op.shape[0], 2]
    np.testing.assert_allclose(run(out), a_op @ b)


def test_matmul_checks_shapes_and_bounds():
    with pytest.raises(ValueError, match="Dimensions must be equal, but are 4 and 3"):
        tf.sparse_tensor_dense_matmul(sparse(), np.ones((3, 2)))
    bad = tf.SparseTensor([[0, 1], [2, 7]], [1.0, 2.0], SHAPE)
    with pytest.raises(InvalidArgumentError, match=r"k \(7\) from index\[1,1\] out of bounds \(>=4\)"):
        run(tf.sparse_tensor_dense_matmul(bad, np.ones((4, 2), np.float32)))
    with pytest.raises(TypeError, match="sparse values are float32 but b is float64"):
        tf.sparse_tensor_dense_matmul(bad, np.ones((4, 2)))


@pytest.mark.parametrize("axis,keep_dims", [(None, False), (0, False), (1, True), (-1, False),
                                            ([0, 1], True)])
def test_reduce_sum_matches_numpy(axis, keep_dims):
    out = tf.sparse_reduce_sum(sparse(), axis=axis, keep_dims=keep_dims)
    want = np.sum(dense_of(INDICES, VALUES, SHAPE), axis=None if axis is None else tuple(np.atleast_1d(axis)),
                  keepdims=keep_dims)
    assert out.shape.as_list() == list(want.shape)
    np.testing.assert_allclose(run(out), want)


def test_add_sparse_and_sparse_drops_small_sums():
    other = tf.SparseTensor([[0, 1], [1, 1], [2, 3]], np.array([5.0, 1.0, -2.0]), SHAPE)
    total = run(tf.sparse_add(sparse(), other, threshold=0.5))
    np.testing.assert_array_equal(total.indices, [[0, 1], [1, 1], [2, 0]])   # 2 - 2 is dropped
    np.testing.assert_array_equal(total.values, [6.0, 1.0, 3.0])
    with pytest.raises(ValueError, match="incompatible"):
        tf.sparse_add(sparse(), tf.SparseTensor([[0, 0]], np.ones(1), [3, 5]))


def test_add_sparse_and_dense_is_dense():
    dense = np.arange(12.0).reshape(3, 4)
    out = tf.sparse_add(sparse(), dense)
    np.testing.assert_allclose(run(out), dense + dense_of(INDICES, VALUES, SHAPE))
    with pytest.raises(InvalidArgumentError, match="Dimension 1 does not equal.*sparse side 4 vs dense side 5"):
        run(tf.sparse_add(sparse(), np.ones((3, 5))))


def test_reorder_reshape_retain():
    shuffled = tf.SparseTensor(INDICES[::-1].copy(), VALUES[::-1].copy(), SHAPE)
    ordered = run(tf.sparse_reorder(shuffled))
    np.testing.assert_array_equal(ordered.indices, INDICES)
    np.testing.assert_array_equal(ordered.values, VALUES)
    reshaped = tf.sparse_reshape(sparse(), [-1, 2])
    assert reshaped.shape.as_list() == [6, 2]
    got = run(reshaped)
    np.testing.assert_array_equal(run(tf.sparse_tensor_to_dense(reshaped)),
                                  dense_of(INDICES, VALUES, SHAPE).reshape(6, 2))
    assert got.dense_shape.tolist() == [6, 2]
    with pytest.raises(ValueError, match="Cannot reshape a tensor with 12 elements to shape \\[5, 2\\]"):
        tf.sparse_reshape(sparse(), [5, 2])
    kept = run(tf.sparse_retain(sparse(), [True, False, True]))
    np.testing.assert_array_equal(kept.indices, INDICES[[0, 2]])


def test_fill_empty_rows():
    sp = tf.SparseTensor([[3, 1], [0, 3], [0, 0]], [1.0, 2.0, 3.0], [5, 4])
    filled, empty = tf.sparse_fill_empty_rows(sp, -1.0)
    got, got_empty = run([filled, empty])
    np.testing.assert_array_equal(got.indices, [[0, 3], [0, 0], [1, 0], [2, 0], [3, 1], [4, 0]])
    np.testing.assert_array_equal(got.values, [2.0, 3.0, -1.0, -1.0, 1.0, -1.0])
    np.testing.assert_array_equal(got_empty, [False, True, True, False, True])
    with pytest.raises(InvalidArgumentError, match=r"indices\(0, 0\) is invalid: 5 >= 3"):
        run(tf.sparse_fill_empty_rows(tf.SparseTensor([[5, 1]], [1.0], [3, 6]), 0.0)[0])


@pytest.mark.parametrize("axis", [0, 1])
def test_concat_matches_numpy(axis):
    other_shape = [2, 4] if axis == 0 else [3, 2]
    other = tf.SparseTensor([[1, 0]], np.array([9.0]), other_shape)
    joined = tf.sparse_concat(axis, [sparse(), other])
    want = np.concatenate([dense_of(INDICES, VALUES, SHAPE), dense_of([[1, 0]], [9.0], other_shape)], axis)
    assert joined.shape.as_list() == list(want.shape)
    np.testing.assert_array_equal(run(tf.sparse_tensor_to_dense(joined)), want)
    with pytest.raises(InvalidArgumentError, match="Input shapes must match: expected 3 for dimension 0"):
        run(tf.sparse_concat(1, [sparse(), tf.SparseTensor([[0, 0]], np.ones(1), [2, 6])]).values)


def test_slice_clips_the_box():
    piece = run(tf.sparse_slice(sparse(), [1, 2], [5, 5]))
    np.testing.assert_array_equal(piece.indices, [[1, 1]])
    np.testing.assert_array_equal(piece.dense_shape, [2, 2])


def test_mask_drops_the_listed_slices():
    slices = tf.IndexedSlices(tf.constant([[1.0], [2.0], [3.0]]), tf.constant([4, 7, 9]))
    masked = run(tf.sparse_mask(slices, [7]))
    np.testing.assert_array_equal(masked.indices, [4, 9])
    np.testing.assert_array_equal(masked.values, [[1.0], [3.0]])


@pytest.mark.parametrize("build", [
    lambda sp, b: tf.sparse_tensor_dense_matmul(sp, b),
    lambda sp, b: tf.sparse_tensor_dense_matmul(sp, tf.transpose(b), adjoint_b=True),
    lambda sp, b: tf.sparse_tensor_dense_matmul(sp, b[:3], adjoint_a=True),
    lambda sp, b: tf.sparse_reduce_sum(sp, 1, keep_dims=True) * b[:3, :1],
    lambda sp, b: tf.sparse_add(sp, b[:3] * 2.0),
    lambda sp, b: tf.sparse_tensor_to_dense(sp, default_value=b[0, 0]),
    lambda sp, b: tf.sparse_reorder(tf.SparseTensor(INDICES[::-1].copy(), sp.values[::-1], SHAPE)).values * [1.0, 2.0, 3.0],
    lambda sp, b: tf.sparse_fill_empty_rows(sp, b[0, 0])[0].values * [1.0, 2.0, 3.0, 4.0],
    lambda sp, b: tf.sparse_slice(sp, [1, 0], [2, 4]).values * b[0, :2],
    lambda sp, b: tf.sparse_add(sp, tf.SparseTensor([[0, 1], [1, 1]], b[0, :2], SHAPE)).values * [1.0, 2.0, 3.0, 4.0],
], ids=["matmul", "matmul_adj_b", "matmul_adj_a", "reduce_sum", "add_dense", "to_dense", "reorder", "fill_empty",
        "slice", "add_sparse"])
def test_gradients_match_finite_differences(build):
    values = tf.placeholder(tf.float64, [3])
    b = tf.placeholder(tf.float64, [4, 4])
    out = build(tf.SparseTensor(INDICES, values, SHAPE), b)
    weights = np.random.default_rng(1).normal(size=out.shape.as_list())
    loss = tf.reduce_sum(tf.square(out * weights))
    grads = tf.gradients(loss, [values, b])
    b_value = np.random.default_rng(2).normal(size=(4, 4))
    feed = {values: VALUES, b: b_value}
    got = run([g if g is not None else tf.zeros_like(x) for g, x in zip(grads, [values, b])], feed)
    with tf.Session() as sess:
        def loss_at(v, bv):
            return sess.run(loss, {values: v, b: bv})
        for k, (x, x_value) in enumerate([(values, VALUES), (b, b_value)]):
            want = np.zeros_like(x_value)
            for i in range(x_value.size):
                up, down = x_value.copy(), x_value.copy()
                up.flat[i] += 1e-6
                down.flat[i] -= 1e-6
                args = [(up, b_value), (VALUES, up)][k], [(down, b_value), (VALUES, down)][k]
                want.flat[i] = (loss_at(*args[0]) - loss_at(*args[1])) / 2e-6
            np.testing.assert_allclose(got[k], want, rtol=1e-5, atol=1e-6)

"""The one-pass row kernels of embeddings (sparse_rows.py): Gather, UnsortedSegmentSum,
ScatterAdd/Sub and the sparse Adagrad and Momentum updates give numpy's values, duplicates
and negative ids included, and they are what runs for the numba dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.kernels.cpu import sparse_apply, sparse_rows
from zmtf.kernels.cpu.state import VariableRef
from zmtf.runtime.resources import ResourceContainer

DTYPES = ["float32", "float64", "int32", "int64"]
rng = np.random.default_rng(7)


def _values(shape, dtype):
    return (rng.standard_normal(shape) * 10).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("id_dtype", ["int32", "int64"])
@pytest.mark.parametrize("params_shape, ids_shape", [((50, 4), (7,)), ((50,), (3, 5)), ((9, 2, 3), (4,))])
def test_gather_matches_numpy_take(dtype, id_dtype, params_shape, ids_shape):
    with tf.Graph().as_default():
        params = _values(params_shape, dtype)
        ids = rng.integers(0, params_shape[0], ids_shape).astype(id_dtype)
        p = tf.placeholder(dtype, params_shape)
        i = tf.placeholder(id_dtype, ids_shape)
        with tf.Session() as sess:
            got = sess.run(tf.gather(p, i), {p: params, i: ids})
    np.testing.assert_array_equal(got, np.take(params, ids, axis=0))
    assert got.dtype == params.dtype
    assert sparse_rows.gather_rows.signatures   # the numba loop ran


def test_gather_names_the_first_id_out_of_range():
    with tf.Graph().as_default():
        p = tf.placeholder(tf.float32, [5, 2])
        i = tf.placeholder(tf.int64, [3])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices contains 7, which is not in \[0, 5\)"):
                sess.run(tf.gather(p, i), {p: np.zeros((5, 2), np.float32), i: [1, 7, -1]})


@pytest.mark.parametrize("dtype", DTYPES)
def test_unsorted_segment_sum_adds_repeats_and_drops_negative_ids(dtype):
    data = _values((12, 3), dtype)
    ids = np.array([3, 0, 3, -1, 5, 3, 0, 1, -2, 5, 5, 2], np.int32)
    with tf.Graph().as_default():
        with tf.Session() as sess:
            got = sess.run(tf.math.unsorted_segment_sum(data, ids, 7))
    want = np.zeros((7, 3), dtype)
    keep = ids >= 0
    np.add.at(want, ids[keep], data[keep])
    np.testing.assert_array_equal(got, want)
    assert sparse_rows.add_rows.signatures


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, ufunc", [(tf.scatter_add, np.add), (tf.scatter_sub, np.subtract)])
def test_scatter_add_and_sub_fold_duplicates_as_numpy(dtype, op, ufunc):
    start = _values((6, 2), dtype)
    updates = _values((5, 2), dtype)
    ids = np.array([4, 1, 4, 4, 0], np.int64)
    with tf.Graph().as_default():
        v = tf.Variable(start)
        with tf.Session() as sess:
            sess.run(v.initializer)
            got = sess.run(op(v, ids, updates))
    want = start.copy()
    ufunc.at(want, ids, updates)
    np.testing.assert_array_equal(got, want)


def _apply(kernel, var, grad, ids, *scalars, **attrs):
    store = ResourceContainer()
    store.assign("v", var.copy())
    store.assign("a", np.full_like(var, 0.1))
    inputs = [VariableRef(store, "v", list(var.shape)), VariableRef(store, "a", list(var.shape)),
              np.asarray(0.05, var.dtype), grad, np.asarray(ids)]
    inputs += [np.asarray(s, var.dtype) for s in scalars]
    out = kernel(None, inputs, {"_node_name": "apply", **attrs})[0]
    return out, store.read("a")


def _summed(var, grad, ids):
    rows, inverse = np.unique(ids, return_inverse=True)
    g = np.zeros((rows.size,) + var.shape[1:], var.dtype)
    np.add.at(g, inverse, grad)
    return rows, g


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(20, 3), (20,), (20, 2, 2)])
def test_sparse_adagrad_matches_tfs_formula_on_summed_rows(dtype, shape):
    var = _values(shape, dtype)
    ids = np.array([5, 2, 5, 19, 0, 5], np.int32)
    grad = _values((ids.size,) + shape[1:], dtype)
    got, accum = _apply(sparse_apply.sparse_apply_adagrad, var, grad, ids)
    rows, g = _summed(var, grad, ids)
    want_accum = np.full_like(var, 0.1)
    want_accum[rows] += g * g
    want = var.copy()
    want[rows] -= var.dtype.type(0.05) * g / np.sqrt(want_accum[rows])
    np.testing.assert_allclose(accum, want_accum, rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    untouched = np.setdiff1d(np.arange(shape[0]), rows)
    np.testing.assert_array_equal(got[untouched], var[untouched])
    assert sparse_rows.adagrad_rows.signatures


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nesterov", [False, True])
def test_sparse_momentum_matches_tfs_formula_on_summed_rows(dtype, nesterov):
    var = _values((10, 4), dtype)
    ids = np.array([7, 7, 1, 9, 7], np.int64)
    grad = _values((ids.size, 4), dtype)
    got, accum = _apply(sparse_apply.sparse_apply_momentum, var, grad, ids, 0.9, use_nesterov=nesterov)
    rows, g = _summed(var, grad, ids)
    lr, m = var.dtype.type(0.05), var.dtype.type(0.9)
    want_accum = np.full_like(var, 0.1)
    want_accum[rows] = want_accum[rows] * m + g
    want = var.copy()
    a = want_accum[rows]
    want[rows] -= g * lr + a * (m * lr) if nesterov else a * lr
    np.testing.assert_allclose(accum, want_accum, rtol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert sparse_rows.momentum_rows.signatures


def test_embedding_training_with_sparse_adagrad_moves_only_looked_up_rows():
    with tf.Graph().as_default():
        table = tf.Variable(np.ones((100, 4), np.float32))
        ids = tf.placeholder(tf.int64, [6])
        loss = tf.reduce_sum(tf.square(tf.nn.embedding_lookup(table, ids)))
        train = tf.train.AdagradOptimizer(0.1).minimize(loss)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(train, {ids: [3, 3, 50, 99, 3, 0]})
            got = sess.run(table)
    assert np.flatnonzero(np.any(got != 1.0, axis=1)).tolist() == [0, 3, 50, 99]
    g3 = 3 * 2.0   # three lookups of row 3, each d(x^2)/dx = 2
    np.testing.assert_allclose(got[3], 1.0 - 0.1 * g3 / np.sqrt(0.1 + g3 * g3), rtol=1e-6)

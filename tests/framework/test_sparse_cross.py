"""SparseCross (tf.sparse.cross / cross_hashed) and Bucketize. The expected ids were computed
by TF 2.21 on the same inputs: hashed crosses only match if FingerprintCat64 and the
sparse-first input order are TF's bit for bit."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run

SPARSE = ([[0, 0], [0, 1], [2, 0]], ["a", "b", "c"], [3, 2])
DENSE = [[7, 8], [9, 10], [11, 12]]
INDICES = [[0, 0], [0, 1], [0, 2], [0, 3], [2, 0], [2, 1]]


def sparse():
    return tf.SparseTensor(SPARSE[0], tf.constant(SPARSE[1]), SPARSE[2])


def parts(value):
    return value.indices.tolist(), value.values.tolist(), value.dense_shape.tolist()


def test_hashed_cross_without_buckets_matches_tf():
    # dense input listed first: TF still crosses the sparse inputs first
    got = run(tf.sparse.cross_hashed([tf.constant(DENSE, tf.int64), sparse()]))
    # from TF 2.21: tf.sparse.cross_hashed([dense, sparse])
    assert parts(got) == (INDICES, [3509787333349122856, 7821721036908942428, 443223928722139976,
                                    9003972888028304919, 840643620864120608, 2850818867669740544],
                          [3, 4])


def test_hashed_cross_with_buckets_and_key_matches_tf():
    got = run(tf.sparse.cross_hashed([sparse(), tf.constant(DENSE)], num_buckets=100, hash_key=42))
    assert parts(got) == (INDICES, [12, 17, 88, 31, 85, 80], [3, 4])   # from TF 2.21


def test_string_cross_joins_features_with_X():
    got = run(tf.sparse.cross([sparse(), tf.constant(DENSE, tf.int64)]))
    assert parts(got)[1] == [b"a_X_7", b"a_X_8", b"b_X_7", b"b_X_8", b"c_X_11", b"c_X_12"]
    assert got.values.dtype == object


def test_empty_row_in_any_input_gives_no_crosses():
    other = tf.SparseTensor([[1, 0], [2, 0]], tf.constant([5, 6], tf.int64), [3, 1])
    got = run(tf.sparse.cross_hashed([sparse(), other], num_buckets=10))
    assert got.indices.tolist() == [[2, 0]] and got.dense_shape.tolist() == [3, 1]


def test_batch_size_mismatch_is_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="Expected batch size 3 got 2 at dense tensor 0"):
        run(tf.sparse.cross_hashed([sparse(), tf.constant([[1], [2]], tf.int64)]).values)


def test_float_inputs_are_refused_at_build_time():
    with pytest.raises(TypeError, match="string or integer"):
        tf.sparse.cross_hashed([sparse(), tf.constant([[1.0], [2.0], [3.0]])])


def test_bucketize_puts_boundary_values_in_the_upper_bucket():
    from zmtf.ops.sparse_cross_ops import bucketize

    x = np.array([[-5.0, 10000.0], [150.0, 10.0], [5.0, 100.0]], np.float32)
    got = run(bucketize(tf.constant(x), [0.0, 10.0, 100.0]))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.searchsorted([0.0, 10.0, 100.0], x, side="right"))
    np.testing.assert_array_equal(got, [[0, 3], [3, 2], [1, 3]])   # TF's documented example

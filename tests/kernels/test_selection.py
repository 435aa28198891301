"""tf.where, tf.slice, tensor[...] and tf.gather: values against numpy, errors, and a remote run."""

import numpy as np
import pytest

import zmtf as tf

X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


@pytest.mark.parametrize("key", [
    (1,), (slice(None), 2), (Ellipsis, 0), (slice(None, None, -1), slice(1, None), slice(None, None, 2)),
    (None, 1, Ellipsis), (-1, -2, -3), (slice(5, 10),), (0, slice(2, 0, -1), None, 3),
])
def test_getitem_matches_numpy_with_static_shapes(key):
    x = tf.constant(X)
    y = x[key]
    with tf.Session() as sess:
        value = sess.run(y)
    np.testing.assert_array_equal(value, X[key])
    assert y.shape.as_list() == list(X[key].shape)
    if np.ndim(value):
        assert value.flags.c_contiguous and value.flags.writeable


def test_getitem_on_an_unknown_batch_and_its_errors():
    x = tf.placeholder(tf.float32, [None, 4])
    y = x[:, 1:3]
    assert y.shape.as_list() == [None, 2]
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {x: X[0]}), X[0][:, 1:3])
        with pytest.raises(tf.errors.InvalidArgumentError, match="out of bounds"):
            sess.run(x[5], {x: X[0]})
    with pytest.raises(ValueError, match="index 4 is out of bounds for dimension 1"):
        x[:, 4]
    with pytest.raises(TypeError, match="only ints, slices of ints"):
        x["a"]
    with tf.Session() as sess:   # a tensor index works as TF's
        np.testing.assert_array_equal(sess.run(x[tf.constant(1)], {x: X[0]}), X[0][1])
    with pytest.raises(ValueError, match="too many indices"):
        x[0, 0, 0]


def test_slice_and_gather():
    x = tf.constant(X)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.slice(x, [1, 0, 1], [1, 2, -1])), X[1:2, 0:2, 1:])
        np.testing.assert_array_equal(sess.run(tf.gather(x, [1, 1, 0])), X[[1, 1, 0]])
        np.testing.assert_array_equal(sess.run(tf.gather(x, [[3, 0]], axis=-1)), np.take(X, [[3, 0]], -1))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"indices contains 7, which is not in \[0, 2\)"):
            sess.run(tf.gather(x, [0, 7]))
    with pytest.raises(ValueError, match="out of bounds"):
        tf.slice(x, [0, 0, 3], [1, 1, 2])


def test_where_selects_and_lists_true_coordinates():
    cond = tf.constant([[True, False], [False, True]])
    a, b = tf.constant([[1.0, 2.0], [3.0, 4.0]]), tf.constant([[9.0, 8.0], [7.0, 6.0]])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.where(cond, a, b)), [[1.0, 8.0], [7.0, 4.0]])
        np.testing.assert_array_equal(sess.run(tf.where(tf.constant([False, True]), a, b)),
                                      [[9.0, 8.0], [3.0, 4.0]])
        np.testing.assert_array_equal(sess.run(tf.where(tf.constant(False), a, b)), [[9.0, 8.0],
                                                                                     [7.0, 6.0]])
        coords = sess.run(tf.where(cond))
    assert coords.dtype == np.int64 and coords.tolist() == [[0, 0], [1, 1]]
    with pytest.raises(TypeError, match="condition must be bool"):
        tf.where(tf.constant([1.0]), a, b)
    with pytest.raises(ValueError, match="both x and y, or neither"):
        tf.where(cond, a)


def test_maximum_gradient_is_zero_not_nan_on_the_side_not_taken():
    x, y = tf.constant([1.0, 5.0]), tf.constant([3.0, 2.0])
    g = tf.gradients(tf.maximum(x, y), [x, y], grad_ys=tf.constant([np.inf, np.inf]))
    with tf.Session() as sess:
        gx, gy = sess.run(g)
    assert gx.tolist() == [0.0, np.inf] and gy.tolist() == [np.inf, 0.0]


def test_selection_runs_on_a_remote_session():
    server = tf.train.Server.create_local_server()
    try:
        x = tf.Variable(X)
        pieces = [x[1, :, ::3], tf.gather(x, [1]), tf.slice(x, [0, 1, 0], [1, 1, 2])]
        with tf.Session(server.target) as sess:
            sess.run(x.initializer)
            got = sess.run(pieces)
        np.testing.assert_array_equal(got[0], X[1, :, ::3])
        np.testing.assert_array_equal(got[1], X[[1]])
        np.testing.assert_array_equal(got[2], X[0:1, 1:2, 0:2])
    finally:
        server.stop()


def test_size_and_rank():
    x = tf.placeholder(tf.float32, [None, 3])
    with tf.Session() as sess:
        size, rank, size64 = sess.run([tf.size(x), tf.rank(x), tf.size(x, out_type=tf.int64)],
                                      {x: np.zeros((4, 3))})
    assert (size, rank, size64) == (12, 2, 12) and size64.dtype == np.int64


def test_split_unstack_tile_pad_match_numpy():
    x = tf.constant(X[0])                          # 3 x 4
    with tf.Session() as sess:
        for got, want in zip(sess.run(tf.unstack(x, axis=1)), np.moveaxis(X[0], 1, 0)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(sess.run(tf.split(x, 2, axis=1)[1]), X[0][:, 2:])
        np.testing.assert_array_equal(sess.run(tf.split(x, [1, -1])[1]), X[0][1:])
        np.testing.assert_array_equal(sess.run(tf.tile(x, [2, 3])), np.tile(X[0], [2, 3]))
        np.testing.assert_array_equal(sess.run(tf.pad(x, [[1, 2], [0, 1]], constant_values=-1)),
                                      np.pad(X[0], [[1, 2], [0, 1]], constant_values=-1))
        np.testing.assert_array_equal(sess.run(tf.pad(x, [[2, 2], [1, 1]], mode="SYMMETRIC")),
                                      np.pad(X[0], [[2, 2], [1, 1]], mode="symmetric"))
        with pytest.raises(tf.errors.InvalidArgumentError, match="REFLECT mode"):
            sess.run(tf.pad(x, [[3, 0], [0, 0]], mode="REFLECT"))
    with pytest.raises(ValueError, match="evenly divisible by 3"):
        tf.split(x, 3, axis=1)
    with pytest.raises(ValueError, match="do not add up"):
        tf.split(x, [1, 1], axis=1)


def test_boolean_mask_is_numpys_mask_indexing():
    X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    M1 = np.array([True, False])
    M2 = np.array([[True, False, True], [False, False, True]])
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(tf.boolean_mask(X, M1)), X[M1])
        np.testing.assert_array_equal(sess.run(tf.boolean_mask(X, M2)), X[M2])
        np.testing.assert_array_equal(sess.run(tf.boolean_mask(X, np.zeros(2, bool))), X[:0])
    with pytest.raises(TypeError, match="mask must be bool"):
        tf.boolean_mask(X, [1, 0])
    with pytest.raises(ValueError, match="axis=0 only"):
        tf.boolean_mask(X, M1, axis=1)


def test_a_tf1_name_zmtf_lacks_says_so_and_what_to_use():
    with pytest.raises(AttributeError, match="docs/supported.md lists what is built"):
        tf.no_such_thing
    assert not hasattr(tf, "no_such_thing") and hasattr(tf, "boolean_mask")

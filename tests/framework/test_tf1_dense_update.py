"""tf.assign / assign_add / assign_sub as TF 1.15's dense_update_ops_test.py checks them:
every dtype, validate_shape=False reshaping the variable, uninitialized updates, and
concurrent locked updates."""

import threading

import numpy as np
import pytest

import zmtf as tf


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32, np.int64])
@pytest.mark.parametrize("update, combine", [(tf.assign, lambda x, y: y),
                                             (tf.assign_add, lambda x, y: x + y),
                                             (tf.assign_sub, lambda x, y: x - y)])
def test_updates_of_every_dtype_return_and_store_the_new_value(dtype, update, combine):
    x = np.zeros([4, 5]).astype(dtype)
    y = np.arange(20).reshape([4, 5]).astype(dtype)
    p = tf.Variable(x)
    op = update(p, y)
    with tf.Session() as sess:
        sess.run(p.initializer)
        new_value = sess.run(op)
        np.testing.assert_array_equal(sess.run(p), combine(x, y))
        np.testing.assert_array_equal(new_value, combine(x, y))


def test_assign_without_shape_validation_gives_the_variable_the_new_shape():
    data = tf.fill([1024, 1024], 0)
    p = tf.Variable([1])
    grow = tf.assign(p, data, validate_shape=False)
    assert grow.get_shape().as_list() == [1024, 1024]
    shrink = tf.assign(p, tf.fill([10, 10], 1), validate_shape=False)
    with tf.Session() as sess:
        sess.run(p.initializer)
        sess.run(grow.op)
        assert sess.run(p).shape == (1024, 1024)
        sess.run(shrink.op)
        np.testing.assert_array_equal(sess.run(p), np.ones([10, 10]))
    with pytest.raises(ValueError, match="shapes"):
        tf.assign(p, data)


@pytest.mark.parametrize("update", [tf.assign_add, tf.assign_sub])
def test_updating_an_uninitialized_variable_fails(update):
    p = tf.Variable(tf.fill([1024, 1024], 1), tf.int32)   # TF's test passes a dtype as trainable
    op = update(p, tf.fill([1024, 1024], 0))
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="use uninitialized"):
            sess.run(op.op)


def run_in_threads(sess, ops):
    errors = []

    def run(op):
        try:
            sess.run(op)
        except Exception as error:   # noqa: BLE001 - reported by the assertion below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(op,)) for op in ops]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and not any(t.is_alive() for t in threads)


def test_parallel_locked_adds_all_land():
    p = tf.Variable(tf.fill([256, 256], 0.0))
    adds = [tf.assign_add(p, tf.fill([256, 256], 1.0), use_locking=True) for _ in range(20)]
    with tf.Session() as sess:
        sess.run(p.initializer)
        run_in_threads(sess, adds)
        np.testing.assert_array_equal(sess.run(p), np.full([256, 256], 20.0, np.float32))


def test_parallel_locked_assigns_leave_one_whole_value():
    p = tf.Variable(tf.fill([256, 256], 0.0))
    ones = tf.fill([256, 256], 1.0)
    assigns = [tf.assign(p, tf.multiply(ones, float(i)), use_locking=True) for i in range(1, 21)]
    with tf.Session() as sess:
        sess.run(p.initializer)
        run_in_threads(sess, assigns)
        vals = sess.run(p)
    assert 0 < vals[0, 0] <= 20
    np.testing.assert_array_equal(vals, np.full([256, 256], vals[0, 0]))

"""Saver.restore hands its freshly read tensors to the Assigns (framework/handed_over.py): an
initialized variable gets them copied into its own buffer, an uninitialized one keeps the
array read from the file; no second array of the checkpoint's size either way. Nothing the
user holds may alias a variable afterwards, remote (ps) variables get the right bytes, damage
is still DataLossError naming the tensor."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.handed_over import hand_over, take, withdraw
from zmtf.testing import free_tcp_ports as free_ports
from zmtf.training.saver import Saver
from zmtf.training.tensor_bundle import BundleReader

SIZE = 2_000_000   # float32: 8 MB, several of the reader's 1 MiB pieces


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def values(seed):
    return np.random.default_rng(seed).standard_normal(SIZE).astype(np.float32)


def test_a_handed_over_array_is_taken_once_and_withdrawn_arrays_are_not():
    a, b, c = np.zeros(3), np.zeros(3), np.zeros(3)
    assert not take(a)                      # never handed over
    hand_over([a, b])
    assert take(a) and not take(a)          # one taker only
    assert not take(c)
    withdraw([a, b])
    assert not take(b)                      # withdrawn before anyone took it


def restore_peak(saver, sess, path):
    """The most memory (bytes, numpy's included) that ``saver.restore`` held at once."""
    tracemalloc.start()
    try:
        saver.restore(sess, path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def check_no_aliasing(sess, v, bump, saved):
    """Fetches of the variable and of views of it stay the user's after in-place updates."""
    restored, window, grid = sess.run([v, v[10:20], tf.reshape(v, [1000, -1])])
    np.testing.assert_array_equal(restored, saved)
    sess.run(bump)                              # updates the variable in place
    np.testing.assert_array_equal(sess.run(v), saved + 1)
    np.testing.assert_array_equal(restored, saved)
    np.testing.assert_array_equal(window, saved[10:20])
    np.testing.assert_array_equal(grid, saved.reshape(1000, -1))


def test_restore_into_a_fresh_session_keeps_the_read_array_unaliased(tmp_path):
    saved = values(0)
    v = tf.Variable(saved, name="v")
    bump = v.assign_add(tf.ones([SIZE]))
    saver = Saver(write_version=tf.train.SaverDef.V2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
    with tf.Session() as sess:                  # uninitialized: the read array is kept
        assert restore_peak(saver, sess, path) < 1.5 * saved.nbytes
        check_no_aliasing(sess, v, bump, saved)
        saver.restore(sess, path)               # again: now copied into the variable's buffer
        check_no_aliasing(sess, v, bump, saved)


def test_restore_into_a_live_variable_copies_into_its_buffer_unaliased(tmp_path):
    saved, other = values(1), values(2)
    v = tf.Variable(saved, name="v")
    ph = tf.placeholder(tf.float32, [SIZE])
    assign_fed, bump = v.assign(ph), v.assign_add(tf.ones([SIZE]))
    saver = Saver(write_version=tf.train.SaverDef.V2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
        user = other.copy()
        sess.run(assign_fed, {ph: user})            # the user's feed: copied, as always
        before = sess.run(v)                        # an earlier fetch

        # the read array, copied into the variable's buffer: no second array of its size
        assert restore_peak(saver, sess, path) < 1.5 * saved.nbytes
        check_no_aliasing(sess, v, bump, saved)
        np.testing.assert_array_equal(before, other)
        np.testing.assert_array_equal(user, other)
        sess.run(bump)
        saver.restore(sess, path)                   # again, over a variable that was updated
        np.testing.assert_array_equal(sess.run(v), saved)


def test_partitioned_and_twice_restored_variables_stay_apart(tmp_path):
    saved = values(3).reshape(1000, 2000)
    w = tf.get_variable("w", initializer=saved,
                        partitioner=tf.fixed_size_partitioner(2))
    u = tf.Variable(saved[0], name="u")
    saver = Saver(write_version=tf.train.SaverDef.V2)
    parts = list(w)
    bump = [part.assign_add(tf.ones(part.shape)) for part in parts]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        path = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
        saver.restore(sess, path)
        sess.run(bump[0])                           # one shard's update leaves the other alone
        np.testing.assert_array_equal(sess.run(parts[0]), saved[:500] + 1)
        np.testing.assert_array_equal(sess.run(parts[1]), saved[500:])
        np.testing.assert_array_equal(sess.run(u), saved[0])


def test_a_damaged_tensor_is_data_loss_naming_it_and_the_variables_keep_their_values(tmp_path):
    v = tf.Variable(values(4), name="v")
    saver = Saver(write_version=tf.train.SaverDef.V2)
    with tf.Session() as sess:
        sess.run(v.initializer)
        path = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
        data = tmp_path / "model.data-00000-of-00001"
        raw = bytearray(data.read_bytes())
        raw[BundleReader(path).entries["v"].offset + 5 * (1 << 20) + 3] ^= 0x10
        data.write_bytes(bytes(raw))
        sess.run(v.assign(tf.zeros([SIZE])))
        with pytest.raises(tf.errors.DataLossError, match="tensor v: checksum does not match"):
            saver.restore(sess, path)
        assert not sess.run(v).any()


def test_restore_into_ps_variables_through_a_cluster_moves_the_right_bytes(tmp_path):
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"],
                                 "worker": [f"127.0.0.1:{ports[1]}"]})
    servers = [tf.train.Server(spec, "ps", 0), tf.train.Server(spec, "worker", 0)]
    try:
        saved = values(5)
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(saved, name="v")
            bump = v.assign_add(tf.ones([SIZE]))
        saver = Saver(write_version=tf.train.SaverDef.V2)
        with tf.Session(servers[1].target) as sess:
            sess.run(v.initializer)
            path = saver.save(sess, str(tmp_path / "model"), write_meta_graph=False)
            sess.run(bump)
            before = sess.run(v)
            saver.restore(sess, path)
            restored = sess.run(v)
            np.testing.assert_array_equal(restored, saved)
            sess.run(bump)
            np.testing.assert_array_equal(sess.run(v), saved + 1)
            np.testing.assert_array_equal(restored, saved)
            np.testing.assert_array_equal(before, saved + 1)
    finally:
        for server in servers:
            server.stop()

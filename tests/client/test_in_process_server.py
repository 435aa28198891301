"""A Session on the tcp target of a server in its own process goes through memory (TF's
in-process master shortcut), and behaves exactly as over the network."""

from __future__ import annotations

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports


@pytest.fixture
def server():
    server = tf.train.Server.create_local_server()
    yield server
    server.stop()


def test_a_session_on_server_target_uses_the_inproc_twin(server):
    v = tf.Variable(np.arange(4, dtype=np.float32))
    with tf.Session(server.target) as sess:
        assert sess._remote.endpoint.startswith("inproc://")
        sess.run(v.initializer)
        np.testing.assert_array_equal(sess.run(v * 2), [0, 2, 4, 6])


@pytest.mark.parametrize("scheme", ["grpc://", "zmtf://", "tcp://"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_every_spelling_of_the_address_finds_it(scheme, host):
    port = free_tcp_ports(1)[0]
    server = tf.train.Server({"worker": [f"127.0.0.1:{port}"]}, job_name="worker", task_index=0)
    try:
        with tf.Session(f"{scheme}{host}:{port}") as sess:
            assert sess._remote.endpoint.startswith("inproc://")
            assert sess.run(tf.constant(3.0) + 1.0) == 4.0
    finally:
        server.stop()


def test_a_fetched_variable_is_a_copy_not_the_variable(server):
    v = tf.Variable(np.zeros(1 << 16, np.float32))   # big enough for zero-copy frames
    bump = v.assign_add(tf.ones(1 << 16))
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        before = sess.run(v)
        sess.run(bump)
        assert before.sum() == 0.0                    # the update did not reach the old fetch
        before[:] = 7.0                               # and writing the fetch leaves v alone
        assert sess.run(v).sum() == float(1 << 16)


def test_feeds_are_not_kept_by_reference(server):
    x = tf.placeholder(tf.float32, [3])
    v = tf.Variable(np.zeros(3, np.float32))
    store = v.assign(x)
    feed = np.array([1.0, 2.0, 3.0], np.float32)
    with tf.Session(server.target) as sess:
        sess.run(store, {x: feed})
        feed[:] = -1.0
        np.testing.assert_array_equal(sess.run(v), [1.0, 2.0, 3.0])


def test_after_stop_the_target_is_unavailable():
    server = tf.train.Server.create_local_server()
    target = server.target
    server.stop()
    with tf.Session(target, config=tf.ConfigProto(operation_timeout_in_ms=2000)) as sess:
        with pytest.raises(tf.errors.UnavailableError):
            sess.run(tf.constant(1.0))


def test_repeated_fetch_structures_reuse_their_plan_and_stay_correct(server):
    a, b = tf.constant(1.0), tf.constant(2.0)
    c = a + b
    v = tf.Variable(0.0)
    bump = v.assign_add(1.0)
    with tf.Session(server.target) as sess:
        sess.run(v.initializer)
        fetches = [c, a]
        for _ in range(3):
            assert sess.run(fetches) == [3.0, 1.0]
            assert sess.run(c) == 3.0
            assert sess.run((a, bump.op)) == (1.0, None)
        fetches[1] = b                                 # the same list, other elements
        assert sess.run(fetches) == [3.0, 2.0]
        assert sess.run({"sum": c}) == {"sum": 3.0}    # a nest: not cached, still right
        assert sess.run(c.name) == 3.0                 # a name: likewise
        assert sess.run(v) == 3.0                      # the three bumps ran
        plans = sess._remote._fetch_plans._plans   # initializer, [c, a], c, (a, bump), [c, b]
        assert len(plans) == 5 and all(p.elements for p in plans.values())


def test_ops_added_after_a_run_extend_the_master_session_once(server):
    """A run with an unchanged graph goes straight to RunStep; one after the graph grew
    extends the master's session first (and only then)."""
    x = tf.constant(2.0)
    y = x * 3.0
    with tf.Session(server.target) as sess:
        remote = sess._remote
        assert sess.run(y) == 6.0
        handle, sent = remote._handle, remote._sent_version
        assert sess.run(y) == 6.0 and remote._sent_version == sent   # nothing to send
        z = y + 1.0   # the graph grows: the next run sends it
        assert sess.run(z) == 7.0
        assert remote._handle == handle and remote._sent_version > sent
        assert sess.run([y, z]) == [6.0, 7.0]

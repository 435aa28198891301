"""Session.partial_run_setup / partial_run as TF1's session_partial_run_test.py checks them,
in process and through a server."""

import numpy as np
import pytest

import zmtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield
    tf.reset_default_graph()


@pytest.fixture(params=["direct", "server"])
def session(request):
    if request.param == "direct":
        sess = tf.Session()
    else:
        server = tf.train.Server.create_local_server()
        sess = tf.Session(server.target)
    yield sess
    sess.close()


def _three_placeholders():
    return [tf.placeholder(tf.float32, shape=[]) for _ in range(3)]


def test_a_step_is_fed_and_fetched_over_several_calls(session):
    a, b, c = _three_placeholders()
    r1 = tf.add(a, b)
    r2 = tf.multiply(r1, c)
    for scale in (17, 18):
        handle = session.partial_run_setup([r1, r2], [a, b, c])
        first = session.partial_run(handle, r1, feed_dict={a: 1, b: 2})
        assert first == 3
        assert session.partial_run(handle, r2, feed_dict={c: first * scale}) == 3 * 3 * scale
    unfinished = session.partial_run_setup([r1, r2], [a, b, c])
    assert session.partial_run(unfinished, r1, feed_dict={a: 1, b: 2}) == 3


def test_partial_runs_are_independent_and_chain_many_calls(session):
    a, b, c = _three_placeholders()
    r1 = tf.add(a, b)
    r2 = tf.multiply(r1, c)
    h1 = session.partial_run_setup([r1], [a, b, c])
    h2 = session.partial_run_setup([r1, r2], [a, b, c])
    assert session.partial_run(h1, r1, feed_dict={a: 1, b: 2}) == 3
    assert session.partial_run(h2, r1, feed_dict={a: 57, b: 9}) == 66
    assert session.partial_run(h2, r2, feed_dict={c: 7}) == 462
    x = tf.constant(2.0)
    inputs, outputs = [], []
    for _ in range(30):
        inputs.append(tf.placeholder(tf.float32, shape=[]))
        x = x * inputs[-1]
        outputs.append(x)
    handle = session.partial_run_setup(outputs, inputs)
    for ph, out in zip(inputs, outputs):
        result = session.partial_run(handle, out, feed_dict={ph: 1.0})
    assert result == 2.0


def test_partial_run_matches_run_and_takes_empty_fetches(session):
    a = tf.constant(2.0)
    b = a * 2
    c = b * 3
    handle = session.partial_run_setup([b, c], [])
    assert session.partial_run(handle, [b, c]) == session.run([b, c])
    ph = tf.placeholder(tf.float32)
    doubled = ph * 2.0
    handle = session.partial_run_setup(fetches=[doubled], feeds=[ph])
    assert session.partial_run(handle, [], {ph: 3.0}) == []
    assert session.partial_run(handle, [doubled], {}) == [6.0]
    assert session.partial_run(session.partial_run_setup([tf.constant([6.0])]), "Const_1:0") == [6.0]


def test_partial_run_refuses_what_the_setup_did_not_name_and_repeats(session):
    a, b, c = _three_placeholders()
    r1 = tf.add(a, b)
    r2 = tf.multiply(a, c)
    errors = tf.errors.InvalidArgumentError
    handle = session.partial_run_setup([r1], [a, b])
    with pytest.raises(errors, match="was not specified in partial_run_setup.$"):
        session.partial_run(handle, r1, feed_dict={a: 1, b: 2, c: 3})
    with pytest.raises(errors, match="was not specified in partial_run_setup.$"):
        session.partial_run(session.partial_run_setup([r1], [a, b, c]), r2, feed_dict={a: 1, c: 3})
    handle = session.partial_run_setup([r1, r2], [a, b, c])
    session.partial_run(handle, r1, feed_dict={a: 1, b: 2})
    with pytest.raises(errors, match="has already been fed.$"):
        session.partial_run(handle, r2, feed_dict={a: 1, c: 3})
    with pytest.raises(errors, match="has already been fetched.$"):
        session.partial_run(handle, r1, feed_dict={c: 3})
    x = tf.placeholder(tf.float32, shape=())
    fetches = [x * 2, x * 3]
    handle = session.partial_run_setup(fetches=fetches, feeds=[])
    with pytest.raises(errors, match="You must feed a value for placeholder"):
        session.partial_run(handle, fetches[0])
    with pytest.raises(errors, match="specify at least one target to fetch or execute."):
        session.partial_run_setup(fetches=[], feeds=[x])
    with pytest.raises(errors) as info:
        session.partial_run("foo", r1, feed_dict={a: 1, b: 2})
    assert info.value.op is None and info.value.node_def is None


def test_a_fetched_value_changed_by_the_caller_does_not_change_the_step():
    ph = tf.placeholder(tf.float32, shape=[2])
    first = tf.identity(ph)
    second = first + 1.0
    with tf.Session() as sess:
        handle = sess.partial_run_setup([first, second], [ph])
        got = sess.partial_run(handle, first, {ph: np.array([1.0, 2.0], np.float32)})
        got += 100
        np.testing.assert_array_equal(sess.partial_run(handle, second), [2.0, 3.0])

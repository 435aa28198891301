"""tf.py_func / tf.numpy_function: a Python function as a node, run in the process that built
it (locally, on an in-process tf.train.Server, or on any server of this process)."""

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import running_servers


def test_single_tout_gives_a_tensor_and_a_list_tout_a_list():
    x = tf.constant([1.0, 2.0])
    y = tf.py_func(lambda a: a * 2, [x], tf.float32)
    pair = tf.py_func(lambda a: (a + 1, np.int64(a.size)), [x], [tf.float32, tf.int64])
    assert isinstance(y, tf.Tensor) and y.op.type == "PyFunc" and y.dtype == tf.float32
    assert isinstance(pair, list) and [t.dtype for t in pair] == [tf.float32, tf.int64]
    with tf.Session() as sess:
        got_y, got_pair = sess.run([y, pair])
    np.testing.assert_array_equal(got_y, [2.0, 4.0])
    np.testing.assert_array_equal(got_pair[0], [2.0, 3.0])
    assert got_pair[1] == 2


def test_inputs_arrive_as_numpy_and_feeds_flow_through():
    seen = []
    p = tf.placeholder(tf.int32, [None])
    y = tf.numpy_function(lambda a: seen.append((type(a), a.dtype)) or a[::-1].copy(), [p], tf.int32)
    with tf.Session() as sess:
        np.testing.assert_array_equal(sess.run(y, {p: [1, 2, 3]}), [3, 2, 1])
    assert seen == [(np.ndarray, np.dtype("int32"))]


def test_string_inputs_and_outputs_are_bytes():
    names = tf.constant([b"ada", b"bob"])
    upper = tf.py_func(lambda a: np.array([v.upper() for v in a], dtype=object), [names], tf.string)
    from_str = tf.py_func(lambda a: np.array(["x", "yz"]), [names], tf.string)
    with tf.Session() as sess:
        got, got_str = sess.run([upper, from_str])
    assert list(got) == [b"ADA", b"BOB"] and list(got_str) == [b"x", b"yz"]


def test_python_scalars_and_empty_tout():
    x = tf.constant(1)
    n = tf.py_func(lambda a: 3, [x], tf.int64)        # a Python int is int64, as in TF
    side = tf.py_func(lambda a: None, [x], [])
    with tf.Session() as sess:
        assert sess.run(n) == 3
        assert sess.run(side) == []


@pytest.mark.parametrize("func,tout,message", [
    (lambda a: a.astype(np.float64), tf.float32, "0-th value returned by pyfunc_"),
    (lambda a: a.astype(np.float64), tf.float32, "is double, but expects float"),
    (lambda a: 3.0, tf.float32, "is double, but expects float"),
    (lambda a: np.array([1], np.int32), tf.int64, "is int32, but expects int64"),
    (lambda a: (a, a), tf.float32, "returns 2 values, but expects to see 1 values."),
    (lambda a: a, [tf.float32, tf.float32], "returns 1 values, but expects to see 2 values."),
])
def test_mismatched_outputs_are_invalid_argument_with_tf_wording(func, tout, message):
    y = tf.py_func(func, [tf.constant([1.0])], tout, name="checked")
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match=message) as info:
        sess.run(y)
    assert "checked" in str(info.value)


def _raiser(exc):
    def func(a):
        raise exc
    return func


@pytest.mark.parametrize("exc,error", [
    (ValueError("bad value"), tf.errors.InvalidArgumentError),
    (TypeError("bad type"), tf.errors.InvalidArgumentError),
    (RuntimeError("boom"), tf.errors.UnknownError),
    (StopIteration(), tf.errors.OutOfRangeError),
    (NotImplementedError("later"), tf.errors.UnimplementedError),
    (tf.errors.NotFoundError(None, None, "no such thing"), tf.errors.NotFoundError),
])
def test_exceptions_become_the_steps_error_with_tfs_codes(exc, error):
    y = tf.py_func(_raiser(exc), [tf.constant(1.0)], tf.float32)
    with tf.Session() as sess, pytest.raises(error) as info:
        sess.run(y)
    assert type(exc).__name__ in str(info.value) or "no such thing" in str(info.value)
    assert "Traceback" in str(info.value) or isinstance(exc, tf.errors.OpError)


def test_stateful_py_funcs_run_every_time_and_are_not_merged():
    calls = []
    x = tf.constant(1.0)
    a = tf.py_func(lambda v: calls.append("a") or v, [x], tf.float32)
    b = tf.py_func(lambda v: calls.append("b") or v, [x], tf.float32)
    assert a.op.type == "PyFunc" and a.op.get_attr("token") != b.op.get_attr("token")
    pure = tf.py_func(lambda v: v, [x], tf.float32, stateful=False)
    assert pure.op.type == "PyFuncStateless"
    with tf.Session() as sess:
        sess.run([a, b])
        sess.run([a, b])
    assert sorted(calls) == ["a", "a", "b", "b"]


def test_no_gradient_by_default():
    x = tf.constant([1.0, 2.0])
    y = tf.py_func(lambda a: a * a, [x], tf.float32)
    with pytest.raises(LookupError, match="op type: PyFunc"):
        tf.gradients(y, [x])


def test_runs_on_the_in_process_server_as_tf1_scripts_do():
    # the servers' op policy refuses PyFunc to graphs from clients unless allowed by name
    with running_servers({"worker": 1}, allow_ops=("PyFunc",)) as servers:
        server = servers[("worker", 0)]
        with tf.device("/job:worker/task:0"):
            y = tf.py_func(lambda a: a + 10, [tf.constant([1, 2])], tf.int32)
        with tf.Session(server.target) as sess:
            np.testing.assert_array_equal(sess.run(y), [11, 12])


def test_runs_on_another_server_of_the_same_process():
    calls = []
    with running_servers({"ps": 1, "worker": 1}, allow_ops="PyFunc") as servers:   # op policy
        with tf.device("/job:ps/task:0"):
            x = tf.constant([2.0, 3.0])
            y = tf.py_func(lambda a: calls.append(1) or a * a, [x], tf.float32)
        with tf.device("/job:worker/task:0"):
            z = y + 1.0
        with tf.Session(servers[("worker", 0)].target) as sess:
            np.testing.assert_array_equal(sess.run(z), [5.0, 10.0])
    assert calls == [1]

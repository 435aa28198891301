"""Local Session: run/eval, fetch structures, feeds, variables, config, and every bad-input error."""

import collections
import logging
import threading

import numpy as np
import pytest

import zmtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def test_seed_placement_example_runs_and_computes_12():
    with tf.device("/cpu:0"):
        a = tf.Variable(3.0, name="a")
        b = tf.constant(4.0, name="b")
    c = a * b
    with tf.Session() as sess:
        a.initializer.run()
        assert sess.run(c) == 12.0
        assert isinstance(sess.run(c), np.float32)
        assert c.eval() == 12.0


def test_control_dependencies_seed_example():
    a = tf.constant(1.0)
    b = a + 2.0
    with tf.control_dependencies([a, b]):
        x = tf.constant(3.0)
        y = tf.constant(4.0)
    z = x + y
    with tf.Session() as sess:
        assert sess.run(z) == 7.0


def test_fetch_structures_are_preserved():
    a = tf.constant(1.0, name="a")
    b = tf.constant([1, 2], name="b")
    Pair = collections.namedtuple("Pair", "x y")
    with tf.Session() as sess:
        out = sess.run({"a": a, "both": [a, (b, "a:0")], "pair": Pair(a, b), "op": b.op})
    assert out["a"] == 1.0 and out["op"] is None
    assert out["both"][0] == 1.0 and isinstance(out["both"][1], tuple)
    np.testing.assert_array_equal(out["both"][1][0], [1, 2])
    assert out["both"][1][1] == 1.0
    assert isinstance(out["pair"], Pair) and out["pair"].x == 1.0


def test_fetched_arrays_belong_to_the_caller():
    c = tf.constant([1.0, 2.0])
    with tf.Session() as sess:
        first = sess.run(c)
        first += 10
        np.testing.assert_array_equal(sess.run(c), [1.0, 2.0])


def test_feeds_replace_placeholders_and_cut_the_graph():
    x = tf.placeholder(tf.float32, shape=[None, 2], name="x")
    y = tf.reduce_sum(x * 2.0, axis=1)
    a = tf.constant(5.0)
    b = a + 1.0
    with tf.Session() as sess:
        np.testing.assert_allclose(sess.run(y, feed_dict={x: [[1, 2], [3, 4]]}), [6.0, 14.0])
        np.testing.assert_allclose(sess.run(y, feed_dict={"x:0": np.ones((1, 2))}), [4.0])
        assert sess.run(b, feed_dict={a: 10.0}) == 11.0
        assert sess.run(b) == 6.0


def test_variables_keep_state_and_update():
    v = tf.Variable(0.0, name="v")
    inc = v.assign_add(1.5)
    counter = tf.Variable(0, name="counter")
    bump = tf.assign_add(counter, 2)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(3):
            sess.run([inc, bump])
        assert sess.run(v) == 4.5 and sess.run(counter) == 6
        sess.run(v.assign(10.0))
        assert v.eval() == 10.0


def test_each_session_has_its_own_variables():
    v = tf.Variable(1.0, name="v")
    with tf.Session() as first, tf.Session() as second:
        first.run(v.initializer)
        first.run(v.assign(5.0))
        second.run(v.initializer)
        assert first.run(v) == 5.0 and second.run(v) == 1.0


def test_mlp_forward_pass_matches_numpy():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(8, 784)).astype(np.float32)
    labels = rng.integers(0, 10, size=8)
    x = tf.placeholder(tf.float32, [None, 784])
    y = tf.placeholder(tf.int64, [None])
    w1 = tf.Variable(tf.random_normal([784, 256], stddev=0.05, seed=1))
    b1 = tf.Variable(tf.zeros([256]))
    w2 = tf.Variable(tf.random_normal([256, 10], stddev=0.05, seed=2))
    hidden = tf.nn.relu(tf.matmul(x, w1) + b1)
    logits = tf.matmul(hidden, w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        got_loss, got_acc, W1, B1, W2 = sess.run([loss, accuracy, w1, b1, w2], {x: xs, y: labels})
    ref_logits = np.maximum(xs @ W1 + B1, 0) @ W2
    shifted = ref_logits - ref_logits.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got_loss, -log_probs[np.arange(8), labels].mean(), rtol=1e-4)
    np.testing.assert_allclose(got_acc, (ref_logits.argmax(1) == labels).mean())
    assert 0.04 < W1.std() < 0.06


def test_seeded_random_ops_repeat_per_session_and_advance_per_run():
    tf.set_random_seed(42)
    r = tf.random_uniform([4], seed=7)
    with tf.Session() as s1:
        first, second = s1.run(r), s1.run(r)
    with tf.Session() as s2:
        again = s2.run(r)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, second)
    assert ((0 <= first) & (first < 1)).all()


# ---- bad input: typed errors that name the node and the fix -------------------------------
def test_uninitialized_variable_is_a_failed_precondition_naming_it():
    v = tf.Variable(1.0, name="weights")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value weights") as info:
            sess.run(v * 2.0)
    assert "global_variables_initializer" in str(info.value)


def test_missing_feed_names_the_placeholder():
    x = tf.placeholder(tf.float32, shape=[None, 3], name="images")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="must feed a value for placeholder tensor 'images'"):
            sess.run(x + 1.0)


def test_feed_shape_and_dtype_mismatch():
    x = tf.placeholder(tf.float32, shape=[3], name="x")
    n = tf.placeholder(tf.int32, shape=[], name="n")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"Cannot feed value of shape \(2,\) for Tensor 'x:0'"):
            sess.run(x, {x: [1.0, 2.0]})
        with pytest.raises(ValueError, match="shape"):  # also a ValueError, as in TF
            sess.run(x, {x: np.zeros((3, 1))})
        with pytest.raises(tf.errors.InvalidArgumentError, match="dtype float64 for Tensor 'n:0', which has dtype int32"):
            sess.run(n, {n: 2.5})
        assert sess.run(n, {n: 3}) == 3
        ids = tf.placeholder(tf.int64, [None])
        empty = sess.run(ids, {ids: []})                 # [] takes the placeholder's dtype
        assert empty.dtype == np.int64 and empty.shape == (0,)
        with pytest.raises(tf.errors.InvalidArgumentError, match="dtype float64"):
            sess.run(ids, {ids: np.zeros(0)})            # an ndarray keeps its own dtype


def test_kernel_shape_mismatch_names_the_node():
    x = tf.placeholder(tf.float32, name="x")
    y = tf.placeholder(tf.float32, name="y")
    z = tf.add(x, y, name="sum_xy")
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="sum_xy") as info:
            sess.run(z, {x: np.ones(2), y: np.ones(3)})
    assert info.value.node_name == "sum_xy"


def test_unknown_fetch_name_is_tf1s_value_error():
    tf.constant(1.0, name="c")
    with tf.Session() as sess:
        with pytest.raises(ValueError, match="'nope:0' refers to a Tensor which does not exist"):
            sess.run("nope:0")
        with pytest.raises(ValueError, match="only has 1 outputs"):
            sess.run("c:4")


def test_cycle_is_reported_at_run():
    a = tf.constant(1.0, name="a")
    b = tf.identity(a, name="b")
    a.op._add_control_input(b.op)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="cycle"):
            sess.run(b)


def test_gpu_pin_without_gpu_fails_then_soft_placement_runs_on_cpu():
    with tf.device("/gpu:0"):
        i = tf.Variable(3)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Could not satisfy explicit device specification"):
            sess.run(i.initializer)
    config = tf.ConfigProto(allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        sess.run(i.initializer)
        assert sess.run(i) == 3


def test_closed_session_and_missing_default_session():
    c = tf.constant(1.0)
    sess = tf.Session()
    sess.close()
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(c)
    with pytest.raises(ValueError, match="No default session"):
        c.eval()


def test_malformed_target_names_the_accepted_forms():
    with pytest.raises(tf.errors.InvalidArgumentError, match="zmtf://host:port"):
        tf.Session("grpc://nohostport")


# ---- config -----------------------------------------------------------------------------------
def test_log_device_placement_logs_one_line_per_node(caplog):
    with tf.device("/cpu:0"):
        a = tf.Variable(3.0, name="a")
    c = a * 2.0
    config = tf.ConfigProto()
    config.log_device_placement = True
    with caplog.at_level(logging.INFO, logger="zmtf.placement"):
        with tf.Session(config=config) as sess:
            sess.run(a.initializer)
            first = [r.getMessage() for r in caplog.records if r.name == "zmtf.placement"]
            caplog.clear()
            sess.run(c)
            second = [r.getMessage() for r in caplog.records if r.name == "zmtf.placement"]
    cpu = "/job:localhost/replica:0/task:0/device:CPU:0"
    assert f"a: {cpu}" in first and f"a/initial_value: {cpu}" in first and f"a/Assign: {cpu}" in first
    assert second == [f"a/read: {cpu}", f"mul/y: {cpu}", f"mul: {cpu}"]  # only nodes not placed before


def test_list_devices_and_gpu_query():
    with tf.Session() as sess:
        devices = sess.list_devices()
    assert [d.name for d in devices] == ["/job:localhost/replica:0/task:0/device:CPU:0"]
    assert devices[0].device_type == "CPU"
    assert tf.test.is_gpu_available() is False


def test_run_timeout_is_a_deadline_exceeded():
    a = tf.random_normal([1500, 1500], seed=1)
    b = a
    for _ in range(8):
        b = tf.matmul(b, a)
    with tf.Session() as sess:
        with pytest.raises(tf.errors.DeadlineExceededError, match="did not finish"):
            sess.run(b, options=tf.RunOptions(timeout_in_ms=1))


def test_concurrent_runs_from_threads():
    x = tf.placeholder(tf.float32, [])
    y = x * 2.0 + 1.0
    results = {}
    with tf.Session() as sess:
        def worker(k):
            results[k] = [sess.run(y, {x: float(k * 100 + i)}) for i in range(50)]
        threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    for k in range(4):
        assert results[k] == [2.0 * (k * 100 + i) + 1.0 for i in range(50)]


def test_fetching_a_variable_op_by_name_gives_its_value_as_tf1():
    """TF1's ref tensor "w:0": its value (a copy), not a handle; uninitialized says so."""
    w = tf.Variable([1.0, 2.0], name="w")
    step = tf.train.get_or_create_global_step()
    fresh = tf.Variable(0.0, name="fresh")
    with tf.Session() as sess:
        sess.run([w.initializer, step.initializer])
        sess.run(tf.assign_add(step, 1))
        got_w, got_step = sess.run(["w:0", "global_step:0"])
        sess.run(w.assign([5.0, 6.0]))
        np.testing.assert_array_equal(got_w, [1.0, 2.0])   # a copy: the assign did not show
        assert got_step == 1
        with pytest.raises(tf.errors.FailedPreconditionError, match="fresh"):
            sess.run(fresh._ref_tensor())


def test_session_graph_def_and_sess_str_are_tf1s():
    with tf.Graph().as_default() as graph:
        tf.add(tf.constant(1.0, name="one"), 2.0, name="total")
        with tf.Session() as sess:
            assert sess.sess_str == ""
            nodes = {node.name: node.op for node in sess.graph_def.node}
            assert nodes["one"] == "Const" and nodes["total"] == "Add"
            assert sess.graph_def == graph.as_graph_def()
    workers, _ = tf.test.create_local_cluster(1, 0)
    with tf.Session(workers[0].target, graph=graph) as sess:
        assert sess.sess_str == workers[0].target
        assert sess.run("total:0") == 3.0


def test_a_reused_fetch_list_with_an_element_replaced_fetches_the_new_element():
    a, b = tf.constant(1.0), tf.constant(2.0)
    c = a + b
    with tf.Session() as sess:
        fetches = [c, a]
        assert sess.run(fetches) == [3.0, 1.0]
        assert sess.run(fetches) == [3.0, 1.0]        # the kept plan
        fetches[1] = b
        assert sess.run(fetches) == [3.0, 2.0]
        assert sess.run(tuple(fetches)) == (3.0, 2.0)


def test_the_async_session_names_its_core_and_closed_state_publicly():
    tf.reset_default_graph()
    x = tf.constant(2.0)
    async_sess = tf.AsyncSession()
    assert async_sess.local_core is not None and async_sess.remote_core is None
    sess = tf.Session()
    assert sess.run(x) == 2.0
    sess.close()
    sess.close()   # twice is fine
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(x)
    async_sess.close_blocking()
    assert async_sess.closed
    with pytest.raises(RuntimeError, match="closed Session"):
        async_sess.check_open()

"""The executor: parallel branches, per-session pools, errors abort the step."""

import threading

import numpy as np
import pytest

import zmtf as tf
from zmtf.formats.step_stats_proto import node_runs


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def overlap(trace, first, second):
    a = next(t for t in trace if t.node_name == first)
    b = next(t for t in trace if t.node_name == second)
    return a.start < b.end and b.start < a.end, (a, b)


def test_independent_slow_kernels_run_in_parallel():
    x = tf.placeholder(tf.float32, [1024, 1024])
    left = tf.matmul(x, x, name="left")
    right = tf.matmul(x, x, transpose_b=True, name="right")
    total = tf.add(tf.reduce_sum(left), tf.reduce_sum(right))
    data = np.random.default_rng(0).normal(size=(1024, 1024)).astype(np.float32)
    config = tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    with tf.Session(config=config) as sess:
        sess.run(total, {x: data})  # warm up
        meta = tf.RunMetadata()
        value = sess.run(total, {x: data}, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                         run_metadata=meta)
    both, (a, b) = overlap(node_runs(meta.step_stats), "left", "right")
    assert both, f"left ran {a.start:.4f}-{a.end:.4f} on {a.thread}, right {b.start:.4f}-{b.end:.4f} on {b.thread}"
    assert a.thread != b.thread
    np.testing.assert_allclose(value, (data @ data).sum() + (data @ data.T).sum(), rtol=1e-3)


def test_a_chain_runs_inline_on_the_calling_thread():
    x = tf.constant(0.0)
    for _ in range(20):
        x = x + 1.0
    meta = tf.RunMetadata()
    unfused = tf.ConfigProto(graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
        global_jit_level=tf.OptimizerOptions.OFF)))   # fused, the 20 adds would be one node
    with tf.Session(config=unfused) as sess:
        assert sess.run(x, options=tf.RunOptions(trace_level=3), run_metadata=meta) == 20.0
    assert {t.thread for t in node_runs(meta.step_stats)} == {threading.current_thread().name}
    # the 21 constants are evaluated once when the plan is bound, not in every step
    assert sorted(t.node_name for t in node_runs(meta.step_stats)) == sorted(
        op.name for op in x.graph.get_operations() if op.type == "Add")


def test_ops_that_only_look_at_a_big_input_stay_on_the_calling_thread():
    # Identity/Shape/ExpandDims of a 1M-float input cost the same as of a scalar: a thread
    # hop would only add latency. Big adds made ready beside them still go to the pool
    # (all but the last one the calling thread picks up).
    x = tf.placeholder(tf.float32, [1024, 1024])
    adds = [tf.add(x, 1.0, name="add_one"), tf.add(x, 2.0, name="add_two")]
    views = [tf.identity(x, name="ident"), tf.shape(x, name="shape"),
             tf.expand_dims(x, 0, name="expand")]
    data = np.ones((1024, 1024), np.float32)
    config = tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    meta = tf.RunMetadata()
    with tf.Session(config=config) as sess:
        values = sess.run([*adds, *views], {x: data},
                          options=tf.RunOptions(trace_level=3), run_metadata=meta)
    thread = {t.node_name: t.thread for t in node_runs(meta.step_stats)}
    here = threading.current_thread().name
    assert thread["ident"] == thread["shape"] == thread["expand"] == here, thread
    assert here != thread["add_one"] or here != thread["add_two"], thread
    assert float(values[0].sum()) == 2.0 * 1024 * 1024 and float(values[1][0, 0]) == 3.0
    assert list(values[3]) == [1024, 1024] and values[4].shape == (1, 1024, 1024)


def test_a_node_handed_to_the_pool_runs_once_and_its_chain_follows_it_there():
    # Two big adds are ready at once: one goes to the pool, and the thread that runs it goes
    # on with the nodes it made ready (its branch's sum), as the calling thread does with its own.
    x = tf.placeholder(tf.float32, [1024, 1024])
    sums = [tf.reduce_sum(tf.add(x, float(k), name=f"add_{k}"), name=f"sum_{k}") for k in (1, 2)]
    data = np.ones((1024, 1024), np.float32)
    config = tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    meta = tf.RunMetadata()
    with tf.Session(config=config) as sess:
        values = sess.run(sums, {x: data}, options=tf.RunOptions(trace_level=3), run_metadata=meta)
    names = [t.node_name for t in node_runs(meta.step_stats)]
    assert sorted(names) == ["add_1", "add_2", "sum_1", "sum_2"], names
    thread = {t.node_name: t.thread for t in node_runs(meta.step_stats)}
    here = threading.current_thread().name
    assert here in (thread["add_1"], thread["add_2"]) and thread["add_1"] != thread["add_2"], thread
    assert thread["sum_1"] == thread["add_1"] and thread["sum_2"] == thread["add_2"], thread
    assert [float(v) for v in values] == [2.0 * 1024 * 1024, 3.0 * 1024 * 1024]


def test_a_failure_on_a_pool_thread_fails_the_step_with_the_node_named():
    x = tf.placeholder(tf.float32, name="x")
    y = tf.placeholder(tf.float32, name="y")
    bad = tf.add(x, y, name="bad")
    good = tf.add(x, 1.0, name="good")
    config = tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    big = np.ones((1024, 1024), np.float32)
    with tf.Session(config=config) as sess:
        for _ in range(3):   # whichever of the two the pool gets, the step fails with "bad"
            with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
                sess.run([good, bad], {x: big, y: np.ones(1000, np.float32)})
        assert float(sess.run(good, {x: big}).sum()) == 2.0 * 1024 * 1024


def test_constants_are_preset_but_a_feed_still_overrides_them():
    c = tf.constant(2.0, name="c")
    y = c * 3.0
    with tf.Session() as sess:
        assert sess.run(y) == 6.0
        assert sess.run(y, {c: 5.0}) == 15.0
        assert sess.run(y) == 6.0
        assert sess.run(c) == 2.0


def test_variable_nodes_are_bound_once_and_still_read_every_assignment():
    v = tf.Variable(1.0, name="v")
    y = tf.identity(v * 2.0, name="y")
    bump = tf.assign_add(v, 1.0)
    meta = tf.RunMetadata()
    with tf.Session() as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 2.0
        sess.run(bump)
        assert sess.run(y, options=tf.RunOptions(trace_level=3), run_metadata=meta) == 4.0
        ran = {t.node_name for t in node_runs(meta.step_stats)}
        assert "y" in ran and "v" not in ran, ran   # v's reference is preset, not run
        sess.run(v.initializer)   # re-initialized: the same reference sees the new value
        assert sess.run(y) == 2.0
        assert sess.run(v.op.outputs[0]) == 1.0   # fetching the Variable op reads its value


def test_per_session_threads_are_released_on_close():
    before = {t.name for t in threading.enumerate()}
    x = tf.placeholder(tf.float32, [300, 300])
    y = tf.matmul(x, x) + tf.matmul(x, x)
    config = tf.ConfigProto(use_per_session_threads=True, inter_op_parallelism_threads=2)
    with tf.Session(config=config) as sess:
        sess.run(y, {x: np.ones((300, 300), np.float32)})
    leaked = {t.name for t in threading.enumerate()} - before
    assert not leaked, leaked


def test_error_in_one_branch_fails_the_step_and_the_session_stays_usable():
    x = tf.placeholder(tf.float32, name="x")
    y = tf.placeholder(tf.float32, name="y")
    bad = tf.add(x, y, name="bad")
    good = x * 2.0
    with tf.Session() as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="bad"):
            sess.run([good, bad], {x: np.ones(3), y: np.ones(4)})
        np.testing.assert_allclose(sess.run(good, {x: np.ones(3)}), 2 * np.ones(3))


def test_async_session_runs_many_steps_at_once():
    import asyncio

    x = tf.placeholder(tf.float32, [])
    y = x * x

    async def main():
        async with tf.AsyncSession() as sess:
            return await asyncio.gather(*[sess.run(y, {x: float(i)}) for i in range(100)])

    assert asyncio.run(main()) == [float(i * i) for i in range(100)]


def test_a_late_value_for_a_cleaned_up_step_is_dropped_not_kept():
    from zmtf.runtime.rendezvous import Rendezvous

    rendezvous = Rendezvous()
    rendezvous.put(1, "k", 1.0)
    assert rendezvous.pending() == 1
    rendezvous.cleanup_step(1)
    assert rendezvous.pending() == 0
    rendezvous.put(1, "k", 2.0)            # arrives after the step was forgotten
    assert rendezvous.pending() == 0
    rendezvous.put(2, "k", 3.0)            # other steps are unaffected
    got = []
    rendezvous.recv(2, "k", lambda value, error: got.append(value))
    assert got == [3.0]


def test_a_long_chain_of_async_kernels_completing_at_once_does_not_recurse():
    """Recvs whose values are already there (one push carried them all) and dequeues of a full
    queue complete inside their own call: each used to start the next one a stack level deeper,
    so a few hundred of them in a chain raised RecursionError (a sharded initializer did)."""
    import zmtf as tf

    with tf.Graph().as_default():
        queue = tf.FIFOQueue(1000, tf.float32, shapes=[[]])
        fill = queue.enqueue_many([tf.range(600, dtype=tf.float32)])
        last = None
        taken = []
        for _ in range(600):
            with tf.control_dependencies([last] if last is not None else []):
                last = queue.dequeue()
            taken.append(last)
        with tf.Session() as sess:
            sess.run(fill)
            values = sess.run(taken)
    assert values == [float(i) for i in range(600)]


def test_kernels_are_quiet_on_float_errors_and_leave_the_callers_numpy_state_alone():
    """As in TF: 1/0 is inf and 0/0 nan, with no warning; numpy's error state of the calling
    code is what it was before run(), after a failing step too."""
    x = tf.placeholder(tf.float32, [3])
    ratio = tf.div(x, tf.constant([0.0, 0.0, 2.0]))
    huge = tf.square(x) * tf.constant(1e38)
    flat = tf.placeholder(tf.float32, [None])
    bad = tf.reshape(flat, [2, 2])
    data = np.array([1.0, 0.0, 4.0], np.float32)
    before = np.geterr()
    with np.errstate(all="raise"), tf.Session() as sess:
        inside = np.geterr()
        values, big = sess.run([ratio, huge], {x: data})
        assert np.geterr() == inside
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(bad, {flat: data})
        assert np.geterr() == inside
    assert np.geterr() == before
    assert np.isinf(values[0]) and np.isnan(values[1]) and values[2] == 2.0
    assert np.isinf(big[2])


def test_an_expensive_node_stays_here_when_only_a_cheap_update_is_ready_beside_it():
    # The product and the update become ready together (the update made first, so it waits in
    # the ready list while the product is considered): a pool thread would only add its wake-up
    # to the product; the update runs after it on the same thread.
    x = tf.placeholder(tf.float32, [512, 512])
    scaled = tf.multiply(x, 2.0, name="scaled")
    count = tf.Variable(0.0, name="count")
    one = tf.constant(1.0)
    with tf.control_dependencies([scaled]):
        update = tf.assign_add(count, one, name="update")
    big = tf.matmul(scaled, scaled, name="big")
    data = np.ones((512, 512), np.float32)
    config = tf.ConfigProto(inter_op_parallelism_threads=2, use_per_session_threads=True)
    meta = tf.RunMetadata()
    with tf.Session(config=config) as sess:
        sess.run(count.initializer)
        value, counted = sess.run([big, update], {x: data}, options=tf.RunOptions(trace_level=3),
                                  run_metadata=meta)
    thread = {t.node_name: t.thread for t in node_runs(meta.step_stats)}
    here = threading.current_thread().name
    assert thread["big"] == thread["update"] == here, thread
    assert float(value[0, 0]) == 4.0 * 512 and counted == 1.0

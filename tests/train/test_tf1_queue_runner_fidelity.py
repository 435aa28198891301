"""QueueRunner and Coordinator as TF 1.15 behaves (queue_runner_test.py and
coordinator_test.py are the spec): thread names, QueueRunnerDef round trips, the clean-stop
errors, and request_stop after join."""

from __future__ import annotations

import sys
import threading

import pytest

import zmtf as tf


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def count_up_to(limit):
    var = tf.Variable(tf.constant(0, dtype=tf.int64))
    return var, var.count_up_to(limit)


# ---- QueueRunner ---------------------------------------------------------------------------
def test_threads_are_named_after_the_queue_and_their_op():
    var0, up_to_3 = count_up_to(3)
    var1, up_to_30 = count_up_to(30)
    queue = tf.FIFOQueue(10, tf.float32)
    runner = tf.train.QueueRunner(queue, [up_to_3, up_to_30])
    assert runner.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        threads = runner.create_threads(sess)
        assert sorted(t.name for t in threads) == ["QueueRunnerThread-fifo_queue-CountUpTo:0",
                                                    "QueueRunnerThread-fifo_queue-CountUpTo_1:0"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert runner.exceptions_raised == [] and sess.run([var0, var1]) == [3, 30]
        coord = tf.train.Coordinator()
        coord.request_stop()
        other = tf.train.QueueRunner(queue, [queue.enqueue(1.0)])
        names = sorted(t.name for t in other.create_threads(sess, coord))
        assert names == ["QueueRunnerThread-fifo_queue-close_on_stop",
                         "QueueRunnerThread-fifo_queue-fifo_queue_enqueue"]


def test_a_runner_is_named_after_its_queue_and_found_by_scope():
    with tf.name_scope("scope"):
        queue = tf.FIFOQueue(10, tf.float32, name="queue")
    runner = tf.train.QueueRunner(queue, [tf.no_op()])
    assert runner.name == "scope/queue"
    tf.train.add_queue_runner(runner)
    assert tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS, "scope") == [runner]
    with pytest.raises(ValueError, match="Must provide queue and enqueue_ops"):
        tf.train.QueueRunner(queue, [])


def test_queue_runner_def_round_trip():
    queue = tf.FIFOQueue(10, tf.float32, name="queue")
    enqueue, close, cancel = (tf.no_op(name=n) for n in ("enqueue", "close", "cancel"))
    runner = tf.train.QueueRunner(queue, [enqueue], close, cancel, queue_closed_exception_types=(
        tf.errors.OutOfRangeError, tf.errors.CancelledError))
    proto = runner.to_proto()
    assert (proto.queue_name, list(proto.enqueue_op_name), proto.close_op_name,
            proto.cancel_op_name) == ("queue", ["enqueue"], "close", "cancel")
    again = tf.train.QueueRunner.from_proto(type(proto).FromString(proto.SerializeToString()))
    assert again.queue.name == "queue" and again.enqueue_ops == [enqueue]
    assert again.close_op is close and again.cancel_op is cancel
    assert again.queue_closed_exception_types == (tf.errors.OutOfRangeError,
                                                  tf.errors.CancelledError)
    del proto.queue_closed_exception_types[:]          # written before the field existed
    legacy = tf.train.QueueRunner(queue_runner_def=proto)
    assert legacy.queue_closed_exception_types == (tf.errors.OutOfRangeError,)
    with pytest.raises(ValueError, match="mutually exclusive"):
        tf.train.QueueRunner(queue, [enqueue], queue_runner_def=proto)


def test_queue_runner_def_scopes():
    with tf.name_scope("outer"):
        queue = tf.FIFOQueue(10, tf.float32, name="queue")
        runner = tf.train.QueueRunner(queue, [queue.enqueue(1.0, name="put")])
    proto = runner.to_proto(export_scope="outer")
    assert (proto.queue_name, list(proto.enqueue_op_name)) == ("queue", ["put"])
    assert runner.to_proto(export_scope="elsewhere") is None
    again = tf.train.QueueRunner.from_proto(proto, import_scope="outer")
    assert again.name == "outer/queue" and again.enqueue_ops[0].name == "outer/put"


def test_a_runner_rebuilt_from_its_def_fills_its_queue():
    queue = tf.FIFOQueue(2, tf.float32, name="q")
    tf.train.QueueRunner(queue, [queue.enqueue(5.0)])
    rebuilt = tf.train.QueueRunner.from_proto(
        tf.train.QueueRunner(queue, [queue.enqueue(5.0)]).to_proto())
    dequeue = queue.dequeue()
    with tf.Session() as sess:
        coord = tf.train.Coordinator()
        threads = rebuilt.create_threads(sess, coord, start=True)
        assert [sess.run(dequeue) for _ in range(3)] == [5.0] * 3
        coord.request_stop()
        coord.join(threads, stop_grace_period_secs=10)


def test_start_queue_runners_needs_a_session():
    with pytest.raises(TypeError, match="sess must be a `tf.Session` object"):
        tf.train.start_queue_runners("NotASession")


# ---- Coordinator ---------------------------------------------------------------------------
@pytest.mark.parametrize("as_exc_info", [False, True])
def test_request_stop_after_join_raises_the_error_itself(as_exc_info):
    coord = tf.train.Coordinator()
    coord.join([])
    with pytest.raises(RuntimeError, match="Too late"):
        try:
            raise RuntimeError("Too late")
        except RuntimeError as error:
            coord.request_stop(sys.exc_info() if as_exc_info else error)
    coord.clear_stop()                     # then errors are kept for join() again
    try:
        raise RuntimeError("After clear")
    except RuntimeError as error:
        coord.request_stop(sys.exc_info() if as_exc_info else error)
    with pytest.raises(RuntimeError, match="After clear"):
        coord.join([])


def test_only_the_error_that_stops_the_coordinator_is_kept():
    coord = tf.train.Coordinator()
    coord.request_stop()
    coord.request_stop(RuntimeError("after the stop"))
    coord.join([])                        # nothing to raise: the stop came first
    assert coord.should_stop() and coord.joined


def test_clean_stop_types_are_the_given_ones_even_none():
    strict = tf.train.Coordinator(clean_stop_exception_types=[])
    strict.request_stop(tf.errors.OutOfRangeError(None, None, "EOF"))
    with pytest.raises(tf.errors.OutOfRangeError):
        strict.join([])
    mine = tf.train.Coordinator(clean_stop_exception_types=(ValueError,))
    thread = threading.Thread(target=mine.request_stop, args=(ValueError("Clean stop"),))
    thread.start()
    mine.join([thread], stop_grace_period_secs=5)


# ---- through meta graphs --------------------------------------------------------------------
def test_queue_runners_travel_through_export_and_import_meta_graph(tmp_path):
    queue = tf.FIFOQueue(4, tf.float32, name="q")
    v = tf.Variable(1.0, name="v")
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(v.assign_add(1.0))]))
    tf.identity(queue.dequeue(), name="out")
    path = str(tmp_path / "model.meta")
    tf.train.export_meta_graph(path)
    tf.reset_default_graph()
    tf.train.import_meta_graph(path, import_scope="imported")
    [runner] = tf.get_collection(tf.GraphKeys.QUEUE_RUNNERS)
    assert runner.name == "imported/q" and runner.queue_closed_exception_types == (
        tf.errors.OutOfRangeError,)
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        coord = tf.train.Coordinator()
        threads = tf.train.start_queue_runners(sess, coord)
        assert [sess.run("imported/out:0") for _ in range(3)] == [2.0, 3.0, 4.0]
        coord.request_stop()
        sess.close()
        coord.join(threads, stop_grace_period_secs=10)


@pytest.mark.parametrize("runner", [
    {"queue_name": "nowhere", "enqueue_op_name": ["q_enqueue"], "close_op_name": "q_Close",
     "cancel_op_name": "q_Close_1", "queue_closed_exception_types": [11]},
    {"queue_name": "q", "enqueue_op_name": [], "close_op_name": "q_Close",
     "cancel_op_name": "q_Close_1", "queue_closed_exception_types": [11]},
    {"queue_name": "q", "enqueue_op_name": ["q_enqueue"], "close_op_name": "q_Close",
     "cancel_op_name": "q_Close_1", "queue_closed_exception_types": [99]},
    {"queue_name": "q"},
])
def test_a_bad_queue_runner_in_a_meta_graph_is_refused_naming_it(tmp_path, runner):
    queue = tf.FIFOQueue(4, tf.float32, name="q")
    tf.train.add_queue_runner(tf.train.QueueRunner(queue, [queue.enqueue(1.0)]))
    meta = tf.train.export_meta_graph()
    meta["collections"]["queue_runners"] = [{"queue_runner": runner}]
    tf.reset_default_graph()
    with pytest.raises(tf.errors.InvalidArgumentError, match="collection 'queue_runners' item 0"):
        tf.train.import_meta_graph(meta)
    assert tf.get_default_graph().get_operations() == []


def test_sync_replicas_variables_are_the_wrapped_optimizers():
    opt = tf.train.SyncReplicasOptimizer(tf.train.AdamOptimizer(0.01), replicas_to_aggregate=1,
                                         total_num_replicas=1)
    v = tf.Variable([0.0], name="fetch_variable_test")
    opt.minimize(v, global_step=tf.Variable(0, name="global_step", trainable=False))
    beta1_power, beta2_power = opt._opt._get_beta_accumulators()
    assert beta1_power in opt.variables() and beta2_power in opt.variables()


def test_tf_train_queue_runner_holds_the_module_names():
    assert tf.train.queue_runner.QueueRunner is tf.train.QueueRunner
    assert tf.train.queue_runner.add_queue_runner is tf.train.add_queue_runner
    assert tf.train.queue_runner.start_queue_runners is tf.train.start_queue_runners

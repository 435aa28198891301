"""Which master partitions are deferred (started after the RunGraph replies, fed with their
values in place of _Recv nodes), and which must start at once."""

import numpy as np

import zmtf as tf
from zmtf.placement.partition import partition

PS = "/job:ps/replica:0/task:0"
WORKER = "/job:worker/replica:0/task:0"


def parts_of(graph, fetches, targets=(), feeds=()):
    ops = graph.get_operations()
    devices = {op.name: op.device or f"{WORKER}/device:CPU:0" for op in ops}
    return partition(ops, devices, master_task=WORKER, feeds=list(feeds), fetches=list(fetches),
                     targets=list(targets))


def test_a_partition_that_only_waits_for_replies_is_deferred():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(f"{PS}/device:CPU:0"):
            a = tf.Variable(1.0, name="a")
        with tf.device(f"{WORKER}/device:CPU:0"):
            x = tf.placeholder(tf.float32, [], name="x")
            b = a + 2.0 + x
    parts = parts_of(graph, [b], feeds=[x])
    own = parts[WORKER]
    assert own.deferred
    assert own.recv_keys == parts[PS].reply_keys   # each reply value it waits for, by key
    recv = [n["name"] for n in own.graph["nodes"] if n["op"] == "_Recv"]
    assert own.run_feeds == own.feeds + [name + ":0" for name in recv]
    assert own.feeds == ["x:0"] and not parts[PS].deferred


def test_a_partition_that_sends_is_not_deferred():
    """Training's shape: the ps waits for the worker's gradient, so the worker must start."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(f"{PS}/device:CPU:0"):
            w = tf.Variable(np.ones(3, np.float32), name="w")
        with tf.device(f"{WORKER}/device:CPU:0"):
            grad = w * 2.0
        with tf.device(f"{PS}/device:CPU:0"):
            update = tf.assign_sub(w, grad)
    parts = parts_of(graph, [], targets=[update.op])
    assert not parts[WORKER].deferred


def test_a_partition_with_work_of_its_own_is_not_deferred():
    """A matmul that needs no reply runs while the ps works, not after it."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(f"{PS}/device:CPU:0"):
            a = tf.Variable(1.0, name="a")
        with tf.device(f"{WORKER}/device:CPU:0"):
            local = tf.reduce_sum(tf.matmul(tf.ones([4, 4]), tf.ones([4, 4])))
            b = local + a
    assert not parts_of(graph, [b])[WORKER].deferred


def test_a_control_edge_from_another_task_is_not_deferred():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(f"{PS}/device:CPU:0"):
            a = tf.Variable(1.0, name="a")
            bump = tf.assign_add(a, 1.0)
        with tf.device(f"{WORKER}/device:CPU:0"):
            with tf.control_dependencies([bump]):
                b = tf.constant(2.0) * 3.0
    assert not parts_of(graph, [b])[WORKER].deferred

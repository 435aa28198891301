"""A big variable read again unchanged is resent from the segment holding its last copy
(distributed/shared_memory.py, runtime/resources.VariableLock): no copy on the sender. The
value a receiver reads must still always be the variable's current one: every write path
(assign, assign_add/sub, scatter, optimizers) between two reads is seen."""

import gc
import os

import numpy as np
import pytest

import zmtf as tf
from server_processes import free_ports, launch_server_process, stop_process, wait_listening
from zmtf.distributed import shared_memory
from zmtf.distributed.cluster_spec import ClusterSpec
from zmtf.runtime.resources import ResourceContainer, stored_version

BIG = 1 << 20   # shared_memory.THRESHOLD, resources.VERSIONED_BYTES


def _segment_value(shm, like):
    """What the segment [pid, fd, inode] holds now (read through our own descriptor)."""
    data = os.pread(shm[1], like.nbytes, shared_memory.HEADER)
    return np.frombuffer(data, like.dtype).reshape(like.shape)


def _released(shm):
    os.pwrite(shm[1], shared_memory.RELEASED, 0)   # as the receiver does when done


@pytest.fixture
def stored():
    store = ResourceContainer()
    store.assign("v", np.arange(BIG // 4, dtype=np.float32))
    return store


def test_an_unchanged_variable_is_resent_without_a_copy_and_a_written_one_is_copied(stored):
    value = stored.read("v")
    first = shared_memory.POOL.write(value)
    _released(first)
    value[0] = -1.0   # outside the lock, as no kernel writes: shows whether it copies again
    again = shared_memory.POOL.write(value)
    assert again == first and _segment_value(again, value)[0] == 0.0   # no copy
    _released(again)
    with stored.lock("v"):   # every kernel that writes in place holds it
        value[1] = -2.0
    third = shared_memory.POOL.write(value)
    assert np.array_equal(_segment_value(third, value), value)   # copied: both writes seen
    _released(third)


def test_a_segment_still_in_use_or_copied_during_a_write_is_not_resent(stored):
    value = stored.read("v")
    with stored.lock("v"):   # a write under way: the copy may be torn, never reused
        first = shared_memory.POOL.write(value)
    _released(first)
    value[0] = -1.0
    second = shared_memory.POOL.write(value)   # copies again: the new value is seen
    assert _segment_value(second, value)[0] == -1.0
    value[0] = -3.0
    third = shared_memory.POOL.write(value)   # the second one's receiver is not done
    assert third != second and _segment_value(third, value)[0] == -3.0
    _released(second)
    _released(third)


def test_a_copy_or_a_replaced_value_is_not_a_stored_variable(stored):
    value = stored.read("v")
    assert stored_version(value) is not None
    assert stored_version(value.copy()) is None and stored_version(value[1:]) is None
    stored.assign("v", value + 1)   # Assign stores a new array: the old one is not tracked
    assert stored_version(value) is None and stored_version(stored.read("v")) is not None
    assert stored_version(np.zeros(16, np.float32)) is None   # small: never tracked
    del value
    gc.collect()


# ---- every write path, between processes ---------------------------------------------------
N = BIG // 4   # float32: a 1 MiB variable, sent through shared memory


@pytest.fixture(scope="module")
def cluster():
    spec = ClusterSpec({"ps": [f"127.0.0.1:{free_ports(1)[0]}"],
                        "worker": [f"127.0.0.1:{free_ports(1)[0]}"]})
    procs = [launch_server_process(spec, "ps", 0), launch_server_process(spec, "worker", 0)]
    try:
        for proc in procs:
            wait_listening(proc)
        yield spec
    finally:
        for proc in procs:
            stop_process(proc)


def _writes(v, grad, fed):
    """Op name -> an op on the ps that changes ``v`` in place or replaces it: every write
    path (Assign, AssignAdd/Sub, Scatter*, Apply* and SparseApply* kernels)."""
    idx = tf.constant([1, 7, N - 1])
    rows = tf.constant([5.0, -6.0, 7.0])
    writes = {
        "assign": tf.assign(v, fed),
        "assign_add": tf.assign_add(v, tf.ones([N])),
        "assign_sub": tf.assign_sub(v, tf.fill([N], 0.25)),
        "scatter_update": tf.scatter_update(v, idx, rows),
        "scatter_add": tf.scatter_add(v, idx, rows),
        "scatter_sub": tf.scatter_sub(v, idx, rows),
    }
    for name, opt in [("sgd", tf.train.GradientDescentOptimizer(0.5)),
                      ("momentum", tf.train.MomentumOptimizer(0.1, 0.9)),
                      ("adam", tf.train.AdamOptimizer(0.01)),
                      ("rmsprop", tf.train.RMSPropOptimizer(0.01)),
                      ("adagrad", tf.train.AdagradOptimizer(0.1))]:
        writes[name] = opt.apply_gradients([(grad, v)])
    sparse = tf.IndexedSlices(rows, idx, tf.constant([N]))   # SparseApply* kernels
    writes["sparse_adagrad"] = tf.train.AdagradOptimizer(0.1).apply_gradients([(sparse, v)])
    writes["sparse_momentum"] = tf.train.MomentumOptimizer(0.1, 0.9).apply_gradients(
        [(sparse, v)])
    return writes


def test_every_write_between_two_reads_is_seen_by_the_reader(cluster):
    """The worker reads v from the ps (through a segment; twice unchanged, so the second
    is resent), then each write path changes it: the worker's next read must equal the
    value the ps computes from its own storage, and for the simple ones the model's."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(tf.zeros([N]), name="v")
            grad = tf.constant(np.linspace(-1, 1, N, dtype=np.float32))
            fed = tf.placeholder(tf.float32, [N])
            writes = _writes(v, grad, fed)
            weights = tf.constant(np.arange(N, dtype=np.float32) % 97)
            on_ps = tf.reduce_sum(v * weights)   # from the ps's storage: no transfer
        with tf.device("/job:worker/task:0"):
            read = v.read_value() * 1.0   # crosses ps -> worker
            on_worker = tf.reduce_sum(read * weights)
        init = tf.global_variables_initializer()
    model = np.zeros(N, np.float32)
    rng = np.random.default_rng(3)
    with tf.Session("grpc://" + cluster.task_address("worker", 0), graph=graph) as sess:
        sess.run(init)
        for name, op in writes.items():
            before = sess.run(read)
            again, weighted, truth = sess.run([read, on_worker, on_ps])   # unchanged: resent
            assert np.array_equal(before, again) and weighted == truth, name
            feed = {fed: rng.standard_normal(N).astype(np.float32)}
            sess.run(op, feed)
            after, weighted, truth = sess.run([read, on_worker, on_ps])
            assert weighted == truth, f"{name}: the worker read a stale value"
            assert not np.array_equal(after, before), f"{name} changed nothing seen"
            if name == "assign":
                model = feed[fed].copy()
            elif name in ("assign_add", "assign_sub"):
                model += 1.0 if name == "assign_add" else -0.25
            elif name.startswith("scatter"):
                rows = np.float32([5.0, -6.0, 7.0])
                for i, r in zip([1, 7, N - 1], rows):
                    model[i] = r if name == "scatter_update" else \
                        model[i] + (r if name == "scatter_add" else -r)
            else:
                model = after.copy()   # optimizers: the ps's own value is the oracle above
            assert np.array_equal(after, model), name

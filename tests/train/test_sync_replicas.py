"""SyncReplicasOptimizer: between-graph synchronous training on an in-process cluster.

Each worker builds its own graph and sync Session (as TF1 scripts do); the test body runs
in a thread so the cluster's event loop keeps serving.
"""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import local_cluster

WORKERS = 2


def build(task, grads=None, data=None, replicas=WORKERS, lr=2.0):
    """One worker's graph: variables on two ps tasks, the sync optimizer, per-worker data."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            var_0 = tf.Variable(0.0, name="v0")
            global_step = tf.train.get_or_create_global_step()
        with tf.device("/job:ps/task:1"):
            var_1 = tf.Variable(1.0, name="v1")
        with tf.device(f"/job:worker/task:{task}"):
            opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(lr),
                                                 replicas_to_aggregate=replicas,
                                                 total_num_replicas=WORKERS)
            if data is None:   # fixed gradients, as TF's own test of this optimizer
                loss = None
                pairs = [(tf.constant(grads[0]), var_0), (tf.constant(grads[1]), var_1)]
            else:              # least squares: fit y = 3 x - 1 on this worker's points
                xs, ys = data
                loss = tf.reduce_mean(tf.square(var_0 * xs + var_1 - ys))
                pairs = opt.compute_gradients(loss, [var_0, var_1])
            train_op = opt.apply_gradients(pairs, global_step=global_step)
        init = tf.global_variables_initializer()
    return graph, dict(opt=opt, train=train_op, init=init, step=global_step, loss=loss,
                       var_0=var_0, var_1=var_1, local_step=opt._local_step)


def start(cluster, graphs):
    """Chief: init + chief_init + tokens + the sync thread; the other worker: local step init."""
    sessions = [tf.Session(cluster.target("worker", i), graph=g) for i, (g, _) in enumerate(graphs)]
    chief = graphs[0][1]
    sessions[0].run(chief["init"])
    sessions[0].run(chief["opt"].chief_init_op)
    sessions[0].run(chief["opt"].get_init_tokens_op())
    coord = tf.train.Coordinator()
    threads = chief["opt"].get_chief_queue_runner().create_threads(sessions[0], coord, start=True)
    for sess, (_, ops) in zip(sessions[1:], graphs[1:]):
        while sess.run(ops["opt"].ready_for_local_init_op).size:   # names not initialized yet
            time.sleep(0.01)
        sess.run(ops["opt"].local_step_init_op)
    return sessions, coord, threads


def stop(sessions, coord, threads):
    coord.request_stop()
    for sess in sessions:
        sess.close()             # cancels the chief's sync op, waiting for the next gradients
    coord.join(threads, stop_grace_period_secs=5)


def wait_for(predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def run_together(sessions, graphs):
    """One train step on every worker at once (the last round needs both gradients)."""
    errors = []

    def work(sess, ops):
        try:
            sess.run(ops["train"])
        except Exception as error:  # noqa: BLE001 - re-raised below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(s, g[1])) for s, g in zip(sessions, graphs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert not errors and not any(t.is_alive() for t in threads), errors


def takers(cluster):
    """Parked take_grads left on the ps tasks (none may outlive the sessions)."""
    from zmtf.runtime.accumulator import ConditionalAccumulator

    left = 0
    for task in (0, 1):
        resources = cluster.servers[("ps", task)].worker.resources
        for resource in list(resources._shared.values()):
            if isinstance(resource, ConditionalAccumulator):
                left += len(resource._takers)
    return left


def two_workers_fixed_gradients(cluster):
    graphs = [build(0, (0.1, 0.9)), build(1, (0.3, 1.1))]
    sessions, coord, threads = start(cluster, graphs)
    s0, s1 = sessions
    ops0, ops1 = graphs[0][1], graphs[1][1]
    assert s0.run(ops0["step"]) == 0 and s1.run(ops1["local_step"]) == 0

    # The initial tokens let each worker take its first step alone.
    s0.run(ops0["train"])
    s1.run(ops1["train"])
    wait_for(lambda: s1.run(ops1["step"]) == 1)
    np.testing.assert_allclose(s1.run(ops1["var_0"]), 0 - (0.1 + 0.3) / 2 * 2.0, rtol=1e-6)
    np.testing.assert_allclose(s1.run(ops1["var_1"]), 1 - (0.9 + 1.1) / 2 * 2.0, rtol=1e-6)
    # Those tokens carried step 0: the next gradients are stale and dropped (TF does the same).
    assert s0.run(ops0["local_step"]) == 0 and s1.run(ops1["local_step"]) == 0
    s0.run(ops0["train"])
    s1.run(ops1["train"])
    assert s1.run(ops1["step"]) == 1
    assert s0.run(ops0["local_step"]) == 1 and s1.run(ops1["local_step"]) == 1
    np.testing.assert_allclose(s1.run(ops1["var_0"]), -0.4, rtol=1e-6)

    # No tokens left: a step needs both workers.
    run_together(sessions, graphs)
    wait_for(lambda: s0.run(ops0["step"]) == 2)
    np.testing.assert_allclose(s0.run(ops0["var_0"]), -0.8, rtol=1e-6)
    np.testing.assert_allclose(s0.run(ops0["var_1"]), -3.0, rtol=1e-6)
    assert takers(cluster) == 2          # the sync op waits for the next round, per variable
    stop(sessions, coord, threads)
    assert not any(t.is_alive() for t in threads)
    wait_for(lambda: takers(cluster) == 0)


def two_workers_learn(cluster, rounds=40):
    rng = np.random.default_rng(0)
    datasets = []
    for _ in range(WORKERS):
        xs = rng.uniform(-1, 1, 32).astype(np.float32)
        datasets.append((xs, (3 * xs - 1 + rng.normal(0, 0.01, 32)).astype(np.float32)))
    graphs = [build(i, data=datasets[i], lr=0.5) for i in range(WORKERS)]
    sessions, coord, threads = start(cluster, graphs)
    first = sessions[0].run(graphs[0][1]["loss"])
    for _ in range(rounds):
        run_together(sessions, graphs)
    step = sessions[0].run(graphs[0][1]["step"])
    final = sessions[0].run(graphs[0][1]["loss"])
    stop(sessions, coord, threads)
    # One update per round of 2 gradients, but for round 2 (stale after the start).
    assert step == rounds - 1
    assert final < 0.01 < first


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
@pytest.mark.parametrize("scenario", [two_workers_fixed_gradients, two_workers_learn])
async def test_sync_replicas(scenario, transport):
    async with local_cluster({"ps": 2, "worker": WORKERS}, transport) as cluster:
        await asyncio.wait_for(asyncio.to_thread(scenario, cluster), 30)


def test_misuse_is_reported():
    with tf.Graph().as_default():
        opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 2)
        with pytest.raises(ValueError, match="after apply_gradients"):
            opt.get_chief_queue_runner()
        v = tf.Variable(1.0)
        with pytest.raises(ValueError, match="Global step is required"):
            opt.apply_gradients([(tf.constant(1.0), v)])
        hook = opt.make_session_run_hook(True)     # as TF: made early, checked in begin()
        with pytest.raises(ValueError, match="apply_gradient should be called before using the hook"):
            hook.begin()
        more = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.1), 3,
                                              total_num_replicas=1)
        step = tf.train.get_or_create_global_step()
        more.apply_gradients([(tf.constant(1.0), v)], global_step=step)
        with pytest.raises(ValueError, match="Too few tokens"):
            more.get_init_tokens_op(1)
        with pytest.raises(ValueError, match="already called"):
            more.apply_gradients([(tf.constant(1.0), v)], global_step=step)


def test_mnist_replica_style_supervisor_with_an_int32_global_step():
    """tensorflow/tools/dist_test/python/mnist_replica.py's shape: an int32 global step,
    Supervisor(local_init_op=, ready_for_local_init_op=) and device_filters; the chief
    starts its sync runner with sv.start_queue_runners(sess, [chief_queue_runner])."""
    from zmtf.testing import running_servers

    results = {}

    def worker(task, servers, spec):
        graph = tf.Graph()
        with graph.as_default():
            with tf.device(tf.train.replica_device_setter(
                    worker_device=f"/job:worker/task:{task}", cluster=spec)):
                step = tf.Variable(0, name="global_step", trainable=False)   # int32, as the script
                w = tf.Variable(np.zeros(2, np.float32))
                x = tf.placeholder(tf.float32, [None, 2])
                loss = tf.reduce_mean(tf.square(tf.reduce_sum(x * w, 1) - tf.reduce_sum(x, 1)))
                opt = tf.train.SyncReplicasOptimizer(tf.train.GradientDescentOptimizer(0.2),
                                                     replicas_to_aggregate=2, total_num_replicas=2)
                train = opt.minimize(loss, global_step=step)
            sync_init = opt.get_init_tokens_op()   # before the Supervisor finalizes the graph
            sv = tf.train.Supervisor(
                is_chief=task == 0, init_op=tf.global_variables_initializer(),
                local_init_op=opt.chief_init_op if task == 0 else opt.local_step_init_op,
                ready_for_local_init_op=opt.ready_for_local_init_op, global_step=step)
            config = tf.ConfigProto(device_filters=["/job:ps", f"/job:worker/task:{task}"])
            sess = sv.prepare_or_wait_for_session(servers[("worker", task)].target, config=config)
            if task == 0:
                sess.run(sync_init)
                sv.start_queue_runners(sess, [opt.get_chief_queue_runner()])
            rng = np.random.default_rng(task)
            while sess.run(step) < 20:
                sess.run(train, {x: rng.standard_normal((8, 2)).astype(np.float32)})
            results[task] = sess.run([step, w])
            sess.close()

    with running_servers({"ps": 1, "worker": 2}) as servers:
        spec = tf.train.ClusterSpec(servers[("ps", 0)]._core.cluster.as_dict())
        threads = [threading.Thread(target=worker, args=(task, servers, spec)) for task in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert sorted(results) == [0, 1]
    assert all(step >= 20 for step, _ in results.values())
    np.testing.assert_allclose(results[0][1], [1.0, 1.0], atol=0.1)   # w -> 1: x.w == sum(x)

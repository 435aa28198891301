"""ElasticAverageOptimizer on an in-process cluster: 2 workers, 1 ps, variables through
replica_device_setter + ElasticAverageCustomGetter, one client thread per worker."""

from __future__ import annotations

import threading

import numpy as np

import zmtf as tf
from zmtf.contrib.opt import ElasticAverageCustomGetter, ElasticAverageOptimizer
from zmtf.testing import running_servers

WORKERS, PERIOD, ALPHA, RHO, LR = 2, 2, 0.25, 0.1, 0.1
GRADS = [np.array([1.0, -1.0], np.float32), np.array([-0.5, 2.0], np.float32)]


def build(task, spec, xs=None, ys=None):
    graph = tf.Graph()
    device = f"/job:worker/task:{task}"
    with graph.as_default():
        getter = ElasticAverageCustomGetter(device)
        with tf.device(tf.train.replica_device_setter(worker_device=device, cluster=spec)):
            with tf.variable_scope("", custom_getter=getter):
                w = tf.get_variable("w", initializer=tf.constant([1.0, 2.0]))
            step = tf.train.get_or_create_global_step()
            opt = ElasticAverageOptimizer(tf.train.GradientDescentOptimizer(LR), WORKERS, getter,
                                          communication_period=PERIOD, moving_rate=ALPHA, rho=RHO)
            if xs is None:
                loss = tf.reduce_sum(w * GRADS[task])
            else:
                loss = tf.reduce_mean(tf.square(w[0] * xs + w[1] - ys))
            train = opt.minimize(loss, global_step=step)
        hook = opt.make_session_run_hook(is_chief=task == 0, task_index=task)
        hook.begin()
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
    return dict(graph=graph, w=w, centre=getter._global_map[w], step=step, train=train,
                loss=loss, hook=hook, init=init if task == 0 else init[1:])


def start(servers, spec, **data):
    workers = [build(i, spec, **{k: v[i] for k, v in data.items()}) for i in range(WORKERS)]
    sessions = [tf.Session(servers[("worker", i)].target, graph=w["graph"])
                for i, w in enumerate(workers)]
    sessions[0].run(workers[0]["init"])      # the chief initializes the ps first
    sessions[1].run(workers[1]["init"])
    in_parallel([lambda s=s, w=w: w["hook"].after_create_session(s, None)   # a barrier
                 for s, w in zip(sessions, workers)])
    return workers, sessions


def _spec(servers):
    return tf.train.ClusterSpec(servers[("ps", 0)]._core.cluster.as_dict())


def in_parallel(jobs):
    errors = []
    threads = [threading.Thread(target=lambda j=j: _catch(j, errors)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(20)
    assert not errors and not any(t.is_alive() for t in threads), errors


def _catch(job, errors):
    try:
        job()
    except Exception as error:  # noqa: BLE001 - reported by in_parallel
        errors.append(error)


def numpy_rounds(rounds):
    """Each round: worker 0 runs one period, then worker 1 does (the test's order)."""
    centre = np.array([1.0, 2.0])
    w = [centre.copy() for _ in range(WORKERS)]
    lc = [centre.copy() for _ in range(WORKERS)]
    step = 0
    for _ in range(rounds):
        for i in range(WORKERS):
            for local_step in range(1, PERIOD + 1):
                w[i] = w[i] - LR * (GRADS[i] + RHO * (w[i] - lc[i]))
                if local_step % PERIOD == 0:
                    lc[i] = centre.copy()
                    d = w[i] - lc[i]
                    w[i], centre, step = w[i] - ALPHA * d, centre + ALPHA * d, step + 1
    return w, centre, step


def test_centre_after_communication_periods_is_exact():
    with running_servers({"ps": 1, "worker": WORKERS}) as servers:
        workers, sessions = start(servers, _spec(servers))
        ps_var = workers[0]["centre"]
        assert ps_var.device == "/job:ps/task:0" and workers[0]["w"].device == "/job:worker/task:0"
        for _ in range(3):
            for sess, ops in zip(sessions, workers):
                for _ in range(PERIOD):
                    sess.run(ops["train"])
        want_w, want_centre, want_step = numpy_rounds(3)
        for i in range(WORKERS):
            np.testing.assert_allclose(sessions[i].run(workers[i]["w"]), want_w[i], rtol=1e-5)
            np.testing.assert_allclose(sessions[i].run(workers[i]["centre"]), want_centre, rtol=1e-5)
        assert sessions[1].run(workers[1]["step"]) == want_step == 6
        for sess in sessions:
            sess.close()


def test_two_workers_learn_a_line():
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1, 1, 16).astype(np.float32) for _ in range(WORKERS)]
    ys = [(3 * x - 1).astype(np.float32) for x in xs]
    with running_servers({"ps": 1, "worker": WORKERS}) as servers:
        workers, sessions = start(servers, _spec(servers), xs=xs, ys=ys)
        first = [s.run(w["loss"]) for s, w in zip(sessions, workers)]
        in_parallel([lambda s=s, w=w: [s.run(w["train"]) for _ in range(60)]
                     for s, w in zip(sessions, workers)])
        centre = sessions[0].run(workers[0]["centre"])
        last = [s.run(w["loss"]) for s, w in zip(sessions, workers)]
        for sess in sessions:
            sess.close()
    assert max(last) < 0.1 * min(first)
    np.testing.assert_allclose(centre, [3.0, -1.0], atol=0.5)

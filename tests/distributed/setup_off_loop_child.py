"""Child of test_setup_off_loop: a ps and a worker ``tf.train.Server`` in this process, with
the small liveness bound the test set (ZMTF_LIVENESS_TIMEOUT, read at the first server's
start), and a chain of N adds big enough that setting it up on the loop stalls the loop
past that bound (CreateSession's parse, the first run's plan, partition, parse and bind).
Prints one JSON line of what it saw."""

import gc
import json
import sys
import threading
import time

import zmtf as tf
from zmtf.framework import errors

N = int(sys.argv[1])
PS, WORKER = "/job:ps/task:0", "/job:worker/task:0"


def chain(variables, n, name):
    x = variables[0]
    for i in range(n):
        x = x + variables[i % len(variables)]
    return tf.identity(x, name=name)


def main():
    # A full collection of this heap holds the GIL for a few hundred ms under load, whoever
    # allocates (zmtf.testing.loop_watch pauses it too): what is tested is the setup's stall.
    gc.disable()
    cluster = tf.train.ClusterSpec({"ps": ["127.0.0.1:0"], "worker": ["127.0.0.1:0"]})
    ps = tf.train.Server(cluster, job_name="ps", task_index=0)
    cluster = tf.train.ClusterSpec({"ps": [ps.target[len("grpc://"):]], "worker": ["127.0.0.1:0"]})
    worker = tf.train.Server(cluster, job_name="worker", task_index=0)
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(PS):
            variables = [tf.Variable(float(i), name=f"v{i}") for i in range(4)]
        with tf.device(WORKER):
            big = chain(variables, N, "big")
            twin = chain(variables, 1000, "twin")    # run by two threads at once, first time
            with tf.device("/job:worker/task:3"):   # no such task: planning fails
                lost = tf.identity(twin, name="lost")
            small = variables[1] + 1.0
        init = tf.global_variables_initializer()
    out = {}
    sess = tf.Session(worker.target, graph=graph)
    start = time.perf_counter()
    sess.run(init)   # CreateSession parses the whole graph
    out["init_s"] = time.perf_counter() - start

    # another session's small steps go on while the big graph's first run is set up
    other = tf.Session(worker.target, graph=graph)
    other.run(small)
    running, latencies, failures = True, [], []

    def small_steps():
        while running:
            began = time.perf_counter()
            try:
                other.run(small)
                other.list_devices()
            except errors.OpError as error:
                failures.append(f"{type(error).__name__}: {error.message}")
            latencies.append(time.perf_counter() - began)
            time.sleep(0.005)

    side = threading.Thread(target=small_steps)
    side.start()
    try:
        start = time.perf_counter()
        out["big"] = float(sess.run(big))
        out["cold_s"] = time.perf_counter() - start
    finally:
        running = False
        side.join()
    beat = worker._core._beat   # LoopBeat: the last stretch it counted the loop as stuck
    out["loop_stuck_s"] = max(beat.resumed_at - beat.stuck_from, 0.0) if beat.resumed_at > 0 else 0.0
    out["small_steps"] = len(latencies)
    out["small_worst_s"] = max(latencies)
    out["small_failures"] = failures[:3]

    # two first runs of one signature at once: set up (planned, registered, bound) once
    values, problems = [], []

    def run_twin():
        try:
            values.append(float(sess.run(twin)))
        except errors.OpError as error:
            problems.append(f"{type(error).__name__}: {error.message}")

    threads = [threading.Thread(target=run_twin) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out["twin"] = values
    out["twin_errors"] = problems
    core = worker._core
    handle = sess._remote._handle
    out["master_setups"] = len(core.master._sessions[handle].setups)
    out["worker_graphs"] = sorted(key for s, key in core.worker._graphs if s == handle)
    out["bound_steps"] = sum(len(r.steps.steps) for (s, _), r in core.worker._graphs.items()
                             if s == handle)

    # an error in a big graph's setup (on a thread now) is the same typed error as before
    try:
        sess.run(lost)
        out["lost"] = "ran"
    except errors.OpError as error:
        out["lost"] = type(error).__name__
        out["lost_message"] = error.message
    out["after_error"] = float(sess.run(small))
    other.close()
    sess.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()

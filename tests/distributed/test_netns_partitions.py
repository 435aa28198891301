"""Real networks, simulated: tasks in Linux network namespaces (netns_cluster), cut off and
healed, rate-limited with tc tbf, and reached over a slow lossy link (delay_proxy).

A partitioned ps fails every step that needs it with UnavailableError naming it within the
liveness bound; when its link comes back the next steps succeed without restarting
anything; training over a 2 ms / 1% loss link and a big fetch over a rate-limited link
complete. Skipped where network namespaces cannot be made (not root, no iproute2)."""

import threading
import time

import numpy as np
import pytest

import zmtf as tf

from liveness_cluster import PS, timed_error
from netns_cluster import LIVENESS, close_networks, netns_cluster, skip_reason

#: a typed error must come within the bound plus this much (scheduling on 2 busy CPUs)
SLACK = 4.0
#: each fault is tried with and without a deadline (operation_timeout_in_ms)
TIMEOUTS_MS = (0, 2000)
#: a healed link must carry a step again within this long
HEAL_BOUND = 10.0
TRANSIENT = (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.DeadlineExceededError)


@pytest.fixture(autouse=True)
def _netns(monkeypatch):
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    monkeypatch.setenv("ZMTF_LIVENESS_TIMEOUT", str(LIVENESS))   # the client's bound too
    tf.reset_default_graph()
    yield
    close_networks()   # a second line of defence: netns_cluster closes its own in finally


def _bounded(run, limit=30.0):
    """``run()``'s value (or its exception), failing the test if it has not ended within
    ``limit`` s (it goes on in a daemon thread: the test does not hang)."""
    outcome = {}

    def call():
        try:
            outcome["value"] = run()
        except BaseException as error:   # handed to the test's thread
            outcome["error"] = error

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(limit)
    assert outcome, f"hung: still running after {limit} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _first_success(run, bound=HEAL_BOUND):
    """(what ``run()`` returned, seconds until it first succeeded), retrying transient errors."""
    start = time.monotonic()
    while True:
        try:
            return _bounded(run), time.monotonic() - start
        except TRANSIENT:
            assert time.monotonic() - start < bound, f"no step succeeded within {bound} s"
            time.sleep(0.02)


def test_partitioned_ps_fails_steps_naming_it_and_heals_without_a_restart():
    with netns_cluster(workers=1) as cluster:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(1.0, name="v")
            set_v = v.assign(5.0)
        with tf.device("/job:worker/task:0"):
            needs_ps = v + 1.0
        ps_address = cluster.spec.task_address("ps", 0)
        sessions = [tf.Session(cluster.target(), config=tf.ConfigProto(operation_timeout_in_ms=ms))
                    for ms in TIMEOUTS_MS]
        try:
            _bounded(lambda: sessions[0].run(v.initializer))
            _bounded(lambda: sessions[0].run(set_v))
            for sess, timeout_ms in zip(sessions, TIMEOUTS_MS):
                assert _bounded(lambda: sess.run(needs_ps)) == 6.0
                cluster.network.cut("ps0")
                try:
                    for _ in range(2):
                        error, seconds = timed_error(lambda: sess.run(needs_ps))
                        assert isinstance(error, tf.errors.UnavailableError), repr(error)
                        assert PS in str(error) and ps_address in str(error), str(error)
                        assert seconds < LIVENESS + SLACK, seconds
                        print(f"partitioned ps (operation_timeout_in_ms={timeout_ms}): "
                              f"{type(error).__name__} in {seconds:.3f} s")
                finally:
                    cluster.network.heal("ps0")
                # the ps ran on: its variable keeps the value set before the cut
                value, seconds = _first_success(lambda: sess.run(needs_ps))
                assert value == 6.0
                print(f"healed link (operation_timeout_in_ms={timeout_ms}): first step "
                      f"{seconds:.3f} s after link up")
            assert all(proc.poll() is None for proc in cluster.procs.values())
        finally:
            for sess in sessions:
                sess.close()


def test_steps_sent_into_a_short_cut_that_fail_their_deadline_are_not_applied_after_it_heals():
    """A cut shorter than the liveness bound keeps the connection: the kernel retransmits the
    RunGraphs it held once the link is back, after their step failed its 150 ms deadline.
    The ps must drop them (they arrive late), not apply them."""
    with netns_cluster(workers=1) as cluster:
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(0, dtype=tf.int64, name="counter")
            increment = counter.assign_add(1)
        deadline = tf.RunOptions(timeout_in_ms=150)
        with tf.Session(cluster.target()) as sess:
            _bounded(lambda: sess.run(counter.initializer))
            ok = failed = 0
            for _ in range(3):
                for _ in range(10):   # the ps's transit baseline: no step is in flight at the cut
                    _bounded(lambda: sess.run(increment, options=deadline))
                    ok += 1
                cluster.network.cut("ps0")
                try:
                    cut_end = time.monotonic() + 0.4
                    while time.monotonic() < cut_end:
                        error, _ = timed_error(lambda: sess.run(increment, options=deadline))
                        assert isinstance(error, TRANSIENT), repr(error)
                        failed += 1
                finally:
                    cluster.network.heal("ps0")
                time.sleep(1.0)   # anything the kernel held has reached the ps, and run or not
                value, _ = _first_success(lambda: sess.run(counter, options=deadline))
                print(f"short cut: {ok} steps succeeded, {failed} failed, counter {value}")
                assert value == ok


def _training_steps_per_second(sess, train_op, steps):
    start = time.monotonic()
    for _ in range(steps):
        sess.run(train_op)
    return steps / (time.monotonic() - start)


def test_training_over_a_slow_lossy_link_makes_progress():
    """worker0 reaches the ps through a 2 ms (each way) / 1% loss proxy, worker1 directly:
    each trains the same tiny model (between-graph), and the global step counts both."""
    steps = 30
    with netns_cluster(workers=2, proxied=("worker0",), delay=0.002, loss=0.01) as cluster:
        with tf.device("/job:ps/task:0"):
            w = tf.Variable(np.zeros((8, 1), np.float32), name="w")
            global_step = tf.train.get_or_create_global_step()
        train_ops = []
        for worker in (0, 1):
            with tf.device(f"/job:worker/task:{worker}"):
                x = tf.constant(np.ones((4, 8), np.float32))
                loss = tf.reduce_mean(tf.square(tf.matmul(x, w) - 1.0))
                train_ops.append(tf.train.GradientDescentOptimizer(0.01).minimize(
                    loss, global_step=global_step))
        init = tf.global_variables_initializer()
        rates = {}
        for worker, label in ((1, "direct"), (0, "2 ms / 1% loss")):
            with tf.Session(cluster.target(worker),
                            config=tf.ConfigProto(operation_timeout_in_ms=10_000)) as sess:
                if worker == 1:
                    _bounded(lambda: sess.run(init))
                _bounded(lambda: sess.run(train_ops[worker]))   # registers the graph
                rates[label] = _bounded(
                    lambda: _training_steps_per_second(sess, train_ops[worker], steps))
                final_step = _bounded(lambda: sess.run(global_step))
        print(f"training steps/s: direct {rates['direct']:.1f}, over 2 ms / 1% loss "
              f"{rates['2 ms / 1% loss']:.1f} ({cluster.proxy.held_back} chunks held back 200 ms)")
        assert final_step == 2 * (steps + 1)


def test_big_fetch_over_a_rate_limited_link_completes():
    """8 MB from the ps over a 64 Mbit/s tbf link (about 1 s), to the client through worker0."""
    values = np.arange(2 << 20, dtype=np.float32)
    with netns_cluster(workers=1) as cluster:
        with tf.device("/job:ps/task:0"):
            big = tf.Variable(tf.zeros([values.size]), name="big")
            load = big.assign(tf.placeholder_with_default(values, [values.size]))
        with tf.device("/job:worker/task:0"):
            fetched = tf.identity(big) * 1.0
        config = tf.ConfigProto(operation_timeout_in_ms=30_000)
        with tf.Session(cluster.target(), config=config) as sess:
            _bounded(lambda: sess.run(big.initializer))
            _bounded(lambda: sess.run(load.op))
            cluster.network.limit_rate("ps0", "64mbit")
            start = time.monotonic()
            result = _bounded(lambda: sess.run(fetched))
            seconds = time.monotonic() - start
        print(f"8 MB over a 64 Mbit/s tbf link: {seconds:.2f} s")
        np.testing.assert_array_equal(result, values)

"""Liveness: a dead or paused task fails every step that needs it with UnavailableError naming
that task and its address, within the liveness bound, with or without a deadline; a paused
task that continues is used again without restarting anything."""

import os
import signal
import time

import zmtf as tf

from liveness_cluster import LIVENESS, PS, WORKER1, fault_cluster, pause, target, timed_error

#: a typed error must come within the bound plus this much (scheduling on 2 busy CPUs)
SLACK = 4.0
#: each fault is tried with and without a deadline (operation_timeout_in_ms)
TIMEOUTS_MS = (0, 2000)


def _graph():
    """(variable on the ps, a step that needs the ps, a step that needs worker 1)."""
    tf.reset_default_graph()
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(1.0, name="v")
    with tf.device("/job:worker/task:1"):
        x = tf.constant(2.0) * 3.0
    with tf.device("/job:worker/task:0"):
        needs_ps, needs_worker1 = v + 1.0, x + 1.0
    return v, needs_ps, needs_worker1


def _sessions(spec):
    return [tf.Session(target(spec), config=tf.ConfigProto(operation_timeout_in_ms=ms))
            for ms in TIMEOUTS_MS]


def _assert_fails_naming(sessions, fetch, task, address, fault, tries=2):
    for sess, timeout_ms in zip(sessions, TIMEOUTS_MS):
        for _ in range(tries):
            error, seconds = timed_error(lambda: sess.run(fetch))
            assert isinstance(error, tf.errors.UnavailableError), repr(error)
            assert task in str(error) and address in str(error), str(error)
            assert seconds < LIVENESS + SLACK, seconds
            print(f"{fault} (operation_timeout_in_ms={timeout_ms}): "
                  f"{type(error).__name__} in {seconds:.3f} s")


def test_killed_worker_then_killed_ps_fail_the_steps_that_need_them_naming_them():
    with fault_cluster() as (spec, procs):
        v, needs_ps, needs_worker1 = _graph()
        sessions = _sessions(spec)
        try:
            sessions[0].run(v.initializer)
            for sess in sessions:
                assert sess.run([needs_ps, needs_worker1]) == [2.0, 7.0]
            procs["worker1"].kill()
            procs["worker1"].wait()
            _assert_fails_naming(sessions, needs_worker1, WORKER1, spec.task_address("worker", 1),
                                 "kill -9 worker")
            for sess in sessions:   # a step that does not need the dead task still runs
                assert sess.run(needs_ps) == 2.0
            procs["ps0"].kill()
            procs["ps0"].wait()
            _assert_fails_naming(sessions, needs_ps, PS, spec.task_address("ps", 0), "kill -9 ps")
        finally:
            for sess in sessions:
                sess.close()


def test_paused_ps_fails_steps_naming_it_and_heals_when_continued():
    with fault_cluster() as (spec, procs):
        v, needs_ps, _ = _graph()
        sessions = _sessions(spec)
        try:
            sessions[0].run(v.initializer)
            for sess in sessions:
                assert sess.run(needs_ps) == 2.0
            pause(procs["ps0"])
            try:
                _assert_fails_naming(sessions, needs_ps, PS, spec.task_address("ps", 0),
                                     "SIGSTOP ps")
            finally:
                os.kill(procs["ps0"].pid, signal.SIGCONT)
            deadline = time.monotonic() + 10
            for sess in sessions:
                while True:   # the link heals by itself once the ps runs again
                    try:
                        assert sess.run(needs_ps) == 2.0
                        break
                    except (tf.errors.UnavailableError, tf.errors.AbortedError,
                            tf.errors.DeadlineExceededError):   # work read just after the pause
                        assert time.monotonic() < deadline, "the ps did not come back"
                        time.sleep(0.1)
        finally:
            for sess in sessions:
                sess.close()

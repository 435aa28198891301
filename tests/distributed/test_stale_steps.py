"""A step reported failed is never applied afterwards: work queued on a paused ps is dropped
when it resumes (its deadline budget or the liveness bound has passed), not run."""

import os
import signal
import time

import zmtf as tf

from liveness_cluster import LIVENESS, fault_cluster, pause, target


def test_increments_that_failed_on_a_paused_ps_are_not_applied_after_it_continues():
    with fault_cluster() as (spec, procs):
        tf.reset_default_graph()
        with tf.device("/job:ps/task:0"):
            counter = tf.Variable(0, dtype=tf.int64, name="counter")
            increment = counter.assign_add(1)
        with tf.Session(target(spec)) as sess:
            sess.run(counter.initializer)
            ok = failed = 0
            deadline = tf.RunOptions(timeout_in_ms=300)

            def run_for(seconds):
                nonlocal ok, failed
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    try:
                        sess.run(increment, options=deadline)
                        ok += 1
                    except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError,
                            tf.errors.AbortedError):
                        failed += 1
                        time.sleep(0.05)

            run_for(0.5)
            pause(procs["ps0"])
            try:
                run_for(2 * LIVENESS + 0.5)
            finally:
                os.kill(procs["ps0"].pid, signal.SIGCONT)
            run_for(1.5)
            assert failed > 0
            time.sleep(0.5)   # anything queued on the ps would have run by now
            value = None
            give_up = time.monotonic() + 10
            while value is None:
                try:
                    value = sess.run(counter)
                except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError):
                    assert time.monotonic() < give_up
            print(f"stale steps: {ok} succeeded, {failed} failed, counter {value}")
            assert value == ok

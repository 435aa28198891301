"""A task whose event loop is stuck (a handler blocking it) while its process runs: ZeroMQ's
heartbeats, answered by its I/O thread, still pass, so only a ping through the loop shows
it. A step waiting on it fails with UnavailableError naming it within about 1.5 liveness
bounds, with no deadline set, and the work it was sent is not applied once the loop runs
again."""

import json
import os
import subprocess
import sys
import time

import pytest

import zmtf as tf

from liveness_cluster import LIVENESS, PS, timed_error
from server_processes import free_ports, start_server_process, stop_process

# A tf.train.Server whose loop this test can block, honestly, from outside: a line with a
# number on stdin blocks the server's own event loop for that many seconds at most, a line
# "release" ends the block at once (the test has seen what it waited for).
STUCK_SERVER = r"""
import json, sys, threading
import zmtf as tf
server = tf.train.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), job_name=sys.argv[2],
                         task_index=0)
released = threading.Event()
print("listening", flush=True)
for line in sys.stdin:
    if line.strip() == "release":
        released.set()
        print("released", flush=True)
        continue
    released.clear()
    server._loop.loop.call_soon_threadsafe(released.wait, float(line))
    print("blocking", flush=True)
"""


def _stuck_server(spec, job):
    env = dict(os.environ, ZMTF_LIVENESS_TIMEOUT=str(LIVENESS))
    proc = subprocess.Popen([sys.executable, "-c", STUCK_SERVER, json.dumps(spec.as_dict()), job],
                            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout.readline().strip() == "listening"
    return proc


def _block(proc, seconds):
    proc.stdin.write(f"{seconds}\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "blocking"


def _release(proc):
    """End the block now; then wait as long as the loop once stayed blocked past the error
    (a second), so that it runs again and its peers see it do so."""
    proc.stdin.write("release\n")
    proc.stdin.flush()
    assert proc.stdout.readline().strip() == "released"
    time.sleep(1.0)


def _end(proc):
    proc.kill()
    proc.wait(10)
    proc.stdin.close()
    proc.stdout.close()


@pytest.fixture
def stuck_cluster():
    """A ps whose loop the test blocks, and a worker (python -m zmtf.server)."""
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    ps = _stuck_server(spec, "ps")
    worker = None
    try:
        worker = start_server_process(spec, "worker", 0, extra_env={"ZMTF_LIVENESS_TIMEOUT": str(LIVENESS)})
        yield spec, ps
    finally:
        if worker is not None:
            stop_process(worker)
        _end(ps)


def test_a_step_waiting_on_a_stuck_loop_fails_naming_it_and_is_not_applied_later(stuck_cluster):
    spec, ps = stuck_cluster
    tf.reset_default_graph()
    with tf.device("/job:ps/task:0"):
        counter = tf.Variable(0, name="counter")
    with tf.device("/job:worker/task:0"):
        one = tf.constant(1) * 1
    with tf.device("/job:ps/task:0"):
        increment = counter.assign_add(one)
    with tf.Session(f"grpc://{spec.task_address('worker', 0)}") as sess:   # no deadline
        sess.run(counter.initializer)
        assert sess.run(increment) == 1
        block = 7 * LIVENESS   # at most: released once the step failed
        _block(ps, block)
        error, seconds = timed_error(lambda: sess.run(increment), limit=4 * block)
        assert isinstance(error, tf.errors.UnavailableError), error
        assert PS in str(error) and "event loop is stuck" in str(error), error
        assert seconds < 3 * LIVENESS + 3.0, seconds   # L/2 to notice, L for the ping; slack
        print(f"stuck ps: UnavailableError after {seconds:.2f} s (liveness bound {LIVENESS} s)")
        _release(ps)   # the loop runs again
        assert sess.run(increment) == 2   # the failed increment was dropped, not applied
        assert sess.run(counter) == 2


def test_a_client_waiting_on_a_master_whose_loop_is_stuck_fails_naming_it(monkeypatch):
    """The sync Session's own channel pings its master through the master's loop too."""
    monkeypatch.setenv("ZMTF_LIVENESS_TIMEOUT", str(LIVENESS))
    spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{free_ports(1)[0]}"]})
    master = _stuck_server(spec, "worker")
    try:
        tf.reset_default_graph()
        total = tf.constant(2.0) + tf.constant(3.0)
        target = f"grpc://{spec.task_address('worker', 0)}"
        with tf.Session(target) as sess:
            assert sess.run(total) == 5.0
            block = 7 * LIVENESS   # at most: released once the step failed
            _block(master, block)
            error, seconds = timed_error(lambda: sess.run(total), limit=4 * block)
            assert isinstance(error, tf.errors.UnavailableError), error
            assert target in str(error) and "event loop is stuck" in str(error), error
            assert seconds < 3 * LIVENESS + 3.0, seconds   # L/2 to notice, L for the ping; slack
            print(f"stuck master: UnavailableError after {seconds:.2f} s (bound {LIVENESS} s)")
            _release(master)
            assert sess.run(total) == 5.0   # its loop runs again: so does the session
    finally:
        _end(master)

"""Late starts wait, and say so: a step whose ps is not up yet waits for it (logging which
task it waits for and where), within the server's --wait-for-tasks-secs and the client's
own deadline; a task that device_filters leave out is not waited for."""

import json
import subprocess
import sys
import time

import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports as free_ports

from server_processes import stop_process


def _server_command(spec, job, task, *flags, control_timeout=None):
    """``python -m zmtf.server``; with ``control_timeout``, run with peers.CONTROL_TIMEOUT
    (30 s, the bound a late ps once failed a session at) set to it, so that waiting past
    it takes seconds, not half a minute."""
    args = ["--cluster", json.dumps(spec.as_dict()), "--job", job, "--task", str(task), *flags]
    if control_timeout is None:
        return [sys.executable, "-m", "zmtf.server", *args]
    return [sys.executable, "-c", _SHORT_CONTROL_TIMEOUT, str(control_timeout), *args]


_SHORT_CONTROL_TIMEOUT = (
    "import runpy, sys; from zmtf.distributed import peers; "
    "peers.CONTROL_TIMEOUT = float(sys.argv.pop(1)); "
    "runpy.run_module('zmtf.server', run_name='__main__', alter_sys=True)")


def _start(command, log_path):
    with open(log_path, "w") as log:
        proc = subprocess.Popen(command, stderr=log, stdout=subprocess.DEVNULL)
    proc.log_path = log_path
    return proc


def _read(path):
    with open(path) as f:
        return f.read()


def _wait_listening(proc, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline and proc.poll() is None:
        if "listening on" in _read(proc.log_path):
            return
        time.sleep(0.05)
    raise RuntimeError("server did not start:\n" + _read(proc.log_path))


@pytest.fixture
def late_cluster(tmp_path):
    """A worker server process whose ps is not started (the test starts it, or not)."""
    yield from _late_cluster(tmp_path)


@pytest.fixture
def late_cluster_short_control_timeout(tmp_path):
    """``late_cluster`` whose worker's peers.CONTROL_TIMEOUT is SHORT_CONTROL_TIMEOUT s."""
    yield from _late_cluster(tmp_path, control_timeout=SHORT_CONTROL_TIMEOUT)


SHORT_CONTROL_TIMEOUT = 8.0   # the first calls to a just-started ps stay well within it


def _late_cluster(tmp_path, control_timeout=None):
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    worker = _start(_server_command(spec, "worker", 0, "--wait-log-secs", "0.5",
                                    control_timeout=control_timeout),
                    str(tmp_path / "worker.log"))
    procs = [worker]
    try:
        _wait_listening(worker)
        tf.reset_default_graph()
        yield spec, worker, procs
    finally:
        for proc in procs:
            stop_process(proc)


def _ps_step():
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(3.0)
    with tf.device("/job:worker/task:0"):
        y = v * 2.0
    return v, y


def test_a_step_waits_for_a_ps_that_starts_later_and_logs_what_it_waits_for(late_cluster, tmp_path):
    spec, worker, procs = late_cluster
    v, y = _ps_step()
    # the ps starts 5 s from now (the master spends up to 2 s + 2 s asking it for its devices
    # first): the step's first run must wait for it, not fail
    ps_log = str(tmp_path / "ps.log")
    procs.append(_start(["sh", "-c", "sleep 5; exec " + " ".join(
        f"'{a}'" for a in _server_command(spec, "ps", 0))], ps_log))
    config = tf.ConfigProto(operation_timeout_in_ms=90_000)   # bounds the test, never reached
    started = time.monotonic()
    with tf.Session(f"grpc://{spec.task_address('worker', 0)}", config=config) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == 6.0
    assert time.monotonic() - started >= 4.5   # it did wait for the ps
    log = _read(worker.log_path)
    address = f"tcp://{spec.task_address('ps', 0)}"
    assert f"still waiting for response from worker: /job:ps/replica:0/task:0 at {address}" in log


def test_the_client_deadline_still_bounds_a_step_that_waits(late_cluster):
    spec, _, _ = late_cluster
    v, _ = _ps_step()
    config = tf.ConfigProto(operation_timeout_in_ms=1500)
    started = time.monotonic()
    with tf.Session(f"grpc://{spec.task_address('worker', 0)}", config=config) as sess:
        with pytest.raises((tf.errors.UnavailableError, tf.errors.DeadlineExceededError)):
            sess.run(v.initializer)
    assert time.monotonic() - started < 15


def test_a_task_that_device_filters_leave_out_is_not_waited_for(late_cluster):
    spec, worker, _ = late_cluster
    with tf.device("/job:worker/task:0"):
        total = tf.constant(2.0) + tf.constant(3.0)
    config = tf.ConfigProto(device_filters=["/job:worker"], operation_timeout_in_ms=30_000)
    started = time.monotonic()
    with tf.Session(f"grpc://{spec.task_address('worker', 0)}", config=config) as sess:
        assert sess.run(total) == 5.0
    assert time.monotonic() - started < 10
    assert "still waiting" not in _read(worker.log_path)


def test_past_the_servers_limit_the_step_fails_naming_the_task_and_its_address():
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    server = tf.train.Server(spec, job_name="worker", task_index=0, wait_for_tasks_secs=1.0,
                             wait_log_secs=0.3)
    try:
        tf.reset_default_graph()
        v, _ = _ps_step()
        with tf.Session(server.target, config=tf.ConfigProto(operation_timeout_in_ms=30_000)) as sess:
            started = time.monotonic()
            with pytest.raises(tf.errors.UnavailableError) as error:
                sess.run(v.initializer)
            assert time.monotonic() - started < 10
        message = str(error.value)
        assert "/job:ps/replica:0/task:0" in message
        assert f"tcp://127.0.0.1:{ports[0]}" in message
        assert "--wait-for-tasks-secs" in message
    finally:
        server.stop()


def test_a_session_waits_at_creation_for_a_ps_that_starts_past_the_control_timeout(
        late_cluster_short_control_timeout, tmp_path):
    """The issue's case (there 40 s): the worker and its client are up, the ps starts later
    than peers.CONTROL_TIMEOUT (30 s) that once failed such a session; the worker runs with
    it at 8 s and the ps starts 3 s past that. Creating the session waits for it (its graph
    places variables there), saying so every --wait-log-secs, and the step then runs."""
    spec, worker, procs = late_cluster_short_control_timeout
    late = SHORT_CONTROL_TIMEOUT + 3
    v, y = _ps_step()
    procs.append(_start(["sh", "-c", f"sleep {late}; exec " + " ".join(
        f"'{a}'" for a in _server_command(spec, "ps", 0))], str(tmp_path / "ps.log")))
    started = time.monotonic()
    with tf.Session(f"grpc://{spec.task_address('worker', 0)}") as sess:   # no deadline
        sess.run(v.initializer)
        assert sess.run(y) == 6.0
    assert time.monotonic() - started >= late - 1
    address = f"tcp://{spec.task_address('ps', 0)}"
    waiting = f"CreateSession still waiting for response from worker: /job:ps/replica:0/task:0 at {address}"
    assert _read(worker.log_path).count(waiting) >= 3


def test_a_session_whose_graph_names_no_missing_task_does_not_wait(late_cluster):
    """No device_filters: the ps is not up, but nothing of this graph is placed there."""
    spec, worker, _ = late_cluster
    with tf.device("/job:worker/task:0"):
        total = tf.constant(2.0) + tf.constant(3.0)
    started = time.monotonic()
    with tf.Session(f"grpc://{spec.task_address('worker', 0)}",
                    config=tf.ConfigProto(operation_timeout_in_ms=30_000)) as sess:
        assert sess.run(total) == 5.0
    assert time.monotonic() - started < 10
    assert "still waiting" not in _read(worker.log_path)

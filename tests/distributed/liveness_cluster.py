"""A 1 ps + 2 workers cluster of ``python -m zmtf.server`` processes with a small liveness
bound, for the fault tests (kill -9, SIGSTOP) of test_liveness and test_stale_steps."""

import contextlib
import os
import signal
import threading
import time

import zmtf as tf

from server_processes import free_ports, start_server_process, stop_process

#: the liveness bound of the test clusters, seconds (ZMTF_LIVENESS_TIMEOUT)
LIVENESS = 1.0
PS = "/job:ps/replica:0/task:0"
WORKER1 = "/job:worker/replica:0/task:1"


@contextlib.contextmanager
def fault_cluster():
    """Yields (spec, {job/task: process}); every process is stopped (and continued) after."""
    ports = free_ports(3)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"],
                                 "worker": [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"]})
    env = {"ZMTF_LIVENESS_TIMEOUT": str(LIVENESS)}
    procs = {}
    try:
        for job, task in (("ps", 0), ("worker", 1), ("worker", 0)):
            procs[f"{job}{task}"] = start_server_process(spec, job, task, extra_env=env)
        yield spec, procs
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
            stop_process(proc)


def pause(proc):
    """SIGSTOP ``proc`` and wait until the kernel shows it stopped (state T): the signal is
    delivered to each of its threads when they next run, which on a busy machine is later."""
    os.kill(proc.pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while _state(proc.pid) != "T":
        assert time.monotonic() < deadline, f"process {proc.pid} did not stop"
        time.sleep(0.005)


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def target(spec):
    return "grpc://" + spec.task_address("worker", 0)


def timed_error(run, limit=30.0):
    """(the error ``run()`` raised, seconds it took); fails if it returned, or if it did not
    end within ``limit`` s (it goes on in a daemon thread: the test does not hang)."""
    outcome = {}

    def call():
        start = time.monotonic()
        try:
            run()
        except tf.errors.OpError as error:
            outcome["error"] = error
        outcome["seconds"] = time.monotonic() - start

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(limit)
    assert "seconds" in outcome, f"the step hung (still running after {limit} s)"
    assert "error" in outcome, "the step succeeded"
    return outcome["error"], outcome["seconds"]

"""Cluster fixtures: real servers on tcp://127.0.0.1 free ports, in this process or in subprocesses."""

import os
import signal
import subprocess
import sys
import time

import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports as free_ports




@pytest.fixture
def cluster():
    """2 ps + 2 workers, each a tf.train.Server in this process."""
    ports = free_ports(4)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{p}" for p in ports[:2]],
                                 "worker": [f"127.0.0.1:{p}" for p in ports[2:]]})
    servers = {(job, i): tf.train.Server(spec, job_name=job, task_index=i)
               for job in ("ps", "worker") for i in range(2)}
    tf.reset_default_graph()
    yield spec, servers
    for server in servers.values():
        server.stop()


def start_server_process(spec, job, task, extra_env=None):
    """``python -m zmtf.server`` in a subprocess; waits until it logs that it listens."""
    import json

    import tempfile

    env = dict(os.environ, **(extra_env or {}))
    log = tempfile.NamedTemporaryFile("w+", prefix=f"zmtf-{job}{task}-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "zmtf.server", "--cluster", json.dumps(spec.as_dict()),
         "--job", job, "--task", str(task)],
        stderr=log, stdout=subprocess.DEVNULL, env=env)
    proc.log_path = log.name
    log.close()
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        with open(proc.log_path) as f:
            if "listening on" in f.read():
                return proc
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    with open(proc.log_path) as f:
        raise RuntimeError("server process did not start:\n" + f.read())


def stop_process(proc):
    """SIGTERM, then SIGKILL after 10 s; removes the log file."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    if os.path.exists(getattr(proc, "log_path", "")):
        os.unlink(proc.log_path)

"""Servers and a normal client for the quota and log-flood tests (named for its area, so that
other tests/security files' helpers never collide with it)."""

import json
import os
import subprocess
import sys
import tempfile
import time

import zmtf as tf
from zmtf.testing import free_tcp_ports

SERVED_WITHIN = 1.0   # seconds a normal client's step may take while a stranger misbehaves


def in_process_server(**options):
    """A tf.train.Server on a free tcp://127.0.0.1 port with zmtf ``options``; its address."""
    (port,) = free_tcp_ports(1)
    spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{port}"]})
    server = tf.train.Server(spec, job_name="worker", task_index=0, **options)
    return server, f"127.0.0.1:{port}"


def server_process(*flags, env=None):
    """``python -m zmtf.server`` with ``flags``, started; (process, address, log path)."""
    (port,) = free_tcp_ports(1)
    address = f"127.0.0.1:{port}"
    log = tempfile.NamedTemporaryFile("w+", prefix="zmtf-quota-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [sys.executable, "-m", "zmtf.server", "--cluster", json.dumps({"worker": [address]}),
         "--job", "worker", "--task", "0", *flags],
        stderr=log, stdout=subprocess.DEVNULL, env=dict(os.environ, **(env or {})))
    log.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        with open(log.name) as f:
            if "listening on" in f.read():
                return proc, address, log.name
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    with open(log.name) as f:
        raise RuntimeError("server process did not start:\n" + f.read())


def stop_server_process(proc, log_path):
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    os.unlink(log_path)


class NormalClient:
    """A client with its session made up front: ``step()`` runs one small step and returns
    how long it took (the tests bound it by SERVED_WITHIN)."""

    def __init__(self, address):
        self.graph = tf.Graph()
        with self.graph.as_default():
            self.fetch = tf.constant(2.0) + 1.0
        self.session = tf.Session(f"grpc://{address}", graph=self.graph)
        assert self.session.run(self.fetch) == 3.0

    def step(self):
        started = time.monotonic()
        assert self.session.run(self.fetch, options=tf.RunOptions(timeout_in_ms=5000)) == 3.0
        return time.monotonic() - started

    def close(self):
        self.session.close()

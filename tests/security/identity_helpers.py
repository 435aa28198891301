"""Helpers of test_identities: a cluster key directory, CURVE server processes, and raw calls
with a chosen key (a module of its own name: tests/security is shared by several areas)."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import zmq

from zmtf.distributed import key_directory, security
from zmtf.distributed.blocking import BlockingChannel
from zmtf.testing import free_tcp_ports


def make_cluster(root, tasks, clients):
    """A key directory at root/cluster admitting ``tasks`` (job, index) and ``clients``."""
    directory = root / "cluster"
    security.create(directory)
    for job, index in tasks:
        security.add(directory, key_directory.TASK, key_directory.task_name(job, index))
    for name in clients:
        security.add(directory, key_directory.CLIENT, name)
    return directory


def credential_path(directory, role, name):
    return key_directory.private_root(directory) / f"{role}s" / f"{name}.key_secret"


class ServerProcess:
    """``python -m zmtf.server --curve-dir DIR`` for one task; ``restart()`` re-reads DIR."""

    def __init__(self, cluster, job, index, directory, *flags):
        self.argv = [sys.executable, "-m", "zmtf.server", "--cluster", json.dumps(cluster),
                     "--job", job, "--task", str(index), "--curve-dir", str(directory), *flags]
        self.target = "zmtf://" + cluster[job][index]
        self.proc = None
        self.start()

    def start(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("ZMTF_CURVE")}
        self.log = tempfile.NamedTemporaryFile("w+", prefix="zmtf-ident-", suffix=".log")
        self.proc = subprocess.Popen(self.argv, stderr=self.log, stdout=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            self.log.seek(0)
            if "listening on" in self.log.read():
                return
            time.sleep(0.05)
        self.log.seek(0)
        output = self.log.read()
        self.stop()
        raise RuntimeError("server process did not start:\n" + output)

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def restart(self):
        self.stop()
        self.start()


def one_task_cluster(job="worker"):
    (port,) = free_tcp_ports(1)
    return {job: [f"127.0.0.1:{port}"]}


class RawCaller:
    """Requests of any kind to one server, with the key of ``credential_file``."""

    def __init__(self, target, credential_file):
        self.ctx = zmq.Context()
        self.channel = BlockingChannel(self.ctx, target.replace("zmtf://", "tcp://"),
                                       keys=security.read_credential(credential_file))

    def call(self, message, timeout=10.0):
        return self.channel.call(message, timeout)

    def close(self):
        self.channel.close()
        self.ctx.destroy(linger=0)

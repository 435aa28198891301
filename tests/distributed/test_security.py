"""CURVE over real tcp sockets: key holders run steps, everyone else is refused at once.
(Identities, a key per task and client, are tests/security/test_identities.py's.)"""

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest
import zmq

import zmtf as tf
from zmtf.distributed import key_directory, security
from zmtf.distributed.blocking import BlockingChannel
from zmtf.testing import free_tcp_ports
from zmtf.wire import connection_state
from zmtf.wire import messages as m


def new_cluster(path, client="alice"):
    """A key directory admitting tasks ps-0 and worker-0 and one client; that client's
    credential."""
    security.create(path)
    for task in ("ps-0", "worker-0"):
        security.add(path, key_directory.TASK, task)
    return security.add(path, key_directory.CLIENT, client)


class ClusterKeys(NamedTuple):
    directory: Path       # the cluster's key directory (servers' curve_dir)
    path: Path            # its client's credential (ZMTF_CURVE_KEY)
    server_public: bytes  # the key its servers listen with


@pytest.fixture
def keys(tmp_path):
    credential = new_cluster(tmp_path / "cluster")
    return ClusterKeys(tmp_path / "cluster", credential.path, credential.server_public)


@pytest.fixture
def worker(keys):
    """A one-task CURVE server over tcp, stopped after the test."""
    (port,) = free_tcp_ports(1)
    server = tf.train.Server({"worker": [f"127.0.0.1:{port}"]}, "worker", 0, curve_dir=str(keys.directory))
    yield server
    server.stop()


def make_graph():
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(3.0, name="a")
        with tf.device("/job:worker/task:0"):
            b = a * 2.0
    return graph, a, b


def test_a_curve_cluster_runs_steps_for_key_holders(keys, monkeypatch):
    ps_port, worker_port = free_tcp_ports(2)
    cluster = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{worker_port}"]}
    servers = [tf.train.Server(cluster, job, 0, curve_dir=str(keys.directory)) for job in ("ps", "worker")]
    try:
        monkeypatch.setenv(security.KEY_ENV, str(keys.path))
        graph, a, b = make_graph()
        with tf.Session(servers[1].target, graph=graph) as sess:   # worker -> ps is CURVE too
            sess.run(a.initializer)
            assert sess.run(b) == 6.0
    finally:
        for server in servers:
            server.stop()


def test_plaintext_and_foreign_key_clients_are_refused_at_once(keys, worker, tmp_path, monkeypatch):
    started = time.monotonic()
    ctx = zmq.Context()
    try:   # plaintext (a Session of this process would use its CURVE server's key)
        channel = BlockingChannel(ctx, worker.target.replace("zmtf://", "tcp://"))
        with pytest.raises(tf.errors.UnauthenticatedError, match="requires CURVE"):
            channel.call(m.Ping(), 10.0)
        channel.close()
    finally:
        ctx.destroy(linger=0)
    with tf.Graph().as_default():
        x = tf.constant(1.0) + 1.0
        other = new_cluster(tmp_path / "other")
        monkeypatch.setenv(security.KEY_ENV, str(other.path))
        with pytest.raises(tf.errors.UnauthenticatedError, match="does not use the same cluster key"):
            tf.Session(worker.target).run(x)
        assert time.monotonic() - started < 8.0    # not a connect timeout
        monkeypatch.setenv(security.KEY_ENV, str(keys.path))
        with tf.Session(worker.target) as sess:   # the server kept serving
            assert sess.run(x) == 2.0


def test_a_session_in_a_curve_servers_process_uses_its_task_key(keys, worker, monkeypatch):
    """TF1's worker script: ``tf.Session(server.target)`` needs no client key of its own."""
    monkeypatch.delenv(security.KEY_ENV, raising=False)
    with tf.Graph().as_default():
        with tf.Session(worker.target) as sess:
            assert sess.run(tf.constant(3.0) * 2.0) == 6.0


def test_a_client_with_only_the_cluster_directory_is_told_to_name_its_key(keys, monkeypatch):
    monkeypatch.delenv(security.KEY_ENV, raising=False)
    monkeypatch.setenv(security.ENV, str(keys.directory))
    with pytest.raises(tf.errors.InvalidArgumentError, match="set ZMTF_CURVE_KEY"):
        security.client_credential()


def test_a_raw_plaintext_socket_gets_nothing_through(worker):
    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.connect(worker.target.replace("zmtf://", "tcp://"))
        sock.send(b"\x81\xa1v\x01")   # anything: it never reaches the server's handler
        assert sock.poll(500) == 0
    finally:
        ctx.destroy(linger=0)


def test_a_client_key_not_in_the_directory_fails_authentication(keys, worker):
    """The server's ZAP handler admits only the directory's public keys."""
    from zmq.utils.monitor import recv_monitor_message

    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.curve_serverkey = keys.server_public               # knows the server ...
        sock.curve_publickey, sock.curve_secretkey = zmq.curve_keypair()   # ... but is a stranger
        monitor = sock.get_monitor_socket(connection_state.HANDSHAKE_EVENTS)
        sock.connect(worker.target.replace("zmtf://", "tcp://"))
        assert monitor.poll(5000), "no handshake outcome"
        event = recv_monitor_message(monitor)["event"]
        assert event == zmq.EVENT_HANDSHAKE_FAILED_AUTH
        assert "not among the server's authorized keys" in connection_state.refusal(event, "w", "tcp://x", True)
        sock.disable_monitor()
        monitor.close(linger=0)
    finally:
        ctx.destroy(linger=0)


def test_keys_cli_and_server_flag(tmp_path):
    directory = tmp_path / "k"
    out = subprocess.run([sys.executable, "-m", "zmtf.keys", "init", str(directory)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and (directory / "server.key").exists(), out.stderr
    again = subprocess.run([sys.executable, "-m", "zmtf.keys", "init", str(directory)],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "already holds a zmtf cluster key" in again.stderr
    (port,) = free_tcp_ports(1)
    bad = subprocess.run([sys.executable, "-m", "zmtf.server", "--cluster",
                          json.dumps({"w": [f"127.0.0.1:{port}"]}), "--job", "w", "--task", "0",
                          "--curve-dir", str(tmp_path / "missing")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "python -m zmtf.keys" in bad.stderr


def test_values_still_cross_intact(keys, worker, monkeypatch):
    monkeypatch.setenv(security.KEY_ENV, str(keys.path))
    data = np.random.default_rng(0).normal(size=(512, 700)).astype(np.float32)  # > 1 MiB: parts
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [None, 700])
        with tf.Session(worker.target) as sess:
            np.testing.assert_array_equal(sess.run(x * 1.0, {x: data}), data)


def test_an_async_session_is_refused_and_then_admitted(keys, worker, monkeypatch, tmp_path):
    import asyncio

    async def run_once():
        with tf.Graph().as_default() as graph:
            x = tf.constant(2.0) * 4.0
        async with tf.AsyncSession(worker.target, graph=graph) as sess:
            return await sess.run(x)

    monkeypatch.setenv(security.KEY_ENV, str(new_cluster(tmp_path / "other").path))
    with pytest.raises(tf.errors.UnauthenticatedError, match="does not use the same cluster key"):
        asyncio.run(run_once())
    monkeypatch.setenv(security.KEY_ENV, str(keys.path))
    assert asyncio.run(run_once()) == 8.0

"""Secure by default off loopback (issue 31, item 1): a server other machines can reach needs
the cluster's CURVE keys or an explicit insecure switch; loopback, inproc:// and ipc:// need
neither. The non-loopback address is this machine's own ethernet address: nothing here
connects to another host."""

import os
import socket
import subprocess

import pytest

import zmtf as tf
from zmtf.distributed import security
from zmtf.wire.connection_state import CURVE_KEY_ENV
from zmtf.distributed.bind_policy import INSECURE_ENV, check_may_listen, is_local_only
from zmtf.distributed.server_options import ServerOptions, with_environment

from bind_helpers import ServerProcess, free_port, server_command, step_seconds
from identity_helpers import credential_path, make_cluster

TASK = "/job:worker/replica:0/task:0"
#: an address other machines could reach (every interface); tests connect through 127.0.0.1,
#: so no packet goes to any address but loopback
REACHABLE = "0.0.0.0"


def listening_addresses(port):
    """The local IPv4 addresses with a socket listening on ``port`` (/proc/net/tcp)."""
    found = set()
    with open("/proc/net/tcp") as table:
        for line in list(table)[1:]:
            local, state = line.split()[1], line.split()[3]
            host, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:   # 0A: LISTEN
                found.add(socket.inet_ntoa(bytes.fromhex(host)[::-1]))
    return found


@pytest.mark.parametrize("address", [
    "localhost:2222", "LOCALHOST:2222", "127.0.0.1:2222", "127.1.2.3:2222", "tcp://127.0.0.1:2222",
    "[::1]:2222", "inproc://ps0", "ipc:///tmp/zmtf-ps0",
])
def test_addresses_only_this_machine_reaches_need_no_keys(address):
    assert is_local_only(address)
    check_may_listen(address, TASK, secured=False, insecure=False)


@pytest.mark.parametrize("address", [
    "0.0.0.0:2222", "10.0.0.5:2222", "192.0.2.2:2222", "[::]:2222", "[fd00::2]:2222",
    "machine-a.example.com:2222", "localhost.example.com:2222", "tcp://worker-1:2222",
])
def test_every_other_address_needs_keys_or_insecure(address, monkeypatch):
    monkeypatch.delenv(INSECURE_ENV, raising=False)
    assert not is_local_only(address)
    with pytest.raises(tf.errors.InvalidArgumentError, match="python -m zmtf.keys init DIR.*add-task DIR JOB INDEX.*--insecure"):
        check_may_listen(address, TASK, secured=False, insecure=False)
    check_may_listen(address, TASK, secured=True, insecure=False)
    check_may_listen(address, TASK, secured=False, insecure=True)


@pytest.mark.parametrize("value,allowed", [
    ("1", True), ("true", True), ("YES", True), ("on", True), ("0", False), ("", False), ("no", False),
])
def test_the_environment_switch(value, allowed):
    assert with_environment(ServerOptions(), {INSECURE_ENV: value}).insecure is allowed
    assert with_environment(ServerOptions(), {}).insecure is False
    assert with_environment(ServerOptions(insecure=True), {INSECURE_ENV: "0"}).insecure is True


def test_the_server_command_refuses_a_reachable_address_without_keys_in_one_line():
    address = f"{REACHABLE}:{free_port()}"
    result = subprocess.run(server_command(address), capture_output=True, text=True, timeout=60,
                            env=_env_without_switches())
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"zmtf.server: refusing to serve {TASK} on {address} in plaintext")
    assert "python -m zmtf.keys init DIR" in lines[0] and "--insecure" in lines[0]


def test_the_server_command_serves_a_reachable_address_when_told_insecure():
    port = free_port()
    server = ServerProcess(server_command(f"{REACHABLE}:{port}", "--insecure"),
                           env=_env_without_switches())
    try:
        assert "in plaintext (insecure)" in server.text()   # a warning, once, at start
        assert step_seconds(f"grpc://127.0.0.1:{port}") < 30
    finally:
        server.stop()


def test_tf_train_server_raises_invalid_argument_and_takes_insecure_or_the_environment(monkeypatch):
    monkeypatch.delenv(INSECURE_ENV, raising=False)
    monkeypatch.delenv(security.ENV, raising=False)
    port = free_port()
    cluster = {"worker": [f"{REACHABLE}:{port}"]}
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"insecure=True"):
        tf.train.Server(cluster, "worker", 0)
    unstarted = tf.train.Server(cluster, "worker", 0, start=False)   # refused when it starts
    with pytest.raises(tf.errors.InvalidArgumentError):
        unstarted.start()
    unstarted.stop()
    for settings, env in (({"insecure": True}, None), ({}, "1")):
        if env is not None:
            monkeypatch.setenv(INSECURE_ENV, env)
        server = tf.train.Server(cluster, "worker", 0, **settings)
        try:
            assert step_seconds(f"grpc://127.0.0.1:{port}") < 30
        finally:
            server.stop()


def test_a_curve_server_needs_no_switch_on_a_reachable_address(tmp_path, monkeypatch):
    monkeypatch.delenv(INSECURE_ENV, raising=False)
    directory = make_cluster(tmp_path, tasks=[("worker", 0)], clients=["alice"])
    port = free_port()
    server = tf.train.Server({"worker": [f"{REACHABLE}:{port}"]}, "worker", 0,
                             curve_dir=str(directory))
    try:
        monkeypatch.setenv(CURVE_KEY_ENV, str(credential_path(directory, "client", "alice")))
        assert step_seconds(f"grpc://127.0.0.1:{port}") < 30
    finally:
        server.stop()


def test_localhost_binds_loopback_only(monkeypatch):
    """A cluster address of localhost is served on 127.0.0.1 and not on the machine's other
    addresses (no keys needed, and none of the network sees it): the kernel's table of
    listening sockets shows 127.0.0.1:PORT only (nothing is sent to a non-loopback address)."""
    monkeypatch.delenv(INSECURE_ENV, raising=False)
    port = free_port()
    server = tf.train.Server({"worker": [f"localhost:{port}"]}, "worker", 0)
    try:
        assert listening_addresses(port) == {"127.0.0.1"}
        assert step_seconds(f"grpc://localhost:{port}") < 30
    finally:
        server.stop()


def _env_without_switches():
    return {k: v for k, v in os.environ.items() if k not in (INSECURE_ENV, security.ENV)}


@pytest.mark.parametrize("settings", [
    {"insecure": "yes"}, {"insecure": 1}, {"max_connections": -1}, {"max_connections": 2.5},
    {"handshake_timeout_secs": -1},
])
def test_the_settings_are_checked(settings):
    from zmtf.distributed.server_options import ServerOptions

    with pytest.raises(ValueError, match="server setting"):
        ServerOptions(**settings)

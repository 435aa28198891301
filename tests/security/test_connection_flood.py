"""Handshake and connection limits (issue 31, item 5) and old ZMTP versions (item 6), played
against a ``python -m zmtf.server`` process with a 1024-descriptor limit, its defaults on:
an idle-connection flood, slow-loris handshakes, and ZMTP 1.0/2.0 peers. Throughout, a
normal client is served within 1 s, the server does not spin, and its log stays short."""

import resource
import socket
import threading
import time

import pytest

from zmtf.distributed.server_options import DEFAULT_HANDSHAKE_SECS, DEFAULT_MAX_CONNECTIONS

from bind_helpers import (
    ZMTP1_GREETING, ZMTP2_GREETING, ZMTP3_GREETING, ServerProcess, free_port, ready_command_start,
    server_command, step_seconds, wait_closed, zmtp1_message, zmtp2_message,
)

DESCRIPTORS = 1024      # the server's limit (prlimit), as on many hosts
FLOOD = 1100            # idle connections: more than the server has descriptors
SERVED_WITHIN = 1.0     # seconds a normal client may take while the attack goes on


@pytest.fixture(scope="module")
def server():
    port = free_port()
    process = ServerProcess(server_command(f"127.0.0.1:{port}", nofile=DESCRIPTORS))
    process.target = f"grpc://127.0.0.1:{port}"
    process.port = port
    try:
        step_seconds(process.target, timeout_ms=60_000)   # compiled and warm before the attacks
        yield process
    finally:
        process.stop()


@pytest.fixture
def descriptors_for_the_flood():
    """This test process opens FLOOD sockets itself: raise its own soft limit if it must."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = FLOOD + 256
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"the flood needs {need} descriptors in the test process (hard limit {hard})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    yield
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def open_idle_connections(port, count, socks):
    """Append ``count`` raw TCP connections that never send a byte to ``socks`` (a connect
    that the kernel does not finish within 0.25 s is left pending, as a flood would)."""
    for _ in range(count):
        sock = socket.socket()
        socks.append(sock)
        sock.settimeout(0.25)
        try:
            sock.connect(("127.0.0.1", port))
        except (socket.timeout, BlockingIOError):
            pass


def test_an_idle_connection_flood_neither_locks_clients_out_nor_spins(server, descriptors_for_the_flood):
    """Fresh clients connect while the flood goes on, after the cap has filled up."""
    socks = []
    flood = threading.Thread(target=open_idle_connections, args=(server.port, FLOOD, socks))
    cpu_before, started = server.cpu_seconds(), time.monotonic()
    flood.start()
    try:
        while len(socks) < DEFAULT_MAX_CONNECTIONS + 100 and flood.is_alive():
            time.sleep(0.01)
        served = [step_seconds(server.target) for _ in range(3)]   # a fresh connection each
        during = len(socks)
        flood.join(60)
        opened = time.monotonic() - started
        time.sleep(0.5)   # let the server take in the rest
        served.append(step_seconds(server.target))
        most_descriptors = server.open_descriptors()
        time.sleep(1.0)
        most_descriptors = max(most_descriptors, server.open_descriptors())
        wall, cpu = time.monotonic() - started, server.cpu_seconds() - cpu_before
    finally:
        flood.join(60)
        for sock in socks:
            sock.close()
    print(f"\n{FLOOD} idle connections opened in {opened:.2f} s; clients that connected after "
          f"{during} of them, and after all, were served in "
          f"{', '.join(f'{s * 1000:.0f}' for s in served)} ms; the server held at most "
          f"{most_descriptors} descriptors and used {cpu:.2f} s of CPU in {wall:.2f} s")
    assert max(served) < SERVED_WITHIN
    assert most_descriptors < DEFAULT_MAX_CONNECTIONS + 100 < DESCRIPTORS
    assert cpu < 0.4 * wall, "the server spun while the flood lasted"
    assert "beyond its cap of 512 open connections (max_connections)" in server.text()


def test_a_slow_loris_handshake_is_dropped_after_the_handshake_timeout(server):
    greeting_only = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    half_ready = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        greeting_only.sendall(ZMTP3_GREETING)
        half_ready.sendall(ZMTP3_GREETING + ready_command_start())   # 22 of its 64 bytes
        assert step_seconds(server.target) < SERVED_WITHIN   # they block nobody
        bound = DEFAULT_HANDSHAKE_SECS + 5.0
        took = wait_closed([greeting_only, half_ready], bound)
    finally:
        greeting_only.close()
        half_ready.close()
    print(f"\nslow-loris connections closed after {took} s (handshake timeout "
          f"{DEFAULT_HANDSHAKE_SECS} s)")
    assert None not in took, "a half-finished handshake was held past the handshake timeout"
    assert min(took) > DEFAULT_HANDSHAKE_SECS / 2   # by that timeout, not by anything sooner


@pytest.mark.parametrize("greeting,message", [
    (ZMTP2_GREETING, zmtp2_message), (ZMTP1_GREETING, zmtp1_message),
], ids=["ZMTP 2.0", "ZMTP 1.0"])
def test_an_old_zmtp_peer_is_refused_at_the_connection_with_no_log_per_message(
        server, greeting, message):
    hostile = 1000
    log_before = server.log_bytes()
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        try:
            sock.sendall(greeting + b"".join(message(b"\x81\xa1v\x01") for _ in range(hostile)))
        except OSError:
            pass   # refused while we were still sending
        (closed_after,) = wait_closed([sock], 5.0)
    finally:
        sock.close()
    assert step_seconds(server.target) < SERVED_WITHIN
    logged = server.log_bytes() - log_before
    print(f"\n{hostile} messages after a {greeting[:12]!r} greeting: closed after "
          f"{closed_after} s, {logged} bytes of server log")
    assert closed_after is not None, "the server kept talking to an old-protocol peer"
    assert logged < 300   # at most a line for the connection, none per message
    assert "Traceback" not in server.text()

"""Helpers of the binding and connection-limit tests: server subprocesses, this machine's own
non-loopback address, raw ZMTP bytes, and a process's CPU time and descriptors from /proc.
(A module of its own, not a conftest: the other areas of tests/security/ have theirs.)"""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time


import zmtf as tf

START_BOUND = 60.0   # seconds for a server process to say it listens (numba loads first)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as probe:
        probe.bind((host, 0))
        return probe.getsockname()[1]


def server_command(address: str, *flags: str, nofile: int | None = None) -> list[str]:
    """``python -m zmtf.server`` for a one-task cluster at ``address`` (under prlimit when
    ``nofile`` is given: that descriptor limit, soft and hard)."""
    command = [sys.executable, "-m", "zmtf.server", "--cluster",
               json.dumps({"worker": [address]}), "--job", "worker", "--task", "0", *flags]
    return (["prlimit", f"--nofile={nofile}:{nofile}", *command] if nofile else command)


class ServerProcess:
    """A server subprocess whose stderr (its log) goes to a file the test can measure."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        """``env``: the whole environment of the process (default: this one's)."""
        self.log = tempfile.NamedTemporaryFile("w+", prefix="zmtf-bind-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(command, stderr=self.log, stdout=subprocess.DEVNULL,
                                     env=os.environ if env is None else env)
        deadline = time.monotonic() + START_BOUND
        while "listening on" not in self.text():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("server process did not start:\n" + self.text())
            time.sleep(0.05)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def text(self) -> str:
        with open(self.log.name) as f:
            return f.read()

    def log_bytes(self) -> int:
        return os.path.getsize(self.log.name)

    def cpu_seconds(self) -> float:
        """User + system CPU time the server process used so far (/proc/PID/stat)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def open_descriptors(self) -> int:
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        os.unlink(self.log.name)


def step_seconds(target: str, timeout_ms: int = 5000) -> float:
    """How long a fresh client (its own connection) takes to run a small step on ``target``."""
    with tf.Graph().as_default():
        x = tf.constant(1.0) + 1.0
        started = time.monotonic()
        config = tf.ConfigProto(operation_timeout_in_ms=timeout_ms)
        with tf.Session(target, config=config) as sess:
            assert sess.run(x) == 2.0
        return time.monotonic() - started


# ---- raw ZMTP bytes (rfc.zeromq.org 13/ZMTP, 15/ZMTP, 23/ZMTP) --------------------------------

#: ZMTP 3.0 greeting, NULL mechanism, as a client
ZMTP3_GREETING = (b"\xff" + b"\x00" * 7 + b"\x01\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00")
                  + b"\x00" + b"\x00" * 31)
#: ZMTP 2.0 greeting of a DEALER with an empty identity
ZMTP2_GREETING = b"\xff" + b"\x00" * 7 + b"\x01\x7f" + b"\x01\x05" + b"\x00\x00"
#: ZMTP 1.0 greeting: an empty identity frame
ZMTP1_GREETING = b"\x01\x00"


def zmtp2_message(body: bytes) -> bytes:
    return b"\x00" + bytes([len(body)]) + body


def zmtp1_message(body: bytes) -> bytes:
    return bytes([len(body) + 1]) + b"\x00" + body


def ready_command_start() -> bytes:
    """The first bytes of a ZMTP 3.0 READY command that says it is 64 bytes long."""
    return b"\x04\x40\x05READY\x0bSocket-Type" + struct.pack(">I", 6)


def wait_closed(socks: list[socket.socket], bound: float) -> list[float | None]:
    """Read until the server closes each of ``socks``: the seconds each took from now, None
    for one still open after ``bound`` seconds."""
    started = time.monotonic()
    took: list[float | None] = [None] * len(socks)
    for sock in socks:
        sock.settimeout(0.05)
    while None in took and time.monotonic() - started < bound:
        for i, sock in enumerate(socks):
            if took[i] is not None:
                continue
            try:
                if sock.recv(65536) != b"":
                    continue
            except socket.timeout:
                continue
            except OSError:   # reset
                pass
            took[i] = time.monotonic() - started
    return took

"""What the multi-process benches share: their subprocesses, the ``@@ `` line protocol, the rounds.

bench/cluster.py, bench/train.py and bench/trees.py run every task in a process of its own
and drive client processes by lines on stdin; their task scripts (bench/_cluster_task.py,
bench/_train_task.py, trees.py's client role) answer. This module imports no zmtf: trees.py's
driver must not (each of its trees' processes imports that tree's zmtf), and the benches are
run as ``python bench/x.py``, so ``bench/`` is on sys.path and ``import _procs`` finds it.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Iterator

# ---- the task side ----------------------------------------------------------------------------


def say(message: object) -> None:
    """One ``@@ `` line for the driver: ``ready``, or a JSON value (other output is skipped)."""
    body = message if isinstance(message, str) else json.dumps(message)
    sys.stdout.write("@@ " + body + "\n")
    sys.stdout.flush()


def commands() -> Iterator[list[str]]:
    """The words of each line the driver sends (``run N``, ``latency N``, ...), until ``quit``
    or the end of stdin (the driver has gone)."""
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            return
        yield words


def stop_on_signals() -> None:
    """SIGTERM/SIGINT end a server task at once: it holds no state worth flushing."""
    def stop(_signum: int, _frame: object) -> None:
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


def serve_tf(cluster: str, job: str, task: int) -> None:
    """A TensorFlow gRPC server for /job:<job>/task:<task> of the JSON cluster spec, until a signal."""
    import tensorflow as tf

    spec = tf.train.ClusterSpec(json.loads(cluster))
    server = tf.distribute.Server(spec, job_name=job, task_index=task, protocol="grpc", start=True)
    stop_on_signals()
    server.join()


# ---- the driver side ----------------------------------------------------------------------------
def exit_on_sigterm() -> None:
    """SIGTERM raises SystemExit in the driver, so its finally clauses stop every process."""
    def interrupted(signum: int, _frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, interrupted)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free ports on 127.0.0.1 (all held until all are chosen); the twin of
    zmtf.testing.free_tcp_ports, which trees.py's driver cannot import."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            socks.append(sock)
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def zmtf_server_argv(cluster: str, job: str, task: int) -> list[str]:
    """``python -m zmtf.server`` for /job:<job>/task:<task> of the JSON cluster spec."""
    return [sys.executable, "-m", "zmtf.server", "--cluster", cluster, "--job", job,
            "--task", str(task), "--log-level", "WARNING"]


def die_with_parent() -> None:
    """Runs in a child before exec: SIGTERM when the driver dies, even by SIGKILL
    (Linux prctl PR_SET_PDEATHSIG), so a killed run leaves no servers behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the finally clauses are the only clean-up


def cpu_seconds(pids: dict[str, int]) -> dict[str, float] | None:
    """CPU time used so far by each process (all its threads, ns-precise schedstat) and by
    this one (key "client"); None where /proc has no schedstat (not Linux)."""
    out = {}
    try:
        for role, pid in pids.items():
            total = 0
            for task in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                        total += int(f.read().split()[0])
                except FileNotFoundError:  # a thread that just ended
                    pass
            out[role] = total / 1e9
    except (OSError, IndexError, ValueError):
        return None  # not Linux: CPU accounting is left out
    out["client"] = time.process_time()
    return out


class LineClient:
    """A client subprocess driven by lines on its stdin; it answers with ``@@ `` lines."""

    def __init__(self, label: str, proc: subprocess.Popen, tail: Callable[[], str]) -> None:
        self.label, self.proc, self._tail = label, proc, tail
        self._buffer = b""

    def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float) -> Any:
        """The next ``@@ `` line (other output is skipped), decoded; raises on exit or timeout.
        select, not readline: a hung client must fail the bench, not stall it."""
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while True:
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                if line.startswith(b"@@ "):
                    body = line[3:].decode()
                    return body if body == "ready" else json.loads(body)
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{self.label}: no answer after {timeout:.0f} s:\n{self._tail()}")
            if select.select([fd], [], [], min(left, 1.0))[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    self.proc.wait(5)
                    raise RuntimeError(f"{self.label} exited with {self.proc.returncode}:\n{self._tail()}")
                self._buffer += chunk

    def wait_ready(self, timeout: float) -> None:
        got = self.receive(timeout)
        if got != "ready":
            raise RuntimeError(f"{self.label}: expected ready, got {got!r}")


class Processes:
    """The subprocesses of one bench phase, their output in temp files; ``stop_all`` ends them.

    ``die_with_parent`` is trees.py's: prctl runs in the child between fork and exec, which
    Python calls unsafe in a parent with threads (cluster.py's and train.py's import zmtf)."""

    def __init__(self, cwd: Path | str, die_with_parent: bool = False) -> None:
        self.cwd = str(cwd)
        self._die_with_parent = die_with_parent
        self.procs: list[tuple[str, subprocess.Popen, Any]] = []
        self.clients: list[LineClient] = []

    def spawn(self, label: str, argv: list[str], env: dict[str, str] | None = None,
              cwd: Path | str | None = None, piped: bool = False) -> subprocess.Popen:
        """A process with stderr (and stdout unless ``piped``) in a temp file; ``piped``: its
        stdin and stdout are pipes, for the line protocol."""
        log = tempfile.TemporaryFile()
        proc = subprocess.Popen(argv, env=env, cwd=str(cwd) if cwd is not None else self.cwd,
                                preexec_fn=die_with_parent if self._die_with_parent else None,
                                stdin=subprocess.PIPE if piped else subprocess.DEVNULL,
                                stdout=subprocess.PIPE if piped else log, stderr=log)
        self.procs.append((label, proc, log))
        return proc

    def client(self, label: str, argv: list[str], env: dict[str, str] | None = None,
               cwd: Path | str | None = None) -> LineClient:
        """A line-protocol client process; ``stop_all`` asks it to quit first."""
        proc = self.spawn(label, argv, env=env, cwd=cwd, piped=True)
        client = LineClient(label, proc, lambda: self.tail(proc))
        self.clients.append(client)
        return client

    def wait_listening(self, proc: subprocess.Popen, label: str, port: int, timeout: float) -> None:
        """Returns once 127.0.0.1:``port`` accepts connections; raises if ``proc`` exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{label} exited with {proc.returncode} before listening:\n{self.tail(proc)}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{label} is not listening on port {port} after {timeout:.0f} s:\n{self.tail(proc)}")

    def tail(self, proc: subprocess.Popen, n: int = 3000) -> str:
        for _, known, log in self.procs:
            if known is proc:
                log.seek(0)
                return log.read().decode(errors="replace")[-n:]
        return ""

    def check_alive(self) -> None:
        for label, proc, _ in self.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{label} died with {proc.returncode}:\n{self.tail(proc)}")

    def quit_clients(self, grace: float = 5.0) -> None:
        """Lets the clients close their sessions (``grace`` s at most); stop_all ends the rest."""
        for client in self.clients:
            if client.proc.poll() is None:
                try:
                    client.send("quit")
                except OSError:
                    pass
        deadline = time.monotonic() + grace
        for client in self.clients:
            try:
                client.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass

    def stop_all(self, quit_clients: bool = True) -> None:
        """Terminates every process (and kills what has not exited 10 s later); first, with
        ``quit_clients``, lets the clients quit (after a failure one may hang in a run: pass
        False to terminate at once)."""
        if quit_clients:
            self.quit_clients()
        for _, proc, _ in self.procs:
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 10
        for _, proc, log in self.procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    try:
                        pipe.close()
                    except OSError:  # a "quit" left in the buffer of a dead client's stdin
                        pass
            log.close()
        self.procs.clear()
        self.clients.clear()


# ---- measuring --------------------------------------------------------------------------------
def timed(fn: Callable[[], Any], count: int) -> list[float]:
    """Seconds taken by each of ``count`` calls of ``fn``."""
    samples = []
    clock = time.perf_counter
    for _ in range(count):
        start = clock()
        fn()
        samples.append(clock() - start)
    return samples


def rotated(items: list, k: int) -> list:
    """``items`` starting at the k-th (mod len): round k's order, so no system always goes first."""
    k %= len(items)
    return items[k:] + items[:k]

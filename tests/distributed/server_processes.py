"""Server subprocesses for cluster tests (a module of its own, not conftest: test files import
it by name, and a second conftest elsewhere in tests/ would shadow ``from conftest import``)."""

import os
import signal
import subprocess
import sys
import time

from zmtf.testing import free_tcp_ports as free_ports


def start_server_process(spec, job, task, extra_env=None, flags=()):
    """``python -m zmtf.server`` in a subprocess; waits until it logs that it listens."""
    proc = launch_server_process(spec, job, task, extra_env, flags=flags)
    wait_listening(proc)
    return proc


def launch_server_process(spec, job, task, extra_env=None, prefix=(), flags=()):
    """``python -m zmtf.server`` in a subprocess (run under ``prefix``, e.g. ``ip netns exec
    NS``), its log in a file; does not wait for it (start several, then ``wait_listening``)."""
    import json

    import tempfile

    env = dict(os.environ, **(extra_env or {}))
    log = tempfile.NamedTemporaryFile("w+", prefix=f"zmtf-{job}{task}-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "zmtf.server", "--cluster", json.dumps(spec.as_dict()),
         "--job", job, "--task", str(task), *flags],
        stderr=log, stdout=subprocess.DEVNULL, env=env)
    proc.log_path = log.name
    log.close()
    return proc


def wait_listening(proc):
    """Wait until ``proc`` logs that it listens; kills it and raises (with its log) if it
    exits or has not within 60 s."""
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        with open(proc.log_path) as f:
            if "listening on" in f.read():
                return
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


__all__ = ["free_ports", "launch_server_process", "start_server_process", "stop_process",
           "wait_listening"]

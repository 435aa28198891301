"""zmtf's command lines: every expected error is one line naming the fix, exit status 2, no
traceback; --help is plain text with every option explained (real processes)."""

import argparse
import json
import os
import socket
import subprocess
import sys

import pytest

from zmtf import devices, keys, server

LOOPBACK = {"worker": ["127.0.0.1:2"]}   # a cluster no case binds (each fails before)
FOREIGN = {"worker": ["192.0.2.1:2222"]}   # TEST-NET-1 (RFC 5737): on no machine


def cli(module, *args, env_drop=(), cwd=None):
    env = {k: v for k, v in os.environ.items() if k not in env_drop}
    return subprocess.Popen([sys.executable, "-m", f"zmtf.{module}", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.fixture
def taken_port():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_expected_errors_are_one_line_with_exit_status_2(tmp_path, taken_port):
    spec = json.dumps(LOOPBACK)
    cases = {   # (module, args, what the line must name)
        "task index": ("server", ["--cluster", spec, "--job", "worker", "--task", "5"], "index 5"),
        "unknown job": ("server", ["--cluster", spec, "--job", "chief", "--task", "0"], "'chief'"),
        "log level": ("server", ["--cluster", spec, "--job", "worker", "--task", "0",
                                 "--log-level", "verbose"], "debug, info, warning, error"),
        "int flag": ("server", ["--cluster", spec, "--job", "worker", "--task", "x"], "--task"),
        "unknown flag": ("server", ["--cluster", spec, "--jobb", "worker"], "--jobb"),
        "no task": ("server", ["--cluster", spec, "--job", "worker"], "--task"),
        "bad json": ("server", ["--cluster", '{"worker":', "--job", "worker", "--task", "0"], "JSON"),
        "no file": ("server", ["--cluster", str(tmp_path / "nope.json"), "--job", "worker",
                               "--task", "0"], "nope.json"),
        "no TF_CONFIG": ("server", [], "TF_CONFIG"),
        "liveness": ("server", ["--cluster", spec, "--job", "worker", "--task", "0",
                                "--liveness-timeout", "-1"], "liveness"),
        "threads": ("server", ["--cluster", spec, "--job", "worker", "--task", "0",
                               "--inter-op-threads", "-1"], "inter_op_parallelism_threads"),
        "foreign address": ("server", ["--cluster", json.dumps(FOREIGN), "--job", "worker",
                                       "--task", "0"], "not on this machine"),
        "port taken": ("server", ["--cluster", json.dumps({"worker": [f"127.0.0.1:{taken_port}"]}),
                                  "--job", "worker", "--task", "0"], "already in use"),
        "keys: no command": ("keys", [], "command"),
        "keys: bad index": ("keys", ["add-task", str(tmp_path / "k"), "worker", "x"], "index"),
        "keys: no directory": ("keys", ["list", str(tmp_path / "k")], "zmtf.keys init"),
        "devices: bad json": ("devices", ["--cluster", "{"], "JSON"),
        "devices: no TF_CONFIG": ("devices", ["--cluster"], "TF_CONFIG"),
        "devices: timeout": ("devices", ["--timeout", "0"], "--timeout"),
        "devices: unknown flag": ("devices", ["--clusters"], "--clusters"),
    }
    running = {name: cli(module, *args, env_drop=("TF_CONFIG",), cwd=tmp_path)
               for name, (module, args, _) in cases.items()}
    for name, process in running.items():
        out, err = process.communicate(timeout=60)
        module, _, named = cases[name]
        lines = err.strip().splitlines()
        assert process.returncode == 2, (name, err)
        assert len(lines) == 1 and lines[0].startswith(f"zmtf.{module}: "), (name, err)
        assert named in lines[0], (name, lines[0])
        assert out == "", (name, out)


def parsers(parser):
    """A parser and its subcommands' parsers."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parsers(sub)


@pytest.mark.parametrize("build", [server.build_parser, devices.build_parser, keys._parser],
                         ids=["server", "devices", "keys"])
def test_help_explains_every_option(build):
    for parser in parsers(build()):
        assert "``" not in parser.format_help()
        for action in parser._actions:
            if not isinstance(action, argparse._SubParsersAction):
                assert action.help, f"{parser.prog} {action.option_strings or action.dest}: no help"


def test_help_answers_without_loading_the_runtime():
    for module in ("server", "devices", "keys"):
        process = cli(module, "--help")
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0 and err == "", (module, err)
        assert f"python -m zmtf.{module}" in out and "``" not in out


def test_devices_says_why_there_is_no_gpu():
    process = cli("devices", env_drop=("ZMTF_CUDASIM_GPUS",))   # the test env has the simulator on
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "device:CPU:0" in out
    assert "no GPU: numba's CUDA simulator is on (NUMBA_ENABLE_CUDASIM=1)" in out
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    real = subprocess.run([sys.executable, "-m", "zmtf.devices"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert real.returncode == 0, real.stderr
    assert "device:GPU:0" in real.stdout or "no GPU: numba.cuda: " in real.stdout, real.stdout


def test_tf_train_server_says_why_it_cannot_listen(taken_port):
    import zmtf as tf
    from zmtf.framework.errors import UnavailableError

    for address, fix in ((f"127.0.0.1:{taken_port}", "the port is already in use"),
                         ("192.0.2.1:2222", "that address is not on this machine")):
        with pytest.raises(UnavailableError, match=fix):
            tf.train.Server(tf.train.ClusterSpec({"worker": [address]}), job_name="worker",
                            task_index=0, insecure=True)

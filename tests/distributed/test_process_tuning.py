"""A tf.train.Server started in a script tunes its process as python -m zmtf.server does
(issue 26, item 4), once per process, unless told not to. The tuning (gc.freeze) cannot be
undone, so each case runs in a fresh process of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from zmtf.distributed.server_options import from_flags
from zmtf.server import parse_args

# Starts servers the TF1 way, the i-th with the keyword arguments of argv's i-th JSON object,
# and prints what the process looks like after each start.
SCRIPT = r"""
import gc, json, sys
import zmtf as tf
from zmtf.distributed import process_tuning
from zmtf.runtime import heap
from zmtf.testing import free_tcp_ports

settings = json.loads(sys.argv[1])
cluster = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{p}" for p in free_tcp_ports(len(settings))]})
seen, servers = [], []
for index, kwargs in enumerate(settings):
    servers.append(tf.train.Server(cluster, job_name="worker", task_index=index, **kwargs))
    record = process_tuning.applied()
    seen.append({"frozen": gc.get_freeze_count(), "threshold": list(gc.get_threshold()),
                 "malloc_kept": heap._kept, "record": None if record is None else id(record)})
for server in servers:
    server.stop()
print("@@", json.dumps(seen))
"""


def run_servers(settings: list[dict], tune_env: str | None) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "ZMTF_TUNE_PROCESS"}   # conftest sets it
    if tune_env is not None:
        env["ZMTF_TUNE_PROCESS"] = tune_env
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(settings)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(text for text in done.stdout.splitlines() if text.startswith("@@ "))
    return json.loads(line[3:])


def test_a_script_started_server_tunes_its_process_once_and_tune_process_false_opts_out():
    untouched, tuned, again = run_servers([{"tune_process": False}, {}, {}], tune_env=None)
    assert untouched["frozen"] == 0 and untouched["record"] is None
    assert untouched["threshold"] != [20_000, 20, 20] and not untouched["malloc_kept"]
    assert tuned["frozen"] > 1000   # import and start-up's objects
    assert tuned["threshold"] == [20_000, 20, 20]
    if sys.platform.startswith("linux"):
        assert tuned["malloc_kept"]   # glibc's trim threshold raised
    assert again["record"] == tuned["record"]   # the second server applied nothing more


def test_zmtf_tune_process_0_leaves_the_process_alone():
    (seen,) = run_servers([{}], tune_env="0")
    assert seen == {"frozen": 0, "threshold": seen["threshold"], "malloc_kept": False, "record": None}
    assert seen["threshold"] != [20_000, 20, 20]


def test_the_cli_flag_turns_it_off():
    base = ["--cluster", '{"ps": ["127.0.0.1:2222"]}', "--job", "ps", "--task", "0"]
    assert from_flags(parse_args(base)).tune_process is True
    assert from_flags(parse_args(base + ["--no-tune-process"])).tune_process is False

"""``python -m zmtf.devices --cluster``: every task's devices, asked of each task; a task that
is down is listed as down (exit status 1), not a traceback; under CURVE with a client key."""

import json
import os
import subprocess
import sys

import zmtf as tf
from zmtf.distributed import key_directory, security
from zmtf.testing import free_tcp_ports

TIMEOUT = "2"   # seconds the down task is given


def devices(*args, env=None):
    env = {k: v for k, v in (env or os.environ).items()}
    return subprocess.Popen([sys.executable, "-m", "zmtf.devices", *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def two_tasks():
    ps, worker = free_tcp_ports(2)
    return {"ps": [f"127.0.0.1:{ps}"], "worker": [f"127.0.0.1:{worker}"]}


def check_listing(process, spec):
    out, err = process.communicate(timeout=60)
    assert process.returncode == 1, (out, err)   # a task is down
    assert err == ""
    lines = out.splitlines()
    assert lines[0] == f"/job:ps/replica:0/task:0  {spec['ps'][0]}  up"
    assert lines[1].startswith("  /job:ps/replica:0/task:0/device:CPU:0  (CPU")
    down = [line for line in lines if line.startswith("/job:worker/replica:0/task:0")]
    assert len(down) == 1 and f"{spec['worker'][0]}  down: cannot reach" in down[0], out
    assert not any("/job:worker" in line and "device:" in line for line in lines), out


def test_lists_each_task_and_reports_the_down_one():
    spec = two_tasks()
    server = tf.train.Server(tf.train.ClusterSpec(spec), job_name="ps", task_index=0)
    try:
        tf_config = json.dumps({"cluster": spec, "task": {"type": "worker", "index": 0}})
        runs = [devices("--cluster", json.dumps(spec), "--timeout", TIMEOUT),
                devices("--cluster", "--timeout", TIMEOUT, env=dict(os.environ, TF_CONFIG=tf_config))]
        for process in runs:
            check_listing(process, spec)
    finally:
        server.stop()


def test_curve_cluster_with_a_client_key(tmp_path):
    spec = two_tasks()
    directory = tmp_path / "cluster"
    security.create(directory)
    security.add(directory, key_directory.TASK, key_directory.task_name("ps", 0))
    client = security.add(directory, key_directory.CLIENT, "operator")
    server = tf.train.Server(tf.train.ClusterSpec(spec), job_name="ps", task_index=0,
                             curve_dir=str(directory))
    try:
        plain = {k: v for k, v in os.environ.items() if not k.startswith("ZMTF_CURVE")}
        with_key = devices("--cluster", json.dumps(spec), "--timeout", TIMEOUT,
                           env=dict(plain, ZMTF_CURVE_KEY=str(client.path)))
        no_key = devices("--cluster", json.dumps(spec), env=dict(plain, ZMTF_CURVE_DIR=str(directory)))
        check_listing(with_key, spec)
        out, err = no_key.communicate(timeout=60)
        assert no_key.returncode == 2 and out == ""
        assert len(err.splitlines()) == 1 and "ZMTF_CURVE_KEY" in err, err
    finally:
        server.stop()

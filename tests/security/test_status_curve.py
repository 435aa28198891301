"""``python -m zmtf.status`` under CURVE: a client key of the cluster gets every task's status
(StatusRequest is in the client allow-list), a stranger's key is refused at the handshake and
reported so (exit status 1), and a client with no key while ZMTF_CURVE_DIR is set is told
what to set (exit status 2)."""

import json
import os
import subprocess
import sys

import pytest

from identity_helpers import ServerProcess, credential_path, make_cluster, one_task_cluster


def status(cluster, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ZMTF_CURVE")}
    done = subprocess.run([sys.executable, "-m", "zmtf.status", "--cluster", json.dumps(cluster),
                           "--json", "--timeout", "2"], capture_output=True, text=True,
                          timeout=60, env={**clean, **env})
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def curve_task(tmp_path_factory):
    root = tmp_path_factory.mktemp("status-curve")
    directory = make_cluster(root, [("worker", 0)], ["alice"])
    cluster = one_task_cluster()
    server = ServerProcess(cluster, "worker", 0, directory)
    try:
        yield cluster, directory, root
    finally:
        server.stop()


def test_a_client_key_gets_the_status(curve_task):
    cluster, directory, _ = curve_task
    code, out, err = status(cluster, ZMTF_CURVE_KEY=str(credential_path(directory, "client", "alice")))
    assert code == 0, out + err
    (row,) = json.loads(out)["tasks"]
    assert row["state"] == "up" and row["devices"] == ["/job:worker/replica:0/task:0/device:CPU:0"]


def test_a_stranger_is_refused(curve_task):
    cluster, _, root = curve_task
    stranger = make_cluster(root / "elsewhere", [], ["mallory"])   # another cluster's client
    code, out, err = status(cluster, ZMTF_CURVE_KEY=str(credential_path(stranger, "client", "mallory")))
    assert code == 1, out + err
    (row,) = json.loads(out)["tasks"]
    assert row["state"] == "refused" and "CURVE" in row["error"] and "devices" not in row


def test_curve_dir_without_a_key_is_a_usage_error(curve_task):
    cluster, directory, _ = curve_task
    code, out, err = status(cluster, ZMTF_CURVE_DIR=str(directory))
    assert code == 2 and "ZMTF_CURVE_KEY" in err and "Traceback" not in err

"""``python -m zmtf.status`` against real ``python -m zmtf.server`` processes: every task's
row while all are up (sessions, rates and bytes that moved with a client's steps), a killed
and a paused task reported down with exit status 1, both within one probe timeout, --watch,
and usage errors exit 2."""

import datetime
import json
import signal
import subprocess
import sys
import time

import pytest

import zmtf as tf
from server_processes import free_ports, launch_server_process, stop_process, wait_listening
from zmtf.distributed.cluster_spec import ClusterSpec
from zmtf.framework.versions import ZMTF_VERSION

TIMEOUT = 2.0   # the status CLI's per-task timeout in these tests


def status(*flags, env=None, limit=60):
    """Run the CLI; (exit status, stdout, stderr, seconds it took)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "zmtf.status", *flags], capture_output=True,
                          text=True, timeout=limit, env=env)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


@pytest.fixture(scope="module")
def cluster():
    spec = ClusterSpec({"worker": [f"127.0.0.1:{p}" for p in free_ports(3)]})
    procs = [launch_server_process(spec, "worker", i) for i in range(3)]
    try:
        for proc in procs:
            wait_listening(proc)
        yield spec, procs
    finally:
        for proc in procs:
            stop_process(proc)


def _seconds(iso):
    return datetime.datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def run_steps(spec, steps):
    """A client session on task 0 whose steps update variables on tasks 1 and 2; left open."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:worker/task:1"):
            a = tf.Variable(tf.zeros([256]), name="a")
        with tf.device("/job:worker/task:2"):
            b = tf.Variable(tf.zeros([256]), name="b")
        with tf.device("/job:worker/task:0"):
            step = tf.group(tf.assign_add(a, tf.ones([256])), tf.assign_add(b, a.read_value()))
        init = tf.group(a.initializer, b.initializer)
    sess = tf.Session("grpc://" + spec.task_address("worker", 0), graph=graph)
    sess.run(init)
    for _ in range(steps):
        sess.run(step)
    return sess


def test_watch_redraws_until_interrupted(cluster, tmp_path):
    spec, _ = cluster
    out = tmp_path / "watch.txt"
    with open(out, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "zmtf.status", "--cluster",
                                 json.dumps(spec.as_dict()), "--json", "--timeout", "1",
                                 "--watch", "0.3"], stdout=sink, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and out.read_text().count("\n") < 2:
                time.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(15)
    reports = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(reports) >= 2
    assert all(r["tasks"][0]["state"] == "up" for r in reports)
    assert proc.returncode in (0, 1)   # the last report's health (task 2 may have been killed)


def test_all_up_then_tasks_down(cluster):
    spec, procs = cluster
    sess = run_steps(spec, 20)
    try:
        code, out, err, _ = status("--cluster", json.dumps(spec.as_dict()), "--json")
        assert code == 0, out + err
        report = json.loads(out)
        assert report["healthy"] is True
        rows = report["tasks"]
        assert [r["address"] for r in rows] == spec.job_tasks("worker")
        for index, row in enumerate(rows):
            task = f"/job:worker/replica:0/task:{index}"
            assert row["task"] == task and row["state"] == "up"
            assert f"{task}/device:CPU:0" in row["devices"]
            assert row["bytes_in"] > 0 and row["bytes_out"] > 0, row
            assert row["rss_bytes"] > 10 << 20 and row["version"] == ZMTF_VERSION
            assert row["uptime_s"] > 0
        assert rows[0]["sessions"] == 1 and rows[0]["steps"] >= 20
        assert rows[0]["steps_per_sec"] > 0
        for row in rows[1:]:   # the partitions of each step ran there
            assert row["sessions"] == 0 and row["graphs"] >= 20 and row["graphs_per_sec"] > 0

        code, table, err, _ = status("--cluster", json.dumps(spec.as_dict()))
        assert code == 0, table + err
        assert "3 task(s), 3 up" in table
        for address in spec.job_tasks("worker"):
            assert address in table

        procs[2].send_signal(signal.SIGKILL)
        procs[2].wait(10)
        procs[1].send_signal(signal.SIGSTOP)   # paused: connects, never answers
        try:
            code, out, err, _ = status("--cluster", json.dumps(spec.as_dict()), "--json",
                                       "--timeout", str(TIMEOUT))
        finally:
            procs[1].send_signal(signal.SIGCONT)
        assert code == 1, out + err
        report = json.loads(out)
        assert [r["state"] for r in report["tasks"]] == ["up", "down", "down"]
        # asked at once: each stalled probe ended about one timeout after the report began
        # (asked one after the other, the second would end two timeouts after)
        began = _seconds(report["checked_at"])
        for row in report["tasks"][1:]:
            assert row["last_up_at"] is None and row["error"]
            assert _seconds(row["first_failed_at"]) - began < 2 * TIMEOUT

        code, table, _, _ = status("--cluster", json.dumps(spec.as_dict()), "--timeout",
                                   str(TIMEOUT))
        assert code == 1
        row = next(line for line in table.splitlines() if "/job:worker/task:2 " in line)
        assert " down " in row and spec.task_address("worker", 2) in row
        assert "2 up, 1 down" in table   # task 1 answers again once resumed
    finally:
        sess.close()


@pytest.mark.parametrize("flags, says", [
    (["--cluster", "{not json"], "not valid JSON"),
    (["--cluster", '{"w": ["127.0.0.1:1"]}', "--timeout", "0"], "seconds > 0"),
    (["--cluster", '{"w": ["127.0.0.1:1"]}', "--watch", "x"], "seconds > 0"),
])
def test_usage_errors_exit_2_in_one_line(flags, says):
    code, out, err, _ = status(*flags)
    assert code == 2 and says in err and "Traceback" not in err

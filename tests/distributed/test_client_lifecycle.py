"""A client's life on a cluster that has bad days: close() after its server died or froze,
Ctrl-C during steps, the server's own default step deadline (issue 23, item 4)."""

import asyncio
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import zmtf as tf
from zmtf.testing import local_cluster
from server_processes import free_ports, start_server_process, stop_process

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLOSE_BOUND = 3.0     # seconds close() may take whatever its server's state (it takes ~1 s)
EXIT_BOUND = 30.0     # seconds a client may take to exit after Ctrl-C (it takes ~1-2 s)


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))


def test_close_returns_within_a_bound_after_its_server_died():
    port, = free_ports(1)
    spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{port}"]})
    proc = start_server_process(spec, "worker", 0)
    try:
        graph = tf.Graph()
        with graph.as_default(), tf.device("/job:worker/task:0"):
            v = tf.Variable(1.0)
        sess = tf.Session(f"grpc://127.0.0.1:{port}", graph=graph)
        sess.run(v.initializer)
        proc.kill()
        proc.wait()
        start = time.monotonic()
        sess.close()
        assert time.monotonic() - start < CLOSE_BOUND
        with pytest.raises(RuntimeError, match="closed Session"):
            sess.run(v)
    finally:
        stop_process(proc)


async def test_close_returns_within_a_bound_after_its_server_froze():
    """A frozen server (paused by the harness, as under SIGSTOP: no process needed) does not
    hold up the sync Session's close(), run on a thread as a sync program would."""
    async with local_cluster({"worker": 1}, "tcp") as cluster:
        graph = tf.Graph()
        with graph.as_default(), tf.device("/job:worker/task:0"):
            v = tf.Variable(1.0)
        sess = tf.Session(cluster.target("worker", 0), graph=graph)
        await asyncio.to_thread(sess.run, v.initializer)
        with cluster.pause("worker:0"):
            start = time.monotonic()
            await asyncio.wait_for(asyncio.to_thread(sess.close), 30)
            assert time.monotonic() - start < CLOSE_BOUND
        with pytest.raises(RuntimeError, match="closed Session"):
            sess.run(v)


def test_the_servers_default_operation_timeout_fails_a_dequeue_that_never_gets_data():
    before = set(threading.enumerate())   # (local sessions' process-wide pools may be there)
    server = tf.train.Server.create_local_server(config=tf.ConfigProto(operation_timeout_in_ms=300))
    try:
        graph = tf.Graph()
        with graph.as_default():
            dequeue = tf.FIFOQueue(2, tf.float32).dequeue()
        with tf.Session(server.target, graph=graph) as sess:   # the client sets no deadline
            start = time.monotonic()
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(dequeue)
            assert time.monotonic() - start < 10.0
    finally:
        server.stop()
    assert [t for t in threading.enumerate() if not t.daemon and t not in before] == []


def test_server_flag_sets_the_default_operation_timeout():
    from zmtf.server import parse_args
    assert parse_args(["--operation-timeout-ms", "2500"]).operation_timeout_ms == 2500
    assert parse_args([]).operation_timeout_ms == 0


BLOCKED_CLIENT = textwrap.dedent("""
    import sys
    import zmtf as tf
    with tf.device("/job:ps/task:0"):
        queue = tf.FIFOQueue(4, tf.float32, shared_name="inbox")
    sess = tf.Session(sys.argv[1])
    try:
        print("dequeuing", flush=True)
        sess.run(queue.dequeue())
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
""")


def test_ctrl_c_cancels_the_step_in_flight_on_the_cluster_and_exits_with_one_line():
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    procs = [start_server_process(spec, "ps", 0), start_server_process(spec, "worker", 0)]
    target = f"grpc://127.0.0.1:{ports[1]}"
    try:
        client = subprocess.Popen([sys.executable, "-c", BLOCKED_CLIENT, target], env=_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert client.stdout.readline().strip() == "dequeuing"
            time.sleep(1.0)   # the dequeue is waiting on the ps
            client.send_signal(signal.SIGINT)
            start = time.monotonic()
            _, err = client.communicate(timeout=EXIT_BOUND)
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
        assert time.monotonic() - start < EXIT_BOUND
        assert client.returncode == 130
        assert err.strip().splitlines() == ["interrupted"], err
        # the cancelled dequeue is gone from the ps: it does not swallow the next element
        graph = tf.Graph()
        with graph.as_default(), tf.device("/job:ps/task:0"):
            queue = tf.FIFOQueue(4, tf.float32, shared_name="inbox")
            enqueue, dequeue = queue.enqueue(7.0), queue.dequeue()
        with tf.Session(target, graph=graph) as sess:
            sess.run(enqueue)
            assert sess.run(dequeue, options=tf.RunOptions(timeout_in_ms=5000)) == 7.0
    finally:
        for proc in procs:
            stop_process(proc)


def _run_example(args, checkpoint_dir, **kwargs):
    return subprocess.Popen([sys.executable, str(ROOT / "examples" / "train_mlp.py"),
                             "--checkpoint-dir", str(checkpoint_dir), *args], env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_ctrl_c_on_train_mlp_saves_a_checkpoint_and_the_next_run_restores_it(tmp_path):
    example = _run_example(["--steps", "1000000", "--log-every", "20"], tmp_path)
    try:
        lines = []
        for line in example.stdout:   # bounded: the example fails or prints within seconds
            lines.append(line)
            if line.startswith("chief: step   21/"):
                break
        assert any("starting fresh" in line for line in lines), lines
        example.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, err = example.communicate(timeout=EXIT_BOUND)
    finally:
        if example.poll() is None:
            example.kill()
            example.wait()
    assert time.monotonic() - start < EXIT_BOUND
    assert example.returncode == 130, err
    assert "Traceback" not in err and "never retrieved" not in err, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("interrupted: saved "), err
    assert tf.train.latest_checkpoint(str(tmp_path)) is not None
    again = _run_example(["--steps", "3", "--log-every", "1000"], tmp_path)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    assert f"chief: restored {tf.train.latest_checkpoint(str(tmp_path))}" in out or "restored" in out, out


def test_stopping_the_server_under_a_blocked_step_fails_it_typed_and_leaves_no_thread():
    before = set(threading.enumerate())
    server = tf.train.Server.create_local_server()
    graph = tf.Graph()
    with graph.as_default():
        dequeue = tf.FIFOQueue(2, tf.float32).dequeue()
    sess = tf.Session(server.target, graph=graph)
    errors = []

    def blocked():
        try:
            sess.run(dequeue)
        except Exception as error:  # noqa: BLE001 - recorded for the assertion
            errors.append(error)

    client = threading.Thread(target=blocked)
    client.start()
    time.sleep(0.5)   # the dequeue waits on the server's inter-op pool
    server.stop()
    client.join(10)
    assert not client.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], tf.errors.UnavailableError), errors
    sess.close()
    assert [t for t in threading.enumerate() if not t.daemon and t not in before] == []

"""The stranger's graphs (issue 31, item 3): a ``python -m zmtf.server`` on tcp://127.0.0.1,
plaintext, reached with ``tf.Session("grpc://...")`` from another process, refuses file ops,
Print and py_func with a PermissionDeniedError naming the node, its op and the setting that
would allow it, runs nothing of the graph, and serves a normal client right after. Its flags
allow them by name, or file ops under a root (symlinks and ``..`` resolved); Session.reset
needs --allow-reset; training with checkpoints through a cluster needs no setting at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest
import zmq

import zmtf as tf
from zmtf.distributed.blocking import BlockingChannel
from zmtf.framework.graph_io import graph_to_dict
from zmtf.testing import free_tcp_ports, running_servers
from zmtf.wire import messages as m

from quota_helpers import stop_server_process

SECRET = "/etc/passwd"


def _start(*flags: str):
    """A one-task cluster in a ``python -m zmtf.server`` subprocess; (target, process, log)."""
    port = free_tcp_ports(1)[0]
    cluster = json.dumps({"worker": [f"127.0.0.1:{port}"]})
    log = tempfile.NamedTemporaryFile("w+", prefix="zmtf-policy-", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "-m", "zmtf.server", "--cluster", cluster, "--job",
                             "worker", "--task", "0", *flags], stderr=log, stdout=log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        with open(log.name) as f:
            if "listening on" in f.read():
                return f"grpc://127.0.0.1:{port}", proc, log.name
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    with open(log.name) as f:
        raise RuntimeError("server did not start:\n" + f.read())


@pytest.fixture(scope="module")
def folder():
    with tempfile.TemporaryDirectory(prefix="zmtf-policy-") as root:
        root = os.path.realpath(root)
        inside = os.path.join(root, "data")
        os.mkdir(inside)
        with open(os.path.join(inside, "lines.txt"), "w") as f:
            f.write("alpha\nbeta\n")
        os.symlink(SECRET, os.path.join(inside, "escape"))
        yield root


@pytest.fixture(scope="module")
def strict():
    """A server with the default policy."""
    target, proc, log = _start()
    yield target, log
    stop_server_process(proc, log)


@pytest.fixture(scope="module")
def trusting(folder):
    """A server that allows Print, PyFunc, file ops under ``folder``/data and Session.reset."""
    target, proc, log = _start("--allow-ops", "Print,PyFunc", "--file-root",
                               os.path.join(folder, "data"), "--allow-reset")
    yield target, log
    stop_server_process(proc, log)


def _run(target: str, build):
    tf.reset_default_graph()
    fetch = build()
    with tf.Session(target) as sess:
        sess.run(tf.tables_initializer())
        return sess.run(fetch)


def _refused(target: str, build) -> str:
    with pytest.raises(tf.errors.PermissionDeniedError) as info:
        _run(target, build)
    return str(info.value)


def _served_within_a_second(target: str) -> None:
    start = time.monotonic()
    assert _run(target, lambda: tf.constant(2.0) * 3.0) == 6.0
    assert time.monotonic() - start < 1.0


# ---- what the stranger tries -----------------------------------------------------------------
def _reader(reader_type, path=SECRET):
    def build():
        queue = tf.FIFOQueue(1, [tf.string])
        enqueue = queue.enqueue([path])
        with tf.control_dependencies([enqueue]):
            return reader_type().read(queue)[1]
    return build


def _dataset(kind):
    def build():
        return kind([SECRET]).make_one_shot_iterator().get_next()
    return build


def _in_while_loop():
    def body(i):
        with tf.control_dependencies([tf.read_file(SECRET)]):
            return i + 1
    return tf.while_loop(lambda i: i < 1, body, [tf.constant(0)])


FORBIDDEN = {   # case -> (graph builder, op type named in the refusal, is a file op)
    "read_file": (lambda: tf.read_file(SECRET), "ReadFile", True),
    "write_file": (lambda: tf.write_file("/tmp/zmtf-policy-was-written", "x"), "WriteFile", True),
    "matching_files": (lambda: tf.matching_files("/etc/*"), "MatchingFiles", True),
    "whole_file_reader": (_reader(tf.WholeFileReader), "WholeFileReaderV2", True),
    "text_line_reader": (_reader(tf.TextLineReader), "TextLineReaderV2", True),
    "tfrecord_reader": (_reader(tf.TFRecordReader), "TFRecordReaderV2", True),
    "text_line_dataset": (_dataset(tf.data.TextLineDataset), "TextLineDataset", True),
    "tfrecord_dataset": (_dataset(tf.data.TFRecordDataset), "TFRecordDataset", True),
    "lookup_table_from_file": (
        lambda: tf.contrib.lookup.index_table_from_file(SECRET).lookup(tf.constant(["root"])),
        "InitializeTableFromTextFileV2", True),
    "read_file_in_dataset_map": (
        lambda: tf.data.Dataset.from_tensors(SECRET).map(tf.read_file)
        .make_one_shot_iterator().get_next(), "ReadFile", True),
    "read_file_in_while_loop": (_in_while_loop, "ReadFile", True),
    "print": (lambda: tf.Print(tf.constant(1), [tf.constant("FORGED-LOG-LINE")]), "Print", False),
    "print_v2": (lambda: tf.print("FORGED-LOG-LINE"), "PrintV2", False),
    "py_func": (lambda: tf.py_func(lambda: np.float32(1), [], tf.float32), "PyFunc", False),
}


@pytest.mark.parametrize("case", sorted(FORBIDDEN))
def test_a_forbidden_op_is_refused_naming_it_and_the_setting(strict, case):
    target, log = strict
    build, op_type, is_file_op = FORBIDDEN[case]
    message = _refused(target, build)
    assert f"({op_type})" in message and "refuses to graphs from the network" in message
    assert f"--allow-ops {op_type}" in message
    assert ("--file-root" in message) == is_file_op
    assert not os.path.exists("/tmp/zmtf-policy-was-written")
    with open(log) as f:
        assert "FORGED-LOG-LINE" not in f.read()
    _served_within_a_second(target)


def test_an_op_allowed_by_name_runs_and_the_others_stay_refused(trusting):
    target, log = trusting
    assert _run(target, lambda: tf.Print(tf.constant(7), [tf.constant("ALLOWED-LINE")])) == 7
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:   # the server's log is another process's file
        with open(log) as f:
            if "ALLOWED-LINE" in f.read():
                break
        time.sleep(0.05)
    else:
        pytest.fail("the allowed Print wrote nothing to the server's log")
    message = _refused(target, lambda: tf.print("x"))
    assert "(PrintV2)" in message and "--allow-ops PrintV2" in message
    with pytest.raises(tf.errors.InvalidArgumentError, match="is not found"):   # allowed, but
        _run(target, lambda: tf.py_func(lambda: np.float32(1), [], tf.float32))  # not its process


def test_allow_ops_all_lets_a_trusted_job_read_files():
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        f.write("trusted")
        f.flush()
        with running_servers({"worker": 1}, allow_ops="all") as servers:
            target = servers[("worker", 0)].target
            assert _run(target, lambda: tf.read_file(f.name)) == b"trusted"


def test_a_partition_sent_straight_to_a_worker_is_refused_too(strict):
    """Without CURVE anyone can speak the task protocol: RegisterGraph is checked like
    CreateSession, and the refused partition is not there to run."""
    target, _ = strict
    graph = tf.Graph()
    with graph.as_default():
        tf.read_file(SECRET, name="leak")
    plain, arrays = graph_to_dict(graph)
    context = zmq.Context()
    channel = BlockingChannel(context, "tcp://" + target.split("://", 1)[1])
    try:
        with pytest.raises(tf.errors.PermissionDeniedError, match=r"node 'leak' \(ReadFile\)"):
            channel.call(m.RegisterGraph(id=0, session="s", graph_key="g", graph=plain,
                                         tensors=list(arrays)), 5.0)
        with pytest.raises(tf.errors.OpError) as info:
            channel.call(m.RunGraph(id=1, session="s", graph_key="g", step_id=1,
                                    fetches=["leak:0"], timeout_ms=5000), 6.0)
        assert not isinstance(info.value, tf.errors.PermissionDeniedError)   # never registered
    finally:
        channel.close()
        context.destroy(linger=0)
    _served_within_a_second(target)


def test_each_task_decides_for_the_partitions_it_receives():
    """A master that allows everything still cannot place a refused op on a ps that does not."""
    ports = free_tcp_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"],
                                 "worker": [f"127.0.0.1:{ports[1]}"]})
    ps = tf.train.Server(spec, job_name="ps", task_index=0)
    worker = tf.train.Server(spec, job_name="worker", task_index=0, allow_ops="all")
    try:
        tf.reset_default_graph()
        with tf.device("/job:ps/task:0"):
            leak = tf.read_file(SECRET)
        with tf.device("/job:worker/task:0"):
            fine = tf.constant(1.0) + 1.0
        with tf.Session(worker.target) as sess:
            assert sess.run(fine) == 2.0
            with pytest.raises(tf.errors.PermissionDeniedError,
                               match=r"/job:ps/replica:0/task:0 refuses"):
                sess.run(leak)
    finally:
        worker.stop()
        ps.stop()


# ---- file_root -------------------------------------------------------------------------------
def _escapes(folder: str) -> dict[str, str]:
    data = os.path.join(folder, "data")
    return {"dotdot": os.path.join(data, "..", "..", "..", "etc", "passwd"),
            "symlink": os.path.join(data, "escape"), "absolute": SECRET}


def test_file_ops_under_the_root_run(trusting, folder):
    target, _ = trusting
    data = os.path.join(folder, "data")
    lines = os.path.join(data, "lines.txt")
    assert _run(target, lambda: tf.read_file(lines)) == b"alpha\nbeta\n"
    written = os.path.join(data, "out", "written.txt")
    _run(target, lambda: tf.write_file(written, "made here"))
    with open(written) as f:
        assert f.read() == "made here"
    assert sorted(_run(target, lambda: tf.matching_files(os.path.join(data, "*.txt")))) == \
        [lines.encode()]
    assert _run(target, _dataset_of(tf.data.TextLineDataset, lines)) == b"alpha"
    table = lambda: tf.contrib.lookup.index_table_from_file(lines).lookup(  # noqa: E731
        tf.constant(["beta"]))
    assert list(_run(target, table)) == [1]


def _dataset_of(kind, path):
    return lambda: kind([path]).make_one_shot_iterator().get_next()


@pytest.mark.parametrize("escape", ["dotdot", "symlink", "absolute"])
def test_file_ops_outside_the_root_are_refused_naming_path_and_root(trusting, folder, escape):
    target, _ = trusting
    path = _escapes(folder)[escape]
    root = os.path.join(folder, "data")
    for build in (lambda: tf.read_file(path), _dataset_of(tf.data.TextLineDataset, path),
                  _reader(tf.WholeFileReader, path),
                  lambda: tf.contrib.lookup.index_table_from_file(path).lookup(tf.constant(["x"]))):
        message = _refused(target, build)
        assert path in message and f"file root {root}" in message and "--file-root" in message
    outside = os.path.join(folder, "written-outside.txt")
    escape_write = os.path.join(root, "..", "written-outside.txt")
    message = _refused(target, lambda: tf.write_file(escape_write, "no"))
    assert "outside this server's file root" in message
    assert not os.path.exists(outside)
    assert "outside" in _refused(target, lambda: tf.matching_files("/etc/*"))
    _served_within_a_second(target)


# ---- Session.reset ---------------------------------------------------------------------------
def _variable_survives_reset(target: str) -> None:
    tf.reset_default_graph()
    v = tf.Variable(5.0, name="kept")
    with tf.Session(target) as sess:
        sess.run(v.initializer)
    with pytest.raises(tf.errors.PermissionDeniedError) as info:
        tf.Session.reset(target)
    assert "--allow-reset" in str(info.value)
    with tf.Session(target) as sess:
        assert sess.run(v) == 5.0


def test_session_reset_is_refused_by_default_and_clears_nothing(strict):
    _variable_survives_reset(strict[0])


def test_session_reset_runs_when_the_server_allows_it(trusting):
    target, _ = trusting
    tf.reset_default_graph()
    v = tf.Variable(5.0, name="wiped")
    with tf.Session(target) as sess:
        sess.run(v.initializer)
    tf.Session.reset(target)
    with tf.Session(target) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError):
            sess.run(v)


# ---- the README's job: training with checkpoints through a cluster ---------------------------
def test_monitored_training_with_checkpoints_through_a_cluster_needs_no_setting():
    """zmtf's Saver reads the variables through sess.run and writes on the client (the chief),
    so the servers' default policy lets it train, save and restore."""
    with tempfile.TemporaryDirectory() as checkpoints, \
            running_servers({"ps": 1, "worker": 1}) as servers:
        target = servers[("worker", 0)].target

        def train(steps: int) -> int:
            tf.reset_default_graph()
            with tf.device("/job:ps/task:0"):
                step = tf.train.get_or_create_global_step()
                w = tf.Variable(1.0)
            with tf.device("/job:worker/task:0"):
                loss = tf.square(w - 3.0)
                train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
            hooks = [tf.train.StopAtStepHook(last_step=steps)]
            with tf.train.MonitoredTrainingSession(target, is_chief=True, hooks=hooks,
                                                   checkpoint_dir=checkpoints) as sess:
                while not sess.should_stop():
                    sess.run(train_op)
            return int(tf.train.latest_checkpoint(checkpoints).rsplit("-", 1)[1])

        assert train(3) == 3
        assert train(5) == 5   # restored at step 3, trained on to 5

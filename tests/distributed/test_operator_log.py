"""The log an operator follows (issue 24, item 1): a session's life on a worker's master, as
``python -m zmtf.server`` writes it to stderr. Each event is one line naming the tasks:
start, session created, a failed step (rate-limited: a failing loop gives a few lines with a
count), a peer lost (kill -9 of the ps) and back (restarted), session closed; a refused CURVE
key is one line with the peer's address however often it retries, and a plaintext client or
another cluster's key (refused inside libzmq, no address known) one line per kind; a loop of
sessions gets SESSION_LINES lines per kind, then one for the rest. ``list_devices`` does not
list a worker that stopped."""

import logging
import os
import re
import signal
import sys
import time

import pytest
import zmq

import zmtf as tf

from server_processes import free_ports, start_server_process, stop_process

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from identity_helpers import RawCaller, ServerProcess, credential_path, make_cluster  # noqa: E402

from zmtf.distributed import key_directory, security  # noqa: E402
from zmtf.distributed.blocking import BlockingChannel  # noqa: E402
from zmtf.distributed.operator_log import SESSION_LINES  # noqa: E402
from zmtf.framework.errors import UnauthenticatedError  # noqa: E402
from zmtf.wire import messages as m  # noqa: E402

PS = "/job:ps/replica:0/task:0"
WORKER0 = "/job:worker/replica:0/task:0"
WORKER1 = "/job:worker/replica:0/task:1"
LOG_SECS = 1.0   # --peer-log-secs: one step-failure line per (task, error class) this often


def _read(path):
    with open(path) as f:
        return f.read()


def _log_holds(log, needles):
    log.seek(0)
    text = log.read()
    return all(needle in text for needle in needles)


def _wait_for(predicate, limit=15.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _lines(text, pattern):
    return [line for line in text.splitlines() if re.search(pattern, line)]


def test_a_sessions_life_is_one_line_per_event_with_task_names():
    ps_port, w0_port, w1_port = free_ports(3)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ps_port}"],
                                 "worker": [f"127.0.0.1:{w0_port}", f"127.0.0.1:{w1_port}"]})
    flags = ("--peer-log-secs", str(LOG_SECS))
    ps = start_server_process(spec, "ps", 0, flags=flags)
    master = start_server_process(spec, "worker", 0, flags=flags)
    worker1 = tf.train.Server(spec, job_name="worker", task_index=1)
    restarted = None
    try:
        graph = tf.Graph()
        with graph.as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(1.0, name="v")
                x = tf.placeholder(tf.float32, [None], name="x")
                bad = tf.reshape(x, [3])   # fed 4 values: InvalidArgumentError on the ps
            with tf.device("/job:worker/task:1"):
                doubled = v * 2.0
            sess = tf.Session(f"grpc://127.0.0.1:{w0_port}", graph=graph)
        sess.run(v.initializer)
        assert sess.run(doubled) == 2.0
        failures = 6
        for _ in range(failures):
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(bad, {x: [1.0, 2.0, 3.0, 4.0]})
        time.sleep(LOG_SECS + 0.2)
        with pytest.raises(tf.errors.InvalidArgumentError):
            sess.run(bad, {x: [1.0, 2.0, 3.0, 4.0]})

        # a worker that stopped is not listed
        names = [d.name for d in sess.list_devices()]
        assert any(n.startswith(WORKER1 + "/") for n in names)
        worker1.stop()
        assert _wait_for(lambda: not any(d.name.startswith(WORKER1 + "/")
                                         for d in sess.list_devices()), 10)
        assert any(d.name.startswith(PS + "/") for d in sess.list_devices())

        # a peer lost (kill -9), then back (restarted on its address)
        ps.send_signal(signal.SIGKILL)
        ps.wait(10)
        assert _wait_for(lambda: f"lost connection to {PS}" in _read(master.log_path))
        assert not any(d.name.startswith(PS + "/") for d in sess.list_devices())
        restarted = start_server_process(spec, "ps", 0, flags=flags)
        assert _wait_for(lambda: f"reconnected to {PS}" in _read(master.log_path))
        sess.close()
        assert _wait_for(lambda: "closed session" in _read(master.log_path)), _read(master.log_path)
    finally:
        worker1.stop()
        log = _read(master.log_path)
        for proc in (ps, master, restarted):
            if proc is not None:
                stop_process(proc)
    assert len(_lines(log, rf"started {WORKER0} listening on tcp://.*devices: {WORKER0}"
                           rf"/device:CPU:0.*plaintext")) == 1, log
    assert len(_lines(log, rf"{WORKER0} op policy: file ops refused.*quotas: graphs up to")) == 1, log
    created = _lines(log, rf"{WORKER0} created session [0-9a-f]{{8}}: graph of \d+ nodes, \d[\d,]* bytes")
    assert len(created) == 1, log
    handle = created[0].split("created session ")[1][:8]
    failed = _lines(log, rf"step \d+ of session {handle} failed on {PS}: InvalidArgumentError: ")
    assert len(failed) == 2, log   # the first, then the next interval's, counting the rest
    assert f"and {failures - 1} more like it from '{PS}'" in failed[1], log
    assert len(_lines(log, rf"lost connection to {PS} at tcp://127.0.0.1:{ps_port}")) == 1, log
    assert len(_lines(log, rf"reconnected to {PS} at tcp://127.0.0.1:{ps_port}")) == 1, log
    assert len(_lines(log, rf"lost connection to {WORKER1} at tcp://")) == 1, log
    assert len(_lines(log, rf"{WORKER0} closed session {handle}: its client closed it")) == 1, log


def _refuse_until_logged(server, credential, needle, limit=20.0):
    """Connect with ``credential`` (None: plaintext) until the server logs ``needle``, at least
    twice (the second attempt must add no line). A plaintext client sees the mechanism mismatch
    in the same instant as the server, and its close may reset the connection before a busy
    server has read its greeting: the server learned nothing then, and logs nothing."""
    deadline = time.monotonic() + limit
    attempts = 0
    while attempts < 2 or (not _log_holds(server.log, [needle]) and time.monotonic() < deadline):
        ctx = zmq.Context()
        keys = security.read_credential(credential) if credential else None
        channel = BlockingChannel(ctx, server.target.replace("zmtf://", "tcp://"), keys=keys)
        try:
            with pytest.raises(UnauthenticatedError):
                channel.call(m.Ping(), 5.0)
        finally:
            channel.close()
            ctx.destroy(linger=0)
        attempts += 1
        if attempts >= 2:
            _wait_for(lambda: _log_holds(server.log, [needle]), 1.0)


def test_a_refused_curve_key_is_one_line_with_the_peers_address(tmp_path, monkeypatch):
    directory = make_cluster(tmp_path, [("ps", 0)], ["bob"])
    (port,) = free_ports(1)
    server = ServerProcess({"ps": [f"127.0.0.1:{port}"]}, "ps", 0, directory)
    try:
        monkeypatch.delenv(security.ENV, raising=False)
        monkeypatch.setenv(security.KEY_ENV, str(credential_path(directory, "client", "bob")))
        with tf.Graph().as_default():
            with tf.Session(server.target) as sess:
                assert sess.run(tf.constant(20.0) + 1.0) == 21.0
        late = security.add(directory, key_directory.CLIENT, "carol")   # not admitted: no restart
        for _ in range(3):   # each connection retries its handshake too: one line for all
            caller = RawCaller(server.target, late.path)
            try:
                with pytest.raises(UnauthenticatedError):
                    caller.call(m.Ping(), timeout=5.0)
            finally:
                caller.close()
        # refused inside libzmq, before ZAP: a plaintext client, another cluster's key
        stranger = make_cluster(tmp_path / "other", [], ["mallory"])
        for credential, needle in ((None, "plaintext client"),
                                   (credential_path(stranger, "client", "mallory"), "another cluster")):
            _refuse_until_logged(server, credential, needle)
        expected = ("another cluster", "plaintext client", "refused a CURVE handshake", "closed session")
        if not _wait_for(lambda: _log_holds(server.log, expected), 20):
            server.log.seek(0)
            text = server.log.read()
            missing = [needle for needle in expected if needle not in text]
            pytest.fail(f"the server did not log {missing} within 20 s; its log:\n{text}")
        time.sleep(0.5)   # a duplicate line, if any, would arrive now
        server.log.seek(0)
        log = server.log.read()
    finally:
        server.stop()
    refused = _lines(log, r"W zmtf.server\] /job:ps/replica:0/task:0 refused a CURVE handshake "
                          r"from '127.0.0.1': key '.{40}' is not in the cluster's key directory")
    assert len(refused) == 1, log
    endpoint = rf"tcp://127.0.0.1:{port}"
    assert len(_lines(log, rf"W zmtf.transport\] {endpoint} refused a connection from a plaintext "
                           r"client \(this server requires CURVE")) == 1, log
    assert len(_lines(log, rf"W zmtf.transport\] {endpoint} refused a connection from a CURVE key "
                           r"made for another cluster's server key")) == 1, log
    assert len(_lines(log, r"/job:ps/replica:0/task:0 created session [0-9a-f]{8} for client key "
                           r"'bob': graph of 3 nodes")) == 1, log
    assert len(_lines(log, r"/job:ps/replica:0/task:0 closed session [0-9a-f]{8}")) == 1, log


def test_a_session_loop_logs_a_bounded_number_of_lines(caplog):
    """Anyone who reaches a master may open sessions in a loop: the first sessions of an
    interval get their lines, then one line per kind stands for the rest."""
    (port,) = free_ports(1)
    server = tf.train.Server({"worker": [f"127.0.0.1:{port}"]}, "worker", 0)
    try:
        with caplog.at_level(logging.INFO, logger="zmtf.server"), tf.Graph().as_default():
            c = tf.constant(1.0) + 1.0
            for _ in range(SESSION_LINES + 12):
                with tf.Session(server.target) as sess:
                    assert sess.run(c) == 2.0
    finally:
        server.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "zmtf.server"]
    created = [line for line in lines if " created session " in line]
    closed = [line for line in lines if " closed session " in line]
    assert len(created) == len(closed) == SESSION_LINES + 1, lines
    assert all(line.startswith(f"{WORKER0} ") for line in created + closed), lines

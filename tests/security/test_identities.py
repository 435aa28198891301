"""A key per task and per client, over real tcp to ``python -m zmtf.server`` processes: a
client key cannot speak task-to-task messages, strangers and plaintext are refused at the
handshake, a client's sessions are bounded, and a key can be rotated without a stranger's
window."""

import time

import numpy as np
import pytest
import zmq

import zmtf as tf
from zmtf import keys as keys_cli
from zmtf.distributed import identities, key_directory, security
from zmtf.framework.graph_io import graph_to_dict
from zmtf.testing import free_tcp_ports
from zmtf.wire import messages as m

from identity_helpers import RawCaller, ServerProcess, credential_path, make_cluster, one_task_cluster

SESSION_LIMIT = 2


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """ps and worker processes under CURVE; clients alice and bob; 2 sessions per client."""
    directory = make_cluster(tmp_path_factory.mktemp("ident"), [("ps", 0), ("worker", 0)],
                             ["alice", "bob"])
    ps_port, worker_port = free_tcp_ports(2)
    spec = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{worker_port}"]}
    servers = {}
    try:
        for job in ("ps", "worker"):
            servers[job] = ServerProcess(spec, job, 0, directory, "--max-sessions-per-client",
                                         str(SESSION_LIMIT))
        yield directory, servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture
def as_client(monkeypatch):
    """``as_client(path)``: this process's sessions use that credential (None: plaintext)."""
    def use(path):
        monkeypatch.delenv(security.ENV, raising=False)
        if path is None:
            monkeypatch.delenv(security.KEY_ENV, raising=False)
        else:
            monkeypatch.setenv(security.KEY_ENV, str(path))
    return use


def partition(value):
    """A one-partition graph for /job:ps/task:0 computing ``value + 1`` as "out:0"."""
    graph = tf.Graph()
    with graph.as_default(), tf.device("/job:ps/task:0"):
        tf.add(tf.constant(value, name="c"), 1.0, name="out")
    return graph_to_dict(graph)


def small_step(target):
    with tf.Graph().as_default():
        x = tf.constant(20.0) + 1.0
        with tf.Session(target) as sess:
            return sess.run(x)


def test_a_client_key_may_not_send_task_messages_and_nothing_runs(cluster):
    directory, servers = cluster
    target = servers["ps"].target
    task = RawCaller(target, credential_path(directory, "task", "worker-0"))
    client = RawCaller(target, credential_path(directory, "client", "alice"))
    try:
        graph, arrays = partition(2.0)
        assert isinstance(task.call(m.RegisterGraph(session="mine", graph_key="g", graph=graph,
                                                    tensors=arrays)), m.Ok)
        evil_graph, evil_arrays = partition(40.0)
        attempts = [
            m.RegisterGraph(session="evil", graph_key="g", graph=evil_graph, tensors=evil_arrays),
            m.RunGraph(session="mine", graph_key="g", step_id=11, fetches=["out:0"]),
            m.DeregisterGraph(session="mine", graph_key=""),
            m.CleanupStep(step_id=12),
            m.PushTensor(step_id=13, keys=["k"], tensors=[np.zeros(4, np.float32)]),
        ]
        for attempt in attempts:
            started = time.monotonic()
            with pytest.raises(tf.errors.PermissionDeniedError,
                               match=f"{type(attempt).__name__} is a task-to-task message and came "
                                     f"from client key 'alice'"):
                client.call(attempt)
            assert time.monotonic() - started < 1.0
        # nothing ran: the client's graph is not there, the task's graph still is
        with pytest.raises(tf.errors.NotFoundError, match="not registered"):
            task.call(m.RunGraph(session="evil", graph_key="g", step_id=14, fetches=["out:0"]))
        result = task.call(m.RunGraph(session="mine", graph_key="g", step_id=15, fetches=["out:0"]))
        assert result.tensors[0] == 3.0
        assert isinstance(client.call(m.Ping()), m.Pong)   # the client protocol is still open
    finally:
        task.close()
        client.close()


def test_a_client_key_runs_steps_across_tasks_that_talk_with_task_keys(cluster, as_client):
    directory, servers = cluster
    as_client(credential_path(directory, "client", "alice"))
    graph = tf.Graph()
    with graph.as_default():
        with tf.device("/job:ps/task:0"):
            a = tf.Variable(3.0, name="a")
        with tf.device("/job:worker/task:0"):
            b = a * 2.0
    with tf.Session(servers["worker"].target, graph=graph) as sess:   # worker -> ps: task key
        sess.run(a.initializer)
        assert sess.run(b) == 6.0


def test_a_client_key_has_a_bounded_number_of_sessions(cluster, as_client):
    directory, servers = cluster
    target = servers["worker"].target
    as_client(credential_path(directory, "client", "alice"))
    with tf.Graph().as_default():
        x = tf.constant(1.0) + 1.0
        held = [tf.Session(target) for _ in range(SESSION_LIMIT)]
        try:
            for sess in held:
                assert sess.run(x) == 2.0
            with pytest.raises(tf.errors.ResourceExhaustedError,
                               match=f"client key 'alice' has {SESSION_LIMIT} sessions open.*"
                                     f"max_sessions_per_client={SESSION_LIMIT}"):
                tf.Session(target).run(x)
            as_client(credential_path(directory, "client", "bob"))   # others are served
            started = time.monotonic()
            assert small_step(target) == 21.0
            assert time.monotonic() - started < 1.0 + 4.0   # (a first step plans: slack)
            as_client(credential_path(directory, "client", "alice"))
            held.pop().close()                               # a closed one frees its slot
            assert small_step(target) == 21.0
        finally:
            for sess in held:
                sess.close()


def test_plaintext_and_unknown_keys_are_refused_at_the_handshake(cluster, as_client, tmp_path):
    directory, servers = cluster
    target = servers["ps"].target
    stranger = make_cluster(tmp_path, [], ["mallory"])   # another cluster's client
    late = security.add(directory, key_directory.CLIENT, "carol")   # not admitted: no restart
    started = time.monotonic()
    as_client(None)
    with pytest.raises(tf.errors.UnauthenticatedError, match="requires CURVE"):
        small_step(target)
    as_client(credential_path(stranger, "client", "mallory"))
    with pytest.raises(tf.errors.UnauthenticatedError, match="does not use the same cluster key"):
        small_step(target)
    as_client(late.path)
    with pytest.raises(tf.errors.UnauthenticatedError, match="not among the server's authorized keys"):
        small_step(target)
    assert time.monotonic() - started < 8.0   # refused, not timed out
    as_client(credential_path(directory, "client", "bob"))
    assert small_step(target) == 21.0          # and the server kept serving


def test_a_raw_plaintext_socket_gets_nothing_through(cluster):
    _, servers = cluster
    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.DEALER)
        sock.linger = 0
        sock.connect(servers["ps"].target.replace("zmtf://", "tcp://"))
        sock.send(b"\x81\xa1v\x01")
        assert sock.poll(500) == 0
    finally:
        ctx.destroy(linger=0)


def test_rotating_a_client_key(tmp_path, as_client):
    """Add the new key, restart, move the client over, remove the old key, restart."""
    directory = make_cluster(tmp_path, [("worker", 0)], ["alice"])
    old = credential_path(directory, "client", "alice")
    server = ServerProcess(one_task_cluster(), "worker", 0, directory)
    try:
        new = security.add(directory, key_directory.CLIENT, "alice", rotate=True).path
        assert new.name == "alice.2.key_secret"
        as_client(new)
        with pytest.raises(tf.errors.UnauthenticatedError, match="not among"):
            small_step(server.target)           # not admitted before the restart
        server.restart()
        for credential in (old, new):           # both admitted meanwhile
            as_client(credential)
            assert small_step(server.target) == 21.0
        (directory / "clients" / "alice.key").unlink()
        server.restart()
        as_client(old)
        with pytest.raises(tf.errors.UnauthenticatedError, match="not among"):
            small_step(server.target)
        as_client(new)
        assert small_step(server.target) == 21.0
    finally:
        server.stop()


def test_keys_cli_makes_a_cluster_directory(tmp_path, capsys):
    directory = str(tmp_path / "c")
    assert keys_cli.main(["init", directory]) == 0
    assert keys_cli.main(["add-task", directory, "worker", "0", "1"]) == 0
    assert keys_cli.main(["add-client", directory, "alice"]) == 0
    assert keys_cli.main(["add-client", directory, "alice"]) == 2
    assert "pass --rotate" in capsys.readouterr().err
    assert keys_cli.main(["list", directory]) == 0
    assert capsys.readouterr().out.split() == ["client:alice", "task:worker-0", "task:worker-1"]
    private = tmp_path / "c.private"
    assert (private / "server.key_secret").stat().st_mode & 0o077 == 0
    assert (private / "tasks" / "worker-1.key_secret").stat().st_mode & 0o077 == 0
    assert not list((tmp_path / "c").rglob("*secret*"))   # the public directory has no secret
    assert keys_cli.main([directory]) == 2                 # the old one-key command
    assert "no longer makes one key shared" in capsys.readouterr().err


def test_servers_refuse_the_old_layout_and_another_tasks_credential(tmp_path):
    old = tmp_path / "old"
    old.mkdir()
    zmq.auth.create_certificates(str(old), "zmtf")
    (port,) = free_tcp_ports(1)
    spec = {"worker": [f"127.0.0.1:{port}"], "ps": [f"127.0.0.1:{port + 1}"]}
    with pytest.raises(tf.errors.InvalidArgumentError, match="old single cluster key"):
        tf.train.Server(spec, "worker", 0, curve_dir=str(old), start=False)
    directory = make_cluster(tmp_path, [("ps", 0)], ["alice"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="no credential for task worker-0"):
        tf.train.Server(spec, "worker", 0, curve_dir=str(directory), start=False)
    for other in (credential_path(directory, "task", "ps-0"),
                  credential_path(directory, "client", "alice")):
        with pytest.raises(tf.errors.InvalidArgumentError, match="not of task worker-0"):
            tf.train.Server(spec, "worker", 0, curve_dir=str(directory), curve_key=str(other),
                            start=False)


def test_senders_and_what_they_may_send():
    assert identities.sender("task:ps-0") == identities.Sender("task", "ps-0")
    assert identities.is_task(identities.sender("task:ps-0"))
    assert not identities.is_task(None)                         # plaintext: no identities
    for odd in (None, "", "task:", "admin:root", "z85garbage"):   # least power
        assert identities.sender(odd).role == "client"
    client = identities.sender("client:alice")
    identities.check_message(m.RunStep, client)
    identities.check_message(m.RunGraph, identities.sender("task:worker-0"))
    with pytest.raises(tf.errors.PermissionDeniedError, match="RunGraph is a task-to-task"):
        identities.check_message(m.RunGraph, client)


def test_the_session_quota_counts_open_and_pending_sessions():
    quota = identities.SessionQuota(2)
    alice, bob = identities.sender("client:alice"), identities.sender("client:bob")
    quota.admit(alice, set(), "t")
    quota.admit(alice, set(), "t")            # two being created count already
    with pytest.raises(tf.errors.ResourceExhaustedError, match="max_sessions_per_client=2"):
        quota.admit(alice, set(), "t")
    quota.admit(bob, set(), "t")
    quota.created(alice, "s1")
    quota.failed(alice)                       # a failed CreateSession frees its slot
    quota.admit(alice, {"s1"}, "t")
    quota.created(alice, "s2")
    with pytest.raises(tf.errors.ResourceExhaustedError):
        quota.admit(alice, {"s1", "s2"}, "t")
    quota.admit(alice, {"s2"}, "t")           # s1 was closed (the master no longer has it)
    unlimited = identities.SessionQuota(0)
    for _ in range(100):
        unlimited.admit(alice, set(), "t")


def test_a_rotated_task_key_is_the_one_its_server_takes(tmp_path):
    directory = make_cluster(tmp_path, [("ps", 0)], [])
    rotated = security.add(directory, key_directory.TASK, "ps-0", rotate=True)
    assert rotated.path.name == "ps-0.2.key_secret" and rotated.name == "ps-0"
    assert sorted(security.read_cluster(directory).admitted.values()) == ["task:ps-0", "task:ps-0"]
    (port,) = free_tcp_ports(1)
    server = tf.train.Server({"ps": [f"127.0.0.1:{port}"]}, "ps", 0, curve_dir=str(directory),
                             start=False)
    try:
        assert server._core.keys == rotated   # the newest generation in DIR.private
    finally:
        server.stop()


def test_a_client_key_may_use_only_the_sessions_it_created(cluster):
    """A session handle that leaks (a log, a screen) does not let another client run, extend,
    cancel or close that session: each attempt is refused and the session keeps working."""
    directory, servers = cluster
    target = servers["worker"].target
    alice = RawCaller(target, credential_path(directory, "client", "alice"))
    bob = RawCaller(target, credential_path(directory, "client", "bob"))
    try:
        graph = tf.Graph()
        with graph.as_default(), tf.device("/job:worker/task:0"):
            tf.add(tf.constant(41.0, name="c"), 1.0, name="out")
        graph_dict, arrays = graph_to_dict(graph)
        handle = alice.call(m.CreateSession(graph=graph_dict, tensors=arrays)).session
        attempts = [m.RunStep(session=handle, fetches=["out:0"]),
                    m.ExtendSession(session=handle, graph=graph_dict, tensors=arrays),
                    m.CancelStep(session=handle, request_id=1),
                    m.CloseSession(session=handle)]
        for attempt in attempts:
            with pytest.raises(tf.errors.PermissionDeniedError,
                               match="client key 'bob' named a session that client key 'alice' "
                                     "created"):
                bob.call(attempt)
        assert alice.call(m.RunStep(session=handle, fetches=["out:0"])).tensors[0] == 42.0
        assert isinstance(alice.call(m.CloseSession(session=handle)), m.Ok)
    finally:
        alice.close()
        bob.close()

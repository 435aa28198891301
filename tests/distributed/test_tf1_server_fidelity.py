"""tf.train.Server, ClusterSpec, Session.reset and containers as TF 1.15's server_lib tests
(server_lib_test, server_lib_multiple_containers_test, server_lib_same_variables_*_test,
server_lib_sparse_job_test) expect them, through ``import zmtf as tf`` on real in-process
servers on tcp://127.0.0.1.

zmtf keeps two deliberate differences: a server refuses Session.reset from clients unless
started with ``allow_reset=True`` (a reset wipes every variable of the cluster), and a server
off loopback needs CURVE keys or ``insecure=True``.
"""

from __future__ import annotations

import gc
import socket
import threading
import time

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework import errors

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")


def _server(job: str = "localhost", **settings) -> tf.train.Server:
    """A one-task server on a free loopback port (port 0) that lets clients reset it."""
    return tf.train.Server({job: ["127.0.0.1:0"]}, allow_reset=True, **settings)


@pytest.fixture
def graph():
    with tf.Graph().as_default() as g:
        yield g


# ---- Session.reset and containers -----------------------------------------------------------


def test_reset_clears_only_the_named_container_and_aborts_the_masters_sessions(graph):
    with tf.container("test0"):
        v0 = tf.Variable(1.0, name="v0")
    with tf.container("test1"):
        v1 = tf.Variable(2.0, name="v0")
    server = _server()
    try:
        sess = tf.Session(server.target)
        sess.run(tf.global_variables_initializer())
        assert sess.run([v0, v1]) == [1.0, 2.0]

        tf.Session.reset(server.target, ["test0"])
        with pytest.raises(errors.AbortedError, match="tf.Session.reset"):
            sess.run(v1)   # the session was closed by the reset, whatever container it reads
        sess.close()

        sess = tf.Session(server.target)
        with pytest.raises(errors.FailedPreconditionError, match="uninitialized value v0"):
            sess.run(v0)
        assert sess.run(v1) == 2.0
        sess.close()
    finally:
        server.stop()


def test_reset_of_no_container_clears_the_default_one_and_an_unknown_name_clears_nothing(graph):
    with tf.container("kept"):
        named = tf.Variable(1.0, name="named")
    plain = tf.Variable(2.0, name="plain")
    server = _server()
    try:
        with tf.Session(server.target) as sess:
            sess.run(tf.global_variables_initializer())
        tf.Session.reset(server.target, ["test1"])   # no such container: nothing is cleared
        with tf.Session(server.target) as sess:
            assert sess.run([named, plain]) == [1.0, 2.0]
        tf.Session.reset(server.target)   # TF: the default container only
        with tf.Session(server.target) as sess:
            assert sess.run(named) == 1.0
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(plain)
    finally:
        server.stop()


def test_the_default_container_is_named_after_the_servers_job(graph):
    """server_lib_same_variables_clear_container_test: two servers, two jobs, two containers."""
    v0 = tf.Variable(1.0, name="v0")
    v1 = tf.Variable(2.0, name="v0")
    server0, server1 = _server("local0"), _server("local1")
    try:
        sess0, sess1 = tf.Session(server0.target), tf.Session(server1.target)
        sess0.run(v0.initializer)
        sess1.run(v1.initializer)
        tf.Session.reset(server0.target, ["local0"])
        with tf.Session(server0.target) as sess:
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(v0)
            sess.run(v0.initializer)
        assert sess1.run(v1) == 2.0   # another server's master: its session stays open
        tf.Session.reset(server1.target, ["local0"])   # not server1's container
        with tf.Session(server1.target) as sess:
            assert sess.run(v1) == 2.0
        sess0.close()
        sess1.close()
    finally:
        server0.stop()
        server1.stop()


def test_reset_of_the_in_process_target_resets_and_closes_its_sessions(graph):
    with tf.container("c0"):
        in_c0 = tf.Variable(1.0, name="in_c0")
    sess = tf.Session()
    sess.run(in_c0.initializer)
    tf.Session.reset("", ["c0"])
    with pytest.raises(RuntimeError, match="closed Session"):
        sess.run(in_c0)


def test_reset_of_a_target_that_is_no_target_is_not_found():
    with pytest.raises(errors.NotFoundError, match="nonexistent"):
        tf.Session.reset("nonexistent", ["test0"])
    with pytest.raises(errors.NotFoundError, match="INVALID_TARGET"):
        tf.Session("INVALID_TARGET")
    with pytest.raises(errors.InvalidArgumentError, match="not understood"):
        tf.Session("grpc://no-port")   # a known scheme, misspelled: what to write instead
    with pytest.raises(TypeError, match="list of container names"):
        tf.Session.reset("grpc://localhost:1", "c0")


def test_isolate_session_state_keeps_each_sessions_variables_its_own(graph):
    init = tf.placeholder(tf.int32)
    v = tf.Variable(init, validate_shape=False, name="v")
    server = _server()
    sharing = tf.ConfigProto(isolate_session_state=False)
    isolated = tf.ConfigProto(isolate_session_state=True)
    try:
        shared0, shared1 = (tf.Session(server.target, config=sharing) for _ in range(2))
        own0, own1 = (tf.Session(server.target, config=isolated) for _ in range(2))
        shared0.run(v.initializer, {init: 86})
        assert shared1.run(v) == 86
        for sess in (own0, own1):
            with pytest.raises(errors.FailedPreconditionError):
                sess.run(v)
        own0.run(v.initializer, {init: 37})
        own1.run(v.initializer, {init: [19, 86]})   # another shape, in another session
        assert own0.run(v) == 37 and shared0.run(v) == 86
        np.testing.assert_array_equal(own1.run(v), [19, 86])
        own0.close()   # its state goes with it
        with tf.Session(server.target, config=isolated) as again:
            with pytest.raises(errors.FailedPreconditionError):
                again.run(v)
        for sess in (shared0, shared1, own1):
            sess.close()
    finally:
        server.stop()


def test_close_cancels_a_blocked_step_with_tfs_wording(graph):
    queue = tf.FIFOQueue(10, [tf.float32])
    dequeue = queue.dequeue()
    server = _server()
    try:
        sess = tf.Session(server.target)
        outcome: list[BaseException] = []

        def blocked() -> None:
            try:
                sess.run(dequeue)
            except BaseException as error:  # noqa: BLE001 - what the test looks at
                outcome.append(error)

        thread = threading.Thread(target=blocked, daemon=True)
        thread.start()
        time.sleep(0.3)
        sess.close()
        thread.join(10)
        assert len(outcome) == 1 and isinstance(outcome[0], errors.CancelledError)
        assert "Session::Close" in str(outcome[0])
    finally:
        server.stop()


# ---- ClusterSpec and Server addresses --------------------------------------------------------


def test_cluster_spec_takes_any_address_and_a_server_names_the_bad_one():
    spec = tf.train.ClusterSpec({"job": ["host:port"]})
    assert spec and spec.job_tasks("job") == ["host:port"]
    with pytest.raises(errors.InvalidArgumentError, match="'host:port'"):
        tf.train.Server(spec, start=False)
    with pytest.raises(errors.InvalidArgumentError, match="port"):
        tf.train.Server({"local": ["localhost"]}, job_name="local", task_index=0)
    with pytest.raises(errors.InvalidArgumentError, match="/job:ps/task:1: .*'ps1'"):
        tf.train.Server({"ps": ["127.0.0.1:0", "ps1"], "worker": ["127.0.0.1:0"]},
                        job_name="worker", task_index=0, start=False)


@pytest.mark.parametrize("cluster", [None, ["a:1"], "ps", 3])
def test_cluster_spec_of_anything_but_a_cluster_is_a_type_error(cluster):
    with pytest.raises(TypeError, match="`cluster` must be a dict"):
        tf.train.ClusterSpec(cluster)


def test_port_zero_picks_a_free_port_and_the_target_reports_it(graph):
    """server_lib_sparse_job_test: a sparse job's task 37 on "localhost:0"."""
    server = tf.train.Server({"local": {37: "localhost:0"}})
    try:
        host, _, port = server.target.rpartition(":")
        assert host == "zmtf://localhost" and 0 < int(port) < 65536
        assert server.server_def.cluster.job[0].tasks[37] == f"localhost:{port}"
        with tf.device("/job:local/task:37"):
            a = tf.constant(1.0)
        with tf.Session(server.target.replace("zmtf://", "grpc://")) as sess:
            assert sess.run(a) == 1.0
    finally:
        server.stop()


def test_server_def_carries_the_default_session_config():
    config = tf.ConfigProto(gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=0.1))
    server = tf.train.Server.create_local_server(config=config, start=False)
    assert server.server_def.default_session_config.gpu_options \
        .per_process_gpu_memory_fraction == 0.1
    cluster_def = tf.train.ClusterSpec({"localhost": ["localhost:0"]}).as_cluster_def()
    server_def = tf.train.ServerDef(cluster=cluster_def, job_name="localhost", task_index=0,
                                    protocol="grpc")
    server = tf.train.Server(server_def, config=config, start=False)
    assert server.server_def.default_session_config.gpu_options \
        .per_process_gpu_memory_fraction == 0.1
    # a ServerDef's own default_session_config is the server's config when none is given
    timed = tf.train.ServerDef(cluster=cluster_def, job_name="localhost", task_index=0,
                               default_session_config=tf.ConfigProto(operation_timeout_in_ms=7))
    server = tf.train.Server(timed, start=False)
    assert server.server_def.default_session_config.operation_timeout_in_ms == 7


def test_replica_device_setter_takes_a_cluster_def(graph):
    spec = tf.train.ClusterSpec({"ps": ["ps0:2222", "ps1:2222"], "worker": ["w0:2222"]})
    with tf.device(tf.train.replica_device_setter(cluster=spec.as_cluster_def())):
        v0, v1 = tf.Variable(1.0), tf.Variable(2.0)
        total = v0 + v1
    assert [v0.device, v1.device] == ["/job:ps/task:0", "/job:ps/task:1"]
    assert total.device == "/job:worker"
    assert tf.train.replica_device_setter(
        cluster=tf.train.ClusterSpec({"worker": ["w0:1"]}).as_cluster_def()) is None


# ---- ConfigProto -------------------------------------------------------------------------------


def test_session_inter_op_thread_pool_is_a_repeated_field(graph):
    config = tf.ConfigProto()
    pool = config.session_inter_op_thread_pool.add()
    with tf.Session(config=config) as sess:
        assert sess.run([tf.constant(10.0)]) == [10.0]
    pool.num_threads = 1
    named = config.session_inter_op_thread_pool.add(num_threads=1, global_name="t1")
    assert len(config.session_inter_op_thread_pool) == 2 and named.global_name == "t1"
    with tf.Session(config=config) as sess:
        assert sess.run(tf.constant(20.0)) == 20.0
    negative = tf.ConfigProto()
    negative.session_inter_op_thread_pool.add(num_threads=-1)   # a protobuf field: set freely,
    with pytest.raises(ValueError, match="num_threads must be >= 0"):   # refused where used
        tf.Session(config=negative)
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        tf.train.Server.create_local_server(config=negative, start=False)


def test_device_count_cpu_2_gives_two_cpu_devices_that_ops_run_on(graph):
    with tf.device("/cpu:1"):
        doubled = tf.constant(3.0) * 2
    with tf.device("/cpu:0"):
        total = doubled + 1
    config = tf.ConfigProto(device_count={"CPU": 2, "GPU": 0})
    with tf.Session(config=config) as sess:
        kinds = [tf.DeviceSpec.from_string(d.name).device_type for d in sess.list_devices()]
        assert kinds == ["CPU", "CPU"]
        assert sess.run([doubled, total]) == [6.0, 7.0]
    server = tf.train.Server({"local": ["127.0.0.1:0"]}, config=config)
    try:
        with tf.Session(server.target) as sess:
            names = [d.name for d in sess.list_devices()]
            assert "/job:local/replica:0/task:0/device:CPU:1" in names
            with tf.device("/job:local/task:0/cpu:1"):
                tenfold = doubled * 10
            assert sess.run(tenfold) == 60.0
    finally:
        server.stop()


# ---- a server left to the garbage collector ------------------------------------------------


def _port_free(port: int) -> bool:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_a_server_collected_on_its_own_thread_stops_at_once(graph):
    """The last reference to a server dropped on one of its own threads (here: an op of a
    step it runs) used to wait for itself for 30 s and leave the server half stopped."""
    holder = [tf.train.Server({"local": ["127.0.0.1:0"]}, allow_ops=["PyFunc"])]
    target = holder[0].target
    port = int(target.rpartition(":")[2])
    took: list[float] = []

    def drop(x):
        start = time.monotonic()
        holder.clear()   # the server's __del__ runs here, on the server's own thread
        gc.collect()
        took.append(time.monotonic() - start)
        return x

    with tf.device("/job:local/task:0"):
        dropped = tf.py_func(drop, [tf.constant(1.0)], tf.float32)
    sess = tf.Session(target)
    try:
        sess.run(dropped, options=tf.RunOptions(timeout_in_ms=20000))
    except errors.OpError:
        pass   # the server stopped under its own step: the step may fail, it must not hang
    finally:
        sess.close()
    assert took and took[0] < 5.0, took

    def loop_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name == "zmtf-server-local-0"]

    deadline = time.monotonic() + 10   # it stops on its loop thread, soon after
    while (loop_threads() or not _port_free(port)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _port_free(port) and not loop_threads()

"""The cluster runtime end to end: real servers, real sockets, typed errors."""

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import zmq

import zmtf as tf
from zmtf.wire import codec, messages

from server_processes import free_ports, start_server_process, stop_process


def target(spec, job, task):
    return "grpc://" + spec.task_address(job, task)


def test_values_cross_tasks_in_every_direction(cluster):
    spec, _ = cluster
    with tf.device("/job:ps/task:1"):
        a = tf.constant(1.0, name="a")
    with tf.device("/job:worker/task:0"):
        b = a + 2.0                       # ps1 -> worker0
    with tf.device("/job:worker/task:1"):
        c = a + b                         # ps1, worker0 -> worker1
    with tf.device("/job:ps/task:0"):
        d = c * 10.0                      # worker1 -> ps0 (the master)
    with tf.Session(target(spec, "ps", 0)) as sess:
        assert sess.run([b, c, d]) == [3.0, 4.0, 40.0]
        assert sess.run(d) == 40.0        # cached partitions, new step


def test_placement_defaults_follow_the_seed(cluster, caplog):
    spec, _ = cluster
    with tf.device("/job:ps"):
        on_ps = tf.constant(1.0, name="on_ps")
    with tf.device("/job:ps/task:1"):
        on_ps1 = tf.constant(1.0, name="on_ps1")
    unpinned = tf.add(on_ps, on_ps1, name="unpinned")
    config = tf.ConfigProto(log_device_placement=True)
    with caplog.at_level(logging.INFO, logger="zmtf.placement"):
        with tf.Session(target(spec, "worker", 1), config=config) as sess:
            assert sess.run(unpinned) == 2.0
    lines = {r.getMessage() for r in caplog.records if r.name == "zmtf.placement"}
    assert "on_ps: /job:ps/replica:0/task:0/device:CPU:0" in lines      # omitted task -> task 0
    assert "on_ps1: /job:ps/replica:0/task:1/device:CPU:0" in lines
    assert "unpinned: /job:worker/replica:0/task:1/device:CPU:0" in lines  # the master's task


@pytest.mark.parametrize("cluster", [{"allow_reset": True}], indirect=True)   # it resets
def test_variables_outlive_sessions_and_are_shared_between_masters(cluster):
    spec, _ = cluster
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(5.0, name="shared_v")
    bump = v.assign_add(1.0)
    with tf.Session(target(spec, "worker", 0)) as first:
        first.run(v.initializer)
        first.run(bump)
    with tf.Session(target(spec, "ps", 0)) as second:
        assert second.run(v) == 6.0
    tf.Session.reset(target(spec, "ps", 0))
    with tf.Session(target(spec, "worker", 1)) as third:
        with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value shared_v"):
            third.run(v)


def test_replica_device_setter_round_robin_and_feeds(cluster):
    spec, _ = cluster
    with tf.device(tf.train.replica_device_setter(cluster=spec)):
        weights = [tf.Variable(np.full(3, float(i), np.float32), name=f"w{i}") for i in range(3)]
        x = tf.placeholder(tf.float32, [3], name="x")
        total = tf.add_n([w * x for w in weights])
    assert [w.device for w in weights] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    with tf.Session(target(spec, "worker", 0)) as sess:
        sess.run(tf.global_variables_initializer())
        np.testing.assert_allclose(sess.run(total, {x: [1.0, 2.0, 3.0]}), [3.0, 6.0, 9.0])


def test_errors_on_a_remote_task_reach_the_client_typed(cluster):
    spec, _ = cluster
    with tf.device("/job:ps/task:1"):
        v = tf.Variable(1.0, name="never_initialized")
    with tf.device("/job:worker/task:1"):
        y = v * 2.0
    with tf.Session(target(spec, "worker", 0)) as sess:
        with pytest.raises(tf.errors.FailedPreconditionError, match="never_initialized"):
            sess.run(y)
        sess.run(v.initializer)
        assert sess.run(y) == 2.0        # the session survives the failed step


def test_pin_to_a_job_the_cluster_lacks(cluster):
    spec, _ = cluster
    with tf.device("/job:chief"):
        z = tf.constant(1.0, name="z")
    with tf.Session(target(spec, "ps", 0)) as sess:
        with pytest.raises(tf.errors.InvalidArgumentError, match="Cannot assign a device to node 'z'"):
            sess.run(z)


def test_several_clients_at_once(cluster):
    spec, _ = cluster
    with tf.device("/job:ps/task:0"):
        x = tf.placeholder(tf.float32, [], name="x")
        y = x * 3.0
    with tf.device("/job:worker/task:1"):
        z = y + 1.0
    results, errors = {}, []

    def client(k):
        try:
            with tf.Session(target(spec, "worker", k % 2)) as sess:
                results[k] = [sess.run(z, {x: float(i)}) for i in range(20)]
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert all(results[k] == [3.0 * i + 1.0 for i in range(20)] for k in range(4))


def test_no_server_is_unavailable_within_the_deadline():
    (port,) = free_ports(1)
    c = tf.constant(1.0)
    start = time.monotonic()
    with tf.Session(f"zmtf://127.0.0.1:{port}") as sess:
        with pytest.raises(tf.errors.UnavailableError, match=f"127.0.0.1:{port}"):
            sess.run(c, options=tf.RunOptions(timeout_in_ms=500))
    assert time.monotonic() - start < 5


@contextlib.contextmanager
def raw_dealer(spec, job, task):
    """A bare pyzmq DEALER to a task: to send it what no zmtf client would."""
    ctx = zmq.Context()
    sock = ctx.socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.RCVTIMEO, 5000)
    sock.connect("tcp://" + spec.task_address(job, task))
    try:
        yield sock
    finally:
        sock.close(0)
        ctx.term()


def test_malformed_frames_get_an_error_reply_and_the_server_keeps_serving(cluster):
    spec, _ = cluster
    with raw_dealer(spec, "ps", 0) as sock:
        for frames in ([b"\xc1garbage"], [b""], [codec.encode(messages.Ping(id=7))[0], b"extra"]):
            sock.send_multipart(frames)
            reply = codec.decode(sock.recv_multipart())
            assert isinstance(reply, messages.ErrorReply)
            assert reply.code == tf.errors.INVALID_ARGUMENT
        for filters in ([3], "/job:ps", ["/job:ps/task:x"]):   # a session config checked too
            sock.send_multipart(codec.encode(messages.CreateSession(
                id=8, graph={"version": 1, "nodes": []}, config={"device_filters": filters})))
            reply = codec.decode(sock.recv_multipart())
            assert isinstance(reply, messages.ErrorReply) and "device_filters" in reply.message
        sock.send_multipart(codec.encode(messages.Ping(id=9)))
        pong = codec.decode(sock.recv_multipart())
        assert isinstance(pong, messages.Pong) and pong.id == 9
    with tf.Session(target(spec, "ps", 0)) as sess:
        assert sess.run(tf.constant(2.0) * 2.0) == 4.0


def test_big_feeds_and_fetches_travel_streamed_in_every_direction(cluster):
    """6 MiB crosses client -> master, worker -> ps, ps -> worker and back to the client, each
    hop a streamed message (over codec.STREAM_MIN_BYTES), sync and async clients alike."""
    spec, _ = cluster
    assert 6 << 20 >= codec.STREAM_MIN_BYTES
    x = tf.placeholder(tf.float32, [3, 1 << 19])
    with tf.device("/job:ps/task:1"):
        doubled = x * 2.0                                  # client feed -> worker0 -> ps1
    with tf.device("/job:worker/task:1"):
        summed = doubled + 1.0                             # ps1 -> worker1
    value = np.random.default_rng(0).standard_normal((3, 1 << 19)).astype(np.float32)
    with tf.Session(target(spec, "worker", 0)) as sess:
        got, got_sum = sess.run([doubled, summed], {x: value})
        np.testing.assert_array_equal(got, value * 2.0)
        np.testing.assert_array_equal(got_sum, value * 2.0 + 1.0)

    async def run_async():
        async with tf.AsyncSession(target(spec, "worker", 0)) as sess:
            return await sess.run(summed, {x: value})

    np.testing.assert_array_equal(asyncio.run(run_async()), value * 2.0 + 1.0)


def test_a_finished_step_frees_its_streamed_tensors_without_the_cyclic_gc(cluster):
    """A received big tensor lands in a pooled buffer, reused once nothing refers to it. A
    reference cycle on the step path would keep every step's buffer until a GC pass: the
    pool then grew by one buffer a step and each step faulted in fresh pages (64 MiB went
    40 -> 150 ms)."""
    import gc

    from zmtf.distributed import sockets

    spec, _ = cluster
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(tf.fill([5 << 18], 1.0))           # 5 MiB: streamed, pooled
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(v)
    gc.disable()
    try:
        with tf.Session(target(spec, "worker", 0)) as sess:
            sess.run(v.initializer)
            sess.run(total)
            before = sockets.RECEIVE_BUFFERS.stats()["held_bytes"]
            for _ in range(8):
                assert sess.run(total) == 5 << 18
            grown = sockets.RECEIVE_BUFFERS.stats()["held_bytes"] - before
    finally:
        gc.enable()
    assert grown <= 5 << 20, f"the pool grew {grown >> 20} MiB over 8 steps: buffers not freed"


def test_a_malformed_stream_gets_one_error_reply_and_the_server_keeps_serving(cluster):
    spec, _ = cluster
    with raw_dealer(spec, "worker", 1) as sock:
        push = messages.PushTensor(id=17, step_id=5, keys=["k"],
                                   tensors=[np.zeros(5 << 18, np.float32)])    # 5 MiB: streamed
        sends = codec.encode_messages(push)
        assert len(sends) == 6
        sends[3] = [b"\0" * 3]                                # a part that is not whole floats
        for frames in sends:
            sock.send_multipart(frames)
        sock.send_multipart(codec.encode(messages.Ping(id=18)))
        reply = codec.decode(sock.recv_multipart())
        assert isinstance(reply, messages.ErrorReply) and reply.id == 17
        assert reply.code == tf.errors.INVALID_ARGUMENT and "item size 4" in reply.message
        pong = codec.decode(sock.recv_multipart())           # one error, then the next reply
        assert isinstance(pong, messages.Pong) and pong.id == 18


def test_a_stalled_stream_is_dropped_on_a_timer_its_peer_told_and_a_dead_peers_freed():
    """No further message needs to arrive: the listener's own timer drops a stream that
    stopped mid-way, tells that peer (not another one), and frees a dead peer's stream."""
    spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{free_ports(1)[0]}"]})
    server = tf.train.Server(spec, job_name="worker", task_index=0, stream_idle_secs=0.3)
    try:
        push = messages.PushTensor(id=21, step_id=5, keys=["k"],
                                   tensors=[np.zeros(5 << 18, np.float32)])    # 5 MiB: streamed
        sends = codec.encode_messages(push)
        with raw_dealer(spec, "worker", 0) as stalled, raw_dealer(spec, "worker", 0) as other:
            for frames in sends[:3]:          # the header and two parts, then nothing
                stalled.send_multipart(frames)
            other.send_multipart(codec.encode(messages.Ping(id=30)))
            assert codec.decode(other.recv_multipart()).id == 30
            reply = codec.decode(stalled.recv_multipart())      # within RCVTIMEO (5 s)
            assert isinstance(reply, messages.ErrorReply) and reply.id == 21
            assert reply.code == tf.errors.DEADLINE_EXCEEDED
            assert "3 part messages did not come" in reply.message
            other.setsockopt(zmq.RCVTIMEO, 200)
            with pytest.raises(zmq.Again):    # the other peer heard nothing of it
                other.recv_multipart()
            stalled.send_multipart(codec.encode(messages.Ping(id=22)))
            assert isinstance(codec.decode(stalled.recv_multipart()), messages.Pong)
        open_streams = server._core._listener._streams

        def streams_become(count):
            deadline = time.monotonic() + 5
            while len(open_streams) != count and time.monotonic() < deadline:
                time.sleep(0.02)
            return len(open_streams) == count

        with raw_dealer(spec, "worker", 0) as dying:
            for frames in sends[:2]:
                dying.send_multipart(frames)
            assert streams_become(1)
        assert streams_become(0)              # the peer is gone; its stream goes all the same
    finally:
        server.stop()


DEQUEUE_AND_WAIT = """
import sys
import zmtf as tf
queue = tf.FIFOQueue(1, tf.float32, shared_name="handoff")
with tf.Session(sys.argv[1]) as sess:
    print("waiting", flush=True)
    sess.run(queue.dequeue())
"""


def test_a_client_killed_mid_step_has_its_step_cancelled_and_nothing_is_lost(caplog):
    """A client killed while its step waits in a dequeue (Ctrl-C, a crash): as TF's master
    cancels the step of a dropped call, the server cancels it when the connection closes,
    so the element enqueued afterwards stays for the next reader. One INFO line, no warning."""
    spec = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{free_ports(1)[0]}"]})
    server = tf.train.Server(spec, job_name="worker", task_index=0)
    client = subprocess.Popen([sys.executable, "-c", DEQUEUE_AND_WAIT,
                               "grpc://" + spec.task_address("worker", 0)],
                              stdout=subprocess.PIPE, text=True)
    try:
        with caplog.at_level(logging.INFO, logger="zmtf"):
            assert client.stdout.readline().strip() == "waiting"
            time.sleep(0.5)                      # its dequeue step is waiting on the server
            client.kill()
            client.wait()
            deadline = time.monotonic() + 10
            while "request(s) in flight" not in caplog.text and time.monotonic() < deadline:
                time.sleep(0.05)
            assert "a peer disconnected with 1 request(s) in flight" in caplog.text
            tf.reset_default_graph()
            queue = tf.FIFOQueue(1, tf.float32, shared_name="handoff")
            with tf.Session(server.target) as sess:
                sess.run(queue.enqueue(5.0))
                assert sess.run(queue.dequeue(), options=tf.RunOptions(timeout_in_ms=5000)) == 5.0
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        client.stdout.close()
        server.stop()


def test_a_reply_to_a_peer_that_has_gone_is_dropped_with_one_info_line(cluster, caplog):
    """The race the cancellation cannot close (a step done as its client leaves): the reply
    goes nowhere, said once per peer at INFO, and the server keeps serving."""
    spec, servers = cluster
    listener = servers[("ps", 0)]._core._listener
    with caplog.at_level(logging.INFO, logger="zmtf"):
        done = threading.Event()

        def reply_to_nobody():
            for _ in range(2):
                listener._reply(b"\x00gone", messages.Ok(id=9))
            done.set()

        listener._loop.call_soon_threadsafe(reply_to_nobody)
        assert done.wait(5)
    assert caplog.text.count("dropped a reply to a peer that has disconnected") == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    with raw_dealer(spec, "ps", 0) as sock:
        sock.send_multipart(codec.encode(messages.Ping(id=10)))
        assert isinstance(codec.decode(sock.recv_multipart()), messages.Pong)


def test_server_stop_returns_and_join_ends():
    server = tf.train.Server.create_local_server()
    joined = threading.Event()
    threading.Thread(target=lambda: (server.join(), joined.set()), daemon=True).start()
    with tf.Session(server.target) as sess:
        assert sess.run(tf.constant(3.0) + 1.0) == 4.0
    server.stop()
    assert joined.wait(5)


def test_killed_worker_process_gives_a_typed_error_not_a_hang():
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    ps = tf.train.Server(spec, job_name="ps", task_index=0)
    worker = start_server_process(spec, "worker", 0)
    try:
        tf.reset_default_graph()
        with tf.device("/job:worker/task:0"):
            m = tf.random_normal([1200, 1200], seed=1)
            slow = m
            for _ in range(60):
                slow = tf.matmul(slow, m) * 1e-3
        with tf.Session(target(spec, "ps", 0)) as sess:
            assert sess.run(tf.reduce_sum(m)).shape == ()
            outcome = {}

            def run():
                try:
                    sess.run(slow)
                    outcome["value"] = True
                except tf.errors.OpError as error:
                    outcome["error"] = error

            runner = threading.Thread(target=run)
            start = time.monotonic()
            runner.start()
            time.sleep(0.5)
            worker.kill()
            runner.join(30)
            assert not runner.is_alive(), "run() hung after the worker died"
            assert isinstance(outcome.get("error"), tf.errors.UnavailableError), outcome
            assert "/job:worker/replica:0/task:0" in str(outcome["error"])
            assert time.monotonic() - start < 30
    finally:
        stop_process(worker)
        ps.stop()


def test_server_cli_serves_and_stops_on_sigterm(tmp_path):
    import json

    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    tf_config = json.dumps({"cluster": spec.as_dict(), "task": {"type": "ps", "index": 0}})
    proc = start_server_process(spec, "ps", 0, extra_env={"TF_CONFIG": tf_config})
    worker = tf.train.Server(spec, job_name="worker", task_index=0)
    try:
        tf.reset_default_graph()
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(7.0, name="remote_v")
        with tf.Session(worker.target) as sess:
            sess.run(v.initializer)
            assert sess.run(v + 1.0) == 8.0
    finally:
        worker.stop()
        stop_process(proc)
    assert proc.returncode == 0


@pytest.mark.parametrize("transport", ["inproc", "ipc"])
def test_clusters_on_inproc_and_ipc(transport, tmp_path):
    import uuid

    tag = uuid.uuid4().hex[:8]
    address = (lambda n: f"inproc://{tag}-{n}") if transport == "inproc" else (lambda n: f"ipc://{tmp_path}/{n}")
    spec = tf.train.ClusterSpec({"ps": [address("ps0")], "worker": [address("w0"), address("w1")]})
    servers = [tf.train.Server(spec, job_name=j, task_index=i) for j, i in [("ps", 0), ("worker", 0), ("worker", 1)]]
    try:
        tf.reset_default_graph()
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(np.arange(4, dtype=np.float32), name="v")
        with tf.device("/job:worker/task:0"):
            b = v * 2.0
        with tf.device("/job:worker/task:1"):
            c = b + v
        big = tf.placeholder(tf.float32, [5 << 18])           # 5 MiB: streamed both ways
        with tf.device("/job:worker/task:1"):
            big_out = big + 1.0
        value = np.arange(5 << 18, dtype=np.float32)
        with tf.Session(servers[1].target) as sess:
            sess.run(v.initializer)
            np.testing.assert_allclose(sess.run(c), [0.0, 3.0, 6.0, 9.0])
            np.testing.assert_array_equal(sess.run(big_out, {big: value}), value + 1.0)
    finally:
        for server in servers:
            server.stop()


def test_a_script_that_never_stops_its_server_still_exits():
    import subprocess
    import sys

    script = ("import zmtf as tf\n"
              "s = tf.train.Server.create_local_server()\n"
              "with tf.Session(s.target) as sess:\n"
              "    print(sess.run(tf.constant(1.0) + 1.0))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "2.0", out.stderr


def test_intra_op_threads_limit_blas():
    from zmtf.kernels.cpu.blas import _openblas, set_blas_threads

    lib = _openblas()
    if lib is None or not hasattr(lib, "scipy_openblas_get_num_threads64_"):
        pytest.skip("numpy here is not linked to scipy-openblas")
    before = lib.scipy_openblas_get_num_threads64_()
    try:
        with tf.Session(config=tf.ConfigProto(intra_op_parallelism_threads=1)):
            assert lib.scipy_openblas_get_num_threads64_() == 1
    finally:
        set_blas_threads(before)


def test_small_products_use_one_blas_thread_big_ones_the_cap():
    from zmtf.kernels.cpu import blas

    lib = blas._openblas()
    if lib is None or not hasattr(lib, "scipy_openblas_get_num_threads64_"):
        pytest.skip("numpy here is not linked to scipy-openblas")
    before = lib.scipy_openblas_get_num_threads64_()
    try:
        assert blas.set_blas_threads(2)
        blas.use_threads_for(blas.SINGLE_THREAD_FLOPS - 1)
        assert lib.scipy_openblas_get_num_threads64_() == 1
        blas.use_threads_for(blas.SINGLE_THREAD_FLOPS)
        assert lib.scipy_openblas_get_num_threads64_() == 2
        blas.use_threads_for(2 * 64 * 784 * 256)   # the example MLP's product: one thread
        assert lib.scipy_openblas_get_num_threads64_() == 1
    finally:
        blas.set_blas_threads(before)


def test_one_remote_session_shared_by_threads(cluster):
    spec, _ = cluster
    with tf.device("/job:ps/task:1"):
        x = tf.placeholder(tf.float32, [], name="x")
        y = x + 100.0
    results, errors = {}, []
    with tf.Session(target(spec, "worker", 0)) as sess:   # each thread gets its own socket

        def client(k):
            try:
                results[k] = [sess.run(y, {x: float(k * 10 + i)}) for i in range(10)]
            except Exception as error:  # noqa: BLE001
                errors.append(error)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
    assert not errors
    assert all(results[k] == [k * 10 + i + 100.0 for i in range(10)] for k in range(4))


def test_a_malformed_push_fails_the_waiting_step_with_the_reason():
    """PushTensor has no reply: a refused one must surface in the step it was meant for."""
    from zmtf.distributed.server import ServerCore
    from zmtf.framework.errors import InvalidArgumentError
    from zmtf.wire import messages as m

    async def main():
        core = ServerCore({"worker": ["inproc://push-check"]}, "worker", 0)
        await core.start()
        try:
            got = []
            core.worker.rendezvous.recv(7, "x:0;a;b", lambda value, error: got.append((value, error)))
            reply = core.handle(m.PushTensor(id=0, step_id=7, keys=["x:0;a;b"],
                                             tensors=[np.zeros(1), np.zeros(1)]))
            assert reply is None                      # nobody waits for an Ok
            (value, error), = got
            assert value is None and isinstance(error, InvalidArgumentError)
            assert "carries 2 tensors, expected 1" in str(error)
            assert core.handle(m.PushTensor(id=0, step_id=8, keys=["k", "j"],
                                            tensors=[np.ones(2), np.zeros(3)])) is None
            core.worker.rendezvous.recv(8, "k", lambda value, error: got.append((value, error)))
            core.worker.rendezvous.recv(8, "j", lambda value, error: got.append((value, error)))
            np.testing.assert_array_equal(got[-2][0], np.ones(2))
            np.testing.assert_array_equal(got[-1][0], np.zeros(3))
        finally:
            await core.stop()

    asyncio.run(main())


def test_fetching_a_ps_variable_op_by_name_gives_its_value(cluster):
    spec, servers = cluster
    with tf.device("/job:ps/task:1"):
        w = tf.Variable([3.0, 4.0], name="w")
    with tf.Session(servers[("worker", 0)].target) as sess:
        sess.run(w.initializer)
        np.testing.assert_array_equal(sess.run("w:0"), [3.0, 4.0])


def test_device_filters_keep_a_worker_from_waiting_on_the_others():
    """TF1's between-graph idiom: ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"]).
    Worker 1 is down; with the filters worker 0's session neither asks it for its devices
    nor can place on it, so it starts at once."""
    ports = free_ports(3)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"],
                                 "worker": [f"127.0.0.1:{ports[1]}", f"127.0.0.1:{ports[2]}"]})
    servers = [tf.train.Server(spec, job_name="ps", task_index=0),
               tf.train.Server(spec, job_name="worker", task_index=0)]
    try:
        tf.reset_default_graph()
        with tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=spec)):
            v = tf.Variable(2.0)
            y = v * 3.0
        with tf.device("/job:worker/task:1"):
            elsewhere = v + 1.0
        config = tf.ConfigProto(device_filters=["/job:ps", "/job:worker/task:0"])
        started = time.monotonic()
        with tf.Session(servers[1].target, config=config) as sess:
            sess.run(v.initializer)
            assert sess.run(y) == 6.0
            assert time.monotonic() - started < 1.5   # no 2 s wait for the task that is down
            with pytest.raises(tf.errors.InvalidArgumentError, match="device_filters"):
                sess.run(elsewhere)
    finally:
        for server in servers:
            server.stop()


def test_config_options_of_tf1_scripts_are_accepted_and_filters_checked():
    config = tf.ConfigProto(
        device_filters=["/job:ps", "/job:worker/task:1"], isolate_session_state=True,
        graph_options=tf.GraphOptions(optimizer_options=tf.OptimizerOptions(
            opt_level=tf.OptimizerOptions.L0, global_jit_level=tf.OptimizerOptions.OFF)))
    assert config.device_filters == ["/job:ps", "/job:worker/task:1"]
    # protobuf fields check nothing when set: a session made from the config refuses them
    with pytest.raises(ValueError, match=r"device_filters\[0\] '/job:ps/task:zero'"):
        tf.Session(config=tf.ConfigProto(device_filters=["/job:ps/task:zero"]))
    with pytest.raises(ValueError, match="list of device names"):   # a string is its characters
        tf.Session(config=tf.ConfigProto(device_filters="/job:ps"))


BLAS_SHARE_CHILD = """
import json, sys
import zmtf as tf
from zmtf.kernels.cpu import blas
cluster = json.loads(sys.argv[1])
before = blas.threads_cap()
server = tf.train.Server(cluster, job_name="worker", task_index=0, start=True)
print(before, blas.threads_cap())
"""


@pytest.mark.parametrize("others,on_machine", [
    (["127.0.0.1", "localhost"], 3),                     # a ps and two workers on this machine
    (["10.255.0.1", "machine-b.invalid"], 1),             # the others elsewhere
])
def test_a_servers_big_products_share_the_cores_among_the_tasks_on_its_machine(others, on_machine):
    """BLAS threads per server: this machine's cores / the cluster's tasks on it (by their
    addresses), so two workers on two cores do not each run two BLAS threads."""
    ports = free_ports(3)
    cluster = {"worker": [f"127.0.0.1:{ports[0]}", f"{others[0]}:{ports[1]}"],
               "ps": [f"{others[1]}:{ports[2]}"]}
    env = dict(os.environ, OPENBLAS_NUM_THREADS="8", ZMTF_TUNE_PROCESS="0")
    out = subprocess.run([sys.executable, "-c", BLAS_SHARE_CHILD, json.dumps(cluster)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    before, after = map(int, out.stdout.split())
    if before == 0:
        pytest.skip("numpy here is not linked to OpenBLAS")
    assert after == min(before, max(1, len(os.sched_getaffinity(0)) // on_machine)), out.stdout

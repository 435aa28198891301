"""AsyncSession against in-process clusters (zmtf.testing): concurrency, cancellation,
deadlines, a loop that keeps running, no leaks, and tasks that die and come back."""

import asyncio
import threading
import time

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import local_cluster


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


def slow_graph(device, steps=80, size=1000):
    with tf.device(device):
        m = tf.random_normal([size, size], seed=3)
        slow = m
        for _ in range(steps):
            slow = tf.matmul(slow, m) * 1e-3
    return slow


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_one_hundred_concurrent_runs(transport):
    async with local_cluster({"ps": 1, "worker": 2}, transport) as cluster:
        with tf.device("/job:ps/task:0"):
            x = tf.placeholder(tf.float32, [], name="x")
            y = x * 2.0
        with tf.device("/job:worker/task:1"):
            z = y + 1.0
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            results = await asyncio.gather(*[sess.run(z, {x: float(i)}) for i in range(100)])
    assert results == [2.0 * i + 1.0 for i in range(100)]


async def test_fixture_from_the_plugin(zmtf_cluster):
    with tf.device("/job:worker/task:1"):
        c = tf.constant(20.0) + 1.0
    async with tf.AsyncSession(zmtf_cluster.target("ps", 0)) as sess:
        assert await sess.run(c) == 21.0
    assert sorted(zmtf_cluster.spec.jobs) == ["ps", "worker"]


@pytest.mark.zmtf_cluster(worker=3, transport="tcp")
async def test_plugin_marker_shapes_the_cluster(zmtf_cluster):
    assert zmtf_cluster.spec.num_tasks("worker") == 3
    assert zmtf_cluster.target("worker", 2).startswith("zmtf://127.0.0.1:")


async def test_cancelling_a_run_cancels_the_step_and_keeps_the_session():
    async with local_cluster({"worker": 2}) as cluster:
        slow = slow_graph("/job:worker/task:1")
        quick = tf.constant(1.0) + 1.0
        master = cluster.servers[("worker", 0)]
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            assert await sess.run(quick) == 2.0
            task = asyncio.ensure_future(sess.run(slow))
            await asyncio.sleep(0.3)
            assert master.steps_in_flight() == 1, "the slow step should be running on the master"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            for _ in range(100):          # the master drops the step promptly
                if not master.steps_in_flight():
                    break
                await asyncio.sleep(0.01)
            assert master.steps_in_flight() == 0
            assert await sess.run(quick) == 2.0


async def test_the_master_keeps_no_finished_steps():
    """Steps are tracked for CancelStep: one that succeeds leaves as it finishes (its values
    with it), failed ones are dropped now and then."""
    async with local_cluster({"worker": 1}) as cluster:
        quick = tf.constant(1.0) + 1.0
        bad = tf.debugging.check_numerics(tf.constant(0.0) / 0.0, "nan on purpose")
        master = cluster.servers[("worker", 0)]
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            for _ in range(300):
                assert await sess.run(quick) == 2.0
            assert len(master._running) == 0
            for _ in range(300):
                with pytest.raises(tf.errors.InvalidArgumentError):
                    await sess.run(bad)
            assert len(master._running) <= 2 * 64 and master.steps_in_flight() == 0


async def test_asyncio_timeout_and_run_deadline():
    async with local_cluster({"worker": 1}) as cluster:
        slow = slow_graph("/job:worker/task:0")
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await sess.run(slow)
            with pytest.raises(tf.errors.DeadlineExceededError):
                await sess.run(slow, timeout=0.2)
            assert await sess.run(tf.constant(5.0) * 2.0) == 10.0


async def test_loop_keeps_ticking_during_a_256MB_fetch():
    async with local_cluster({"ps": 1, "worker": 1}, "tcp") as cluster:
        with tf.device("/job:ps/task:0"):
            big = tf.Variable(tf.zeros([64 * 2**20]), name="big")   # 256 MB of float32
        ticks = []

        async def heartbeat():
            while True:
                ticks.append(time.perf_counter())
                await asyncio.sleep(0.005)

        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(big.initializer)
            beat = asyncio.ensure_future(heartbeat())
            start = time.perf_counter()
            value = await sess.run(big)
            elapsed = time.perf_counter() - start
            beat.cancel()
        assert value.shape == (64 * 2**20,) and value[-1] == 0.0
        during = [t for t in ticks if start <= t <= start + elapsed]
        gaps = np.diff([start] + during + [start + elapsed])
        assert len(during) >= 3 and gaps.max() < max(0.5 * elapsed, 0.05), (elapsed, gaps.max())


async def test_no_threads_or_sockets_left_after_close():
    async with local_cluster({"worker": 1}, "tcp") as cluster:
        c = tf.constant(1.0) + 1.0
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            assert await sess.run(c) == 2.0   # warms up the server's own thread pools
        before = set(threading.enumerate())
        sessions = []
        for _ in range(3):
            async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
                assert await sess.run(c) == 2.0
            sessions.append(sess)
        await asyncio.sleep(0.05)
        # the server's own pools may grow a worker under load; a session must add no thread
        new = {t for t in set(threading.enumerate()) - before
               if not t.name.startswith(("zmtf-inter-op", "asyncio_"))}
        assert new == set()
        # its zmq sockets are gone: its own Context destroyed, or (the server is in this
        # process, reached through its inproc:// twin) its channel on the server's closed
        assert all(s._remote._channel is None for s in sessions)
        assert all(s._remote._context.closed or not s._remote._own_context for s in sessions)


def test_sync_remote_session_releases_its_thread():
    server = tf.train.Server.create_local_server()
    try:
        c = tf.constant(1.0) + 1.0
        with tf.Session(server.target) as sess:
            assert sess.run(c) == 2.0   # warms up the server's own thread pools
        before = set(threading.enumerate())
        with tf.Session(server.target) as sess:
            assert sess.run(c) == 2.0
        time.sleep(0.05)
        assert set(threading.enumerate()) - before == set()
    finally:
        server.stop()


async def test_sync_remote_run_inside_a_running_loop_points_to_async_session():
    async with local_cluster({"worker": 1}, "tcp") as cluster:
        sess = tf.Session(cluster.target("worker", 0))
        try:
            with pytest.raises(RuntimeError, match="AsyncSession"):
                sess.run(tf.constant(1.0))
        finally:
            await asyncio.get_running_loop().run_in_executor(None, sess.close)


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_task_stopped_then_restarted(transport):
    async with local_cluster({"ps": 1, "worker": 1}, transport) as cluster:
        with tf.device("/job:ps/task:0"):
            v = tf.Variable(3.0, name="v")
        with tf.device("/job:worker/task:0"):
            doubled = v * 2.0
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(v.initializer)
            assert await sess.run(doubled) == 6.0
            await cluster.stop_task("ps", 0)
            with pytest.raises((tf.errors.UnavailableError, tf.errors.DeadlineExceededError)):
                await sess.run(doubled, timeout=2.0)
            await cluster.restart_task("ps", 0)
            with pytest.raises(tf.errors.FailedPreconditionError, match="uninitialized value v"):
                await sess.run(doubled, timeout=10.0)   # a restarted ps has lost its variables
            await sess.run(v.initializer)
            assert await sess.run(doubled) == 6.0



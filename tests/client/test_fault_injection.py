"""The harness's faults (zmtf.testing: pause, partition, delay, drop) as a service author
meets them through AsyncSession: the typed error naming the task within the liveness bound,
recovery once the fault ends, and nothing left behind (rules, held or delayed messages) after
its block. Real servers on real sockets of each transport; the faults act at their listeners."""

import asyncio
import time

import pytest

import zmtf as tf
from zmtf.distributed import faults
from zmtf.testing import local_cluster

#: the liveness bound of these clusters (ZMTF_LIVENESS_TIMEOUT), seconds
LIVENESS = 0.5
#: how long past the bound an error may come on a loaded machine (probe at L/2, ping for L)
SLACK = 3.0


@pytest.fixture(autouse=True)
def _small_liveness_bound(monkeypatch):
    monkeypatch.setenv("ZMTF_LIVENESS_TIMEOUT", str(LIVENESS))


def _model():
    """``b = a + x``: a on the ps, the sum on worker 1, mastered by worker 0 (a client's step
    crosses every task)."""
    tf.reset_default_graph()
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(1.0, name="a")
    x = tf.placeholder(tf.float32, [], name="x")
    with tf.device("/job:worker/task:1"):
        b = a + x
    return a, x, b


async def _failure(run, limit=15.0):
    """(the error ``run`` raised, seconds it took); it must fail within ``limit``."""
    started = time.monotonic()
    with pytest.raises(tf.errors.OpError) as raised:
        await asyncio.wait_for(run, limit)
    return raised.value, time.monotonic() - started


def _no_fault_left(cluster):
    assert cluster.faults_pending() == 0
    for server in cluster.servers.values():
        for listener in (server._listener, server._local_listener):
            assert listener is None or listener.fault is None


@pytest.mark.parametrize("transport", ["inproc", "ipc", "tcp"])
async def test_a_paused_task_fails_the_steps_that_need_it_naming_it_then_serves_on_resume(
        transport):
    a, x, b = _model()
    async with local_cluster({"ps": 1, "worker": 2}, transport) as cluster:
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(a.initializer)
            assert await sess.run(b, {x: 1.0}) == 2.0
            with cluster.pause("worker:1"):
                error, seconds = await _failure(sess.run(b, {x: 2.0}))
                assert isinstance(error, tf.errors.UnavailableError), error
                assert "/job:worker/replica:0/task:1" in error.message, error.message
                assert seconds < 2 * LIVENESS + SLACK, seconds
                assert await sess.run(a) == 1.0   # what does not need it still runs
            _no_fault_left(cluster)
            assert await sess.run(b, {x: 3.0}) == 4.0


async def test_a_paused_master_fails_the_clients_call_naming_its_target():
    a, x, b = _model()
    async with local_cluster({"ps": 1, "worker": 2}) as cluster:
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(a.initializer)
            async with cluster.pause("/job:worker/task:0"):
                error, seconds = await _failure(sess.run(a))
                assert isinstance(error, tf.errors.UnavailableError), error
                assert cluster.target("worker", 0) in error.message, error.message
                assert "liveness bound" in error.message, error.message
                assert seconds < 2 * LIVENESS + SLACK, seconds
            _no_fault_left(cluster)
            assert await sess.run(a) == 1.0


@pytest.mark.parametrize("transport", ["inproc", "tcp"])
async def test_a_partition_between_two_tasks_fails_their_steps_and_heal_ends_it(transport):
    a, x, b = _model()
    async with local_cluster({"ps": 1, "worker": 2}, transport) as cluster:
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(a.initializer)
            assert await sess.run(b, {x: 1.0}) == 2.0   # (a task never reached is waited for)
            cluster.partition("worker:0", "worker:1")
            error, seconds = await _failure(sess.run(b, {x: 1.0}))
            assert isinstance(error, tf.errors.UnavailableError), error
            assert "/job:worker/replica:0/task:1" in error.message, error.message
            assert seconds < 2 * LIVENESS + SLACK, seconds
            assert await sess.run(a) == 1.0   # worker 0 still reaches the ps
            cluster.heal()
            _no_fault_left(cluster)
            assert await sess.run(b, {x: 1.0}) == 2.0


async def test_a_partition_between_a_task_and_the_client():
    a, x, b = _model()
    async with local_cluster({"ps": 1, "worker": 2}, "tcp") as cluster:
        async with tf.AsyncSession(cluster.target("worker", 1)) as other:
            async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
                await sess.run(a.initializer)
                with cluster.partition("worker:0", "client"):
                    error, _ = await _failure(sess.run(a))
                    assert isinstance(error, tf.errors.UnavailableError), error
                    assert await other.run(b, {x: 1.0}) == 2.0   # the tasks still reach each other
                _no_fault_left(cluster)
                assert await sess.run(a) == 1.0


async def test_a_delayed_task_slows_its_steps_and_a_deadline_shorter_than_the_delay_fails():
    a, x, b = _model()
    async with local_cluster({"ps": 1, "worker": 2}) as cluster:
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(a.initializer)
            with cluster.delay("ps:0", 0.2):
                started = time.monotonic()
                assert await sess.run(a) == 1.0
                assert time.monotonic() - started >= 0.4   # to the ps and back: 0.2 s each way
                error, _ = await _failure(sess.run(a, timeout=0.1))
                assert isinstance(error, tf.errors.DeadlineExceededError), error
            _no_fault_left(cluster)
            started = time.monotonic()
            assert await sess.run(a) == 1.0
            assert time.monotonic() - started < 0.4


async def test_dropped_messages_of_a_kind_run_into_their_deadline_then_the_next_one_passes():
    a, x, b = _model()
    async with local_cluster({"ps": 1, "worker": 2}) as cluster:
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(a.initializer)
            with cluster.drop("RunGraph", 1):
                error, _ = await _failure(sess.run(b, {x: 1.0}, timeout=0.5))
                assert isinstance(error, tf.errors.DeadlineExceededError), error
                assert await sess.run(b, {x: 1.0}) == 2.0   # the count is spent: it passes
            _no_fault_left(cluster)
            with cluster.drop("RunStepResult", 5):
                error, _ = await _failure(sess.run(a, timeout=0.5))
                assert isinstance(error, tf.errors.DeadlineExceededError), error
            _no_fault_left(cluster)   # the rest of the count ended with the block
            assert await sess.run(a) == 1.0


async def test_faults_are_bounded_and_name_what_to_fix():
    async with local_cluster({"worker": 1}) as cluster:
        with pytest.raises(ValueError, match="between 0 and 60"):
            cluster.delay("worker:0", 3600)
        with pytest.raises(ValueError, match="no message kind"):
            cluster.drop("RunStepp", 1)
        with pytest.raises(ValueError, match="no task"):
            cluster.pause("ps:0")
        _no_fault_left(cluster)


async def test_stopping_the_cluster_ends_its_faults_and_the_table():
    """Faults left set when the cluster stops end with it: nothing held, no table left in
    the process (in-process peers are no longer probed)."""
    x = tf.placeholder(tf.float32, [], name="x")
    async with local_cluster({"worker": 1}) as cluster:
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            assert await sess.run(x * 2.0, {x: 1.0}) == 2.0
            cluster.pause("worker:0")
            cluster.delay("worker:0", 1.0)
            pending = asyncio.ensure_future(sess.run(x * 2.0, {x: 2.0}))
            await asyncio.sleep(0.05)
            assert cluster.faults_pending() >= 2   # the rules and the held request
            pending.cancel()
    assert cluster.faults_pending() == 0 and not faults.installed()
    with pytest.raises(RuntimeError, match="not running"):
        cluster.pause("worker:0")

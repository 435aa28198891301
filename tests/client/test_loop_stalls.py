"""AsyncSession keeps its event loop ticking: a 256 MB feed that must be converted is
converted on a thread, and 1,000 runs submitted at once are admitted in slices. A heartbeat
coroutine's worst gap stays under a generous bound (the machine is shared and noisy: the
target, 20 ms, is what bench/async_client.py measures). The servers run on their own loop
threads (tf.train.Server), so the loop measured is the client's alone. The interpreter's
garbage collector is paused while a gap is measured: a full collection of a heap with numba
in it takes ~200 ms whoever allocates, and is no work of the session's."""

import asyncio

import numpy as np
import pytest

import zmtf as tf
from zmtf.client.admission import SLICE_RUNS, admission_for
from zmtf.testing import running_servers
from zmtf.testing.loop_watch import worst_gap

#: the worst gap allowed, seconds (without the change: 170-500 ms on this machine)
BOUND = 0.1
TRIES = 3   # a gap can be the OS's (a loaded machine): the best of three tries counts


async def _best_of(start):
    gaps = []
    for _ in range(TRIES):
        gaps.append(await worst_gap(start, pause_gc=True))
        if gaps[-1] < BOUND:
            break
    return min(gaps), gaps


@pytest.fixture(scope="module")
def target():
    with running_servers({"worker": 1}) as servers:
        yield servers[("worker", 0)].target


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


async def test_a_256MB_feed_that_must_be_converted_does_not_stall_the_loop(target):
    x = tf.placeholder(tf.float32, [None], name="x")
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(x)
    feed = np.ones(64 * 2**20, np.int32)   # 256 MB, converted to float32 before it is sent
    async with tf.AsyncSession(target) as sess:
        assert await sess.run(total, {x: feed[:4]}) == 4.0

        async def run():
            assert await sess.run(total, {x: feed}) == feed.size

        best, gaps = await _best_of(run)
        assert best < BOUND, gaps


async def test_1000_concurrent_runs_are_admitted_in_slices(target):
    y = tf.placeholder(tf.float32, [], name="y")
    with tf.device("/job:worker/task:0"):
        doubled = y * 2.0
    async with tf.AsyncSession(target) as sess:
        assert await sess.run(doubled, {y: 1.0}) == 2.0
        admission = admission_for(asyncio.get_running_loop())
        queued = []

        async def burst():
            runs = asyncio.gather(*[sess.run(doubled, {y: float(i)}) for i in range(1000)])
            await asyncio.sleep(0)
            queued.append(admission.waiting())
            assert list(await runs) == [2.0 * i for i in range(1000)]

        best, gaps = await _best_of(burst)
        assert queued[0] >= 1000 - 2 * SLICE_RUNS, queued   # they waited their turns
        assert admission.waiting() == 0
        assert best < BOUND, gaps

"""Async client benchmark: requests/s of N concurrent AsyncSession runs against one
cluster, against the same count of sequential sync Session runs, in one run; and the
client loop's worst stall (a 1 ms heartbeat's longest gap) during a 256 MB feed, a 256 MB
fetch and 1,000 runs submitted at once (target: under 20 ms; the median of --stall-tries
tries). Client and servers are on one host: the 256 MB tensors go through shared memory
(``ZMTF_SHARED_MEMORY=0`` in the environment: over tcp).

The cluster (1 ps + 1 worker, tcp on 127.0.0.1) runs in subprocesses (python -m
zmtf.server), so client and servers do not share a GIL. The graph is `b = a + x` with `a`
on the ps and the step mastered by the worker: every request crosses two processes.
The stall cases run after ``gc.freeze()`` (as a long-running service does after start-up):
a full collection of a heap with numba in it takes ~200 ms whoever allocates.
Run: python bench/async_client.py [--requests 2000] [--concurrency 1,10,100] [--stall-tries 3]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import zmtf as tf
from zmtf.testing import free_tcp_ports as free_ports
from zmtf.testing.loop_watch import worst_gap




def start_cluster() -> tuple[tf.train.ClusterSpec, list[subprocess.Popen]]:
    ports = free_ports(2)
    spec = tf.train.ClusterSpec({"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]})
    procs = [subprocess.Popen([sys.executable, "-m", "zmtf.server", "--cluster", json.dumps(spec.as_dict()),
                               "--job", job, "--task", "0", "--log-level", "WARNING"])
             for job in ("ps", "worker")]
    return spec, procs


def build():
    with tf.device("/job:ps/task:0"):
        a = tf.Variable(1.0, name="a")
    x = tf.placeholder(tf.float32, [], name="x")
    with tf.device("/job:worker/task:0"):
        b = a + x
    return a, x, b


def sequential_sync(target: str, a, x, b, requests: int) -> float:
    with tf.Session(target) as sess:
        sess.run(a.initializer)
        for i in range(50):
            sess.run(b, {x: float(i)})
        start = time.perf_counter()
        for i in range(requests):
            sess.run(b, {x: float(i)})
        return requests / (time.perf_counter() - start)


async def concurrent_async(target: str, a, x, b, requests: int, concurrency: int) -> float:
    async with tf.AsyncSession(target) as sess:
        await sess.run(a.initializer)
        await asyncio.gather(*[sess.run(b, {x: float(i)}) for i in range(50)])
        queue = iter(range(requests))

        async def worker():
            for i in queue:
                await sess.run(b, {x: float(i)})

        start = time.perf_counter()
        await asyncio.gather(*[worker() for _ in range(concurrency)])
        return requests / (time.perf_counter() - start)


async def loop_stalls(target: str, tries: int) -> dict[str, list[float]]:
    """Worst gaps (s) per case, ``tries`` each: a 256 MB feed as float32 (sent from its own
    memory) and as int32 (converted to the placeholder's float32 first), 1,000 runs at once."""
    x = tf.placeholder(tf.float32, [None], name="stall_x")
    y = tf.placeholder(tf.float32, [], name="stall_y")
    with tf.device("/job:ps/task:0"):
        big = tf.Variable(tf.fill([64 * 2**20], 1.0), name="stall_big")
    with tf.device("/job:worker/task:0"):
        total = tf.reduce_sum(x)
        doubled = y * 2.0
    feeds = {"256 MB feed, float32": np.ones(64 * 2**20, np.float32),
             "256 MB feed, int32 -> float32": np.ones(64 * 2**20, np.int32)}
    gaps: dict[str, list[float]] = {}
    async with tf.AsyncSession(target) as sess:
        await sess.run(total, {x: np.ones(4, np.float32)})
        await asyncio.gather(*[sess.run(doubled, {y: float(i)}) for i in range(100)])
        gc.collect()
        gc.freeze()
        for name, feed in feeds.items():
            await sess.run(total, {x: feed})   # warm: first-touch pages, server buffers
            gaps[name] = [await worst_gap(lambda: sess.run(total, {x: feed})) for _ in range(tries)]
        await sess.run(big.initializer)
        await sess.run(big)   # warm
        gaps["256 MB fetch"] = [await worst_gap(lambda: sess.run(big)) for _ in range(tries)]

        async def burst():
            await asyncio.gather(*[sess.run(doubled, {y: float(i)}) for i in range(1000)])

        gaps["1,000 runs submitted at once"] = [await worst_gap(burst) for _ in range(tries)]
    return gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,10,100")
    parser.add_argument("--stall-tries", type=int, default=3,
                        help="tries per loop-stall case (0: skip them)")
    args = parser.parse_args()
    spec, procs = start_cluster()
    try:
        target = "zmtf://" + spec.task_address("worker", 0)
        a, x, b = build()
        deadline = time.time() + 30
        while True:  # wait for both servers
            try:
                with tf.Session(target) as sess:
                    sess.run(a.initializer, options=tf.RunOptions(timeout_in_ms=1000))
                break
            except tf.errors.OpError:
                if time.time() > deadline:
                    raise
        print(f"cpus: {os.cpu_count()}, requests per case: {args.requests}")
        sync_rate = sequential_sync(target, a, x, b, args.requests)
        print(f"{'sequential sync Session':<36}{sync_rate:>10,.0f} req/s   1.00x")
        for n in [int(c) for c in args.concurrency.split(",")]:
            rate = asyncio.run(concurrent_async(target, a, x, b, args.requests, n))
            print(f"{f'AsyncSession, {n} concurrent':<36}{rate:>10,.0f} req/s   {rate / sync_rate:.2f}x")
        if args.stall_tries > 0:
            print(f"client loop's worst stall (median of {args.stall_tries}; target < 20 ms):")
            stalls = asyncio.run(loop_stalls(target, args.stall_tries))
            for name, gaps in stalls.items():
                tries = ", ".join(f"{g * 1e3:.1f}" for g in gaps)
                print(f"  {name:<34}{statistics.median(gaps) * 1e3:>8.1f} ms   (tries: {tries})")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)


if __name__ == "__main__":
    main()

"""Async client benchmark: requests/s of N concurrent AsyncSession runs against one
cluster, against the same count of sequential sync Session runs, in one run.

The cluster (1 ps + 1 worker, tcp on 127.0.0.1) runs in subprocesses (python -m
zmtf.server), so client and servers do not share a GIL. The graph is `b = a + x` with `a`
on the ps and the step mastered by the worker: every request crosses two processes.
Run: python bench/async_client.py [--requests 2000] [--concurrency 1,10,100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

import zmtf as tf
from zmtf.testing import free_tcp_ports as free_ports




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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,10,100")
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
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait(10)


if __name__ == "__main__":
    main()

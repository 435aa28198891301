"""An asyncio service that answers requests by running a graph on a zmtf cluster.

It starts an in-process cluster (1 ps + 2 workers, zmtf.testing), serves a line protocol
on 127.0.0.1 with stdlib asyncio streams ("<x>\\n" -> "<score>\\n", where the score is a
small model whose weights live on the ps), then fires N concurrent client connections at
itself and reports throughput. The event loop never blocks: every run is awaited.
Run: python examples/async_service.py [--requests 500] [--concurrency 50] [--transport tcp]
"""

import argparse
import asyncio
import time

import numpy as np

import zmtf as tf
from zmtf.testing import local_cluster


def build_model():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.linspace(-1, 1, 16, dtype=np.float32).reshape(16, 1), name="w")
        b = tf.Variable(0.5, name="b")
    x = tf.placeholder(tf.float32, [], name="x")
    with tf.device("/job:worker/task:1"):
        features = tf.reshape(x * tf.ones([16]), [1, 16])
        score = tf.reduce_sum(tf.nn.sigmoid(tf.matmul(features, w) + b))
    return x, score


async def serve(sess, x, score, reader, writer):
    """One connection: read numbers line by line, answer each with the model's score."""
    while line := await reader.readline():
        try:
            value = await sess.run(score, {x: float(line)}, timeout=5.0)
            writer.write(f"{value:.6f}\n".encode())
        except (ValueError, tf.errors.OpError) as error:
            writer.write(f"error: {error}\n".encode())
        await writer.drain()
    writer.close()


async def client(port, values):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers = []
    for v in values:
        writer.write(f"{v}\n".encode())
        await writer.drain()
        answers.append(float(await reader.readline()))
    writer.close()
    await writer.wait_closed()
    return answers


async def main(args):
    async with local_cluster({"ps": 1, "worker": 2}, args.transport) as cluster:
        x, score = build_model()
        async with tf.AsyncSession(cluster.target("worker", 0)) as sess:
            await sess.run(tf.global_variables_initializer())
            server = await asyncio.start_server(lambda r, w: serve(sess, x, score, r, w), "127.0.0.1", 0)
            port = server.sockets[0].getsockname()[1]
            per_client = args.requests // args.concurrency
            values = [[float(i * per_client + k) / 100 for k in range(per_client)] for i in range(args.concurrency)]
            start = time.perf_counter()
            answers = await asyncio.gather(*[client(port, v) for v in values])
            elapsed = time.perf_counter() - start
            server.close()
            await server.wait_closed()
    w = np.linspace(-1, 1, 16, dtype=np.float32)
    expected = [[1 / (1 + np.exp(-(v * w.sum() + 0.5))) for v in vs] for vs in values]
    np.testing.assert_allclose(answers, expected, rtol=1e-5)
    total = args.concurrency * per_client
    print(f"{total} requests from {args.concurrency} concurrent clients in {elapsed:.2f} s: "
          f"{total / elapsed:,.0f} requests/s, all answers correct")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--transport", default="tcp", choices=["inproc", "tcp", "ipc"])
    asyncio.run(main(parser.parse_args()))

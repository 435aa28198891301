"""One task of a bench/cluster.py cluster, in its own process (started by cluster.py, not by hand).

    python bench/_cluster_task.py tf  --cluster JSON --job ps --task 0   # a TensorFlow gRPC server
    python bench/_cluster_task.py zmtf --cluster JSON --job ps --task 0  # same as python -m zmtf.server
    python bench/_cluster_task.py zmtf-tf1 --cluster JSON --job ps --task 0  # a TF1 script's
                                         # server = tf.train.Server(...); server.join()
    python bench/_cluster_task.py raw-ps     --port P                    # the pyzmq floor: "ps"
    python bench/_cluster_task.py raw-worker --port P --ps-port Q        # the pyzmq floor: "worker"

The raw pair is the floor of the bench: blocking pyzmq, no framework. The worker's ROUTER
takes a client request and forwards it to the ps over a DEALER, then answers the client
once the ps has answered:

    b"lat"            ps replies a 4-byte float32 ``a``; the worker replies ``a + 2``
    b"xfer" + nbytes  ps replies its float32 array of that size as 1 MiB parts of one
                      multipart message (copy=False); the worker sums the parts with numpy
                      and replies the 4-byte sum (the tiny ack)

Every role runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _procs import serve_tf, stop_on_signals  # noqa: E402 - bench/ is on sys.path (run as a script)

CHUNK = 1 << 20


def run_zmtf(cluster: str, job: str, task: int) -> None:
    from zmtf.server import main

    sys.exit(main(["--cluster", cluster, "--job", job, "--task", str(task), "--log-level", "WARNING"]))


def run_zmtf_tf1(cluster: str, job: str, task: int) -> None:
    """The task as TF1 scripts start theirs: ``tf.train.Server(...)`` in the script, then join."""
    import json

    import zmtf as tf

    stop_on_signals()
    server = tf.train.Server(tf.train.ClusterSpec(json.loads(cluster)), job_name=job, task_index=task)
    server.join()


def run_raw_ps(port: int) -> None:
    import numpy as np
    import zmq

    stop_on_signals()
    ctx = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(f"tcp://127.0.0.1:{port}")
    scalar = np.float32(1.0).tobytes()
    arrays: dict[int, list[memoryview]] = {}  # nbytes -> 1 MiB views of one pre-faulted array
    while True:
        ident, request = sock.recv_multipart()
        if request == b"lat":
            sock.send_multipart([ident, scalar])
            continue
        nbytes = int(request[4:])
        parts = arrays.get(nbytes)
        if parts is None:
            flat = memoryview(np.ones(nbytes // 4, np.float32).view(np.uint8))
            parts = arrays[nbytes] = [flat[i:i + CHUNK] for i in range(0, nbytes, CHUNK)]
        sock.send_multipart([ident, *parts], copy=False)


def run_raw_worker(port: int, ps_port: int) -> None:
    import numpy as np
    import zmq

    stop_on_signals()
    ctx = zmq.Context()
    front = ctx.socket(zmq.ROUTER)
    front.setsockopt(zmq.LINGER, 0)
    front.bind(f"tcp://127.0.0.1:{port}")
    ps = ctx.socket(zmq.DEALER)
    ps.setsockopt(zmq.LINGER, 0)
    ps.connect(f"tcp://127.0.0.1:{ps_port}")
    while True:
        ident, request = front.recv_multipart()
        ps.send(request)
        if request == b"lat":
            a = np.frombuffer(ps.recv(), np.float32)[0]
            front.send_multipart([ident, (a + np.float32(2.0)).tobytes()])
            continue
        frames = ps.recv_multipart(copy=False)
        total = np.float32(0.0)
        for frame in frames:
            total += np.frombuffer(frame.buffer, np.float32).sum()
        front.send_multipart([ident, np.float32(total).tobytes()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["tf", "zmtf", "zmtf-tf1", "raw-ps", "raw-worker"])
    parser.add_argument("--cluster", help="cluster spec as JSON (tf, zmtf, zmtf-tf1)")
    parser.add_argument("--job")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--port", type=int, help="port to bind (raw roles)")
    parser.add_argument("--ps-port", type=int, help="the raw ps's port (raw-worker)")
    args = parser.parse_args()
    if args.role == "tf":
        serve_tf(args.cluster, args.job, args.task)
    elif args.role == "zmtf":
        run_zmtf(args.cluster, args.job, args.task)
    elif args.role == "zmtf-tf1":
        run_zmtf_tf1(args.cluster, args.job, args.task)
    elif args.role == "raw-ps":
        run_raw_ps(args.port)
    else:
        run_raw_worker(args.port, args.ps_port)


if __name__ == "__main__":
    main()

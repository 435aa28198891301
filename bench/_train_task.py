"""One process of a bench/train.py run (started by train.py, not by hand).

    python bench/_train_task.py tf-server --cluster JSON --job ps --task 0   # a TensorFlow gRPC server
    python bench/_train_task.py zmtf-server --cluster JSON --job ps --task 0 # zmtf's, as a TF1 script
                                     # starts it: server = tf.train.Server(...); server.join()
    python bench/_train_task.py client --framework zmtf|tf --mode local       # one local training session
    python bench/_train_task.py client --framework zmtf|tf --mode cluster --cluster JSON --task I --ps 1

(zmtf's servers are ``python -m zmtf.server``, started by train.py directly, or zmtf-server.)

``--model cnn`` is bench/models.py's small CNN (2x conv 3x3 + relu + max_pool 2x2, dense
800-128-10, Adam) on 28x28x1 images: the example's 784-feature batches reshaped.
``--model big`` is the MLP 784-4096-4096-10 (20.1M parameters, 80 MB of float32) whose
parameters dominate a step: each step reads all of them from the ps tasks and sends their
gradients back. Its variables are made weights first (w0, w1, w2, then the biases) so that
replica_device_setter's round-robin over 2 ps puts w0 (12.8 MB) and w1 (67 MB) on different tasks.

A client builds the MLP of examples/train_mlp.py -- for zmtf the example's own functions,
for TensorFlow the same functions run against ``tensorflow.compat.v1`` (a second copy of the
example module whose ``tf`` is TensorFlow's), so both graphs are the same code: same shapes,
batch, initializers, MomentumOptimizer, replica_device_setter. In cluster mode the chief
(task 0) initializes the variables and the others wait for it (the example's wait_for_chief),
then each runs warm-up steps and prints ``@@ ready``. It then obeys lines on stdin:

    run N        run N training steps (sess.run([train_op, loss], feed)) and print
                 ``@@ {"start": .., "end": .., "cpu": .., "loss": ..}`` (perf_counter is
                 CLOCK_MONOTONIC, comparable across processes; cpu: process CPU s, all threads)
    profile N F  the same under cProfile (this thread), the stats dumped to file F
    quit         close the session and exit

The batches are generated once (a pool of the example's make_data batches, cycled), so the
steps measure the framework, not numpy's normal generator.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _procs import commands, say, serve_tf, stop_on_signals  # noqa: E402 - bench/ is on sys.path (run as a script)

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "train_mlp.py"


def load_example(framework: str):
    """examples/train_mlp.py as a module; for "tf" its global ``tf`` is tensorflow.compat.v1.
    Its folder goes on sys.path first: the example imports its neighbours (checkpointing,
    progress) as a script run from there would."""
    folder = str(EXAMPLE.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(f"train_mlp_{framework}", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if framework == "tf":
        import tensorflow.compat.v1 as tf1

        tf1.disable_eager_execution()
        module.tf = tf1  # the example's functions look ``tf`` up at call time
    return module


def local_graph(mlp, learning_rate: float):
    """The example's model with no device placement (one process, no cluster): the same
    variables as ``mlp.parameters`` (minus replica_device_setter), ``mlp.tower`` and the same
    optimizer as ``mlp.build_worker_graph``."""
    tf = mlp.tf
    graph = tf.Graph()
    with graph.as_default():
        params = {
            "w1": tf.Variable(tf.truncated_normal([mlp.FEATURES, mlp.HIDDEN], stddev=0.03, seed=1), name="w1"),
            "b1": tf.Variable(tf.zeros([mlp.HIDDEN]), name="b1"),
            "w2": tf.Variable(tf.truncated_normal([mlp.HIDDEN, mlp.CLASSES], stddev=0.06, seed=2), name="w2"),
            "b2": tf.Variable(tf.zeros([mlp.CLASSES]), name="b2"),
            "global_step": tf.train.get_or_create_global_step(),
        }
        images = tf.placeholder(tf.float32, [None, mlp.FEATURES], name="images")
        labels = tf.placeholder(tf.int64, [None], name="labels")
        loss, _accuracy = mlp.tower(params, images, labels)
        train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(loss, global_step=params["global_step"])
        init = tf.global_variables_initializer()
    return graph, images, labels, loss, train_op, init


BIG_LAYERS = (784, 4096, 4096, 10)


def big_worker_graph(tf, task: int, num_ps: int, learning_rate: float):
    """The 80 MB MLP, between-graph: variables on the ps tasks (replica_device_setter),
    the tower on this worker; MomentumOptimizer as the example's (its slots on the ps too)."""
    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=num_ps, worker_device=f"/job:worker/task:{task}")):
            pairs = list(zip(BIG_LAYERS[:-1], BIG_LAYERS[1:]))
            weights = [tf.Variable(tf.truncated_normal([m, n], stddev=m ** -0.5, seed=i + 1), name=f"w{i}")
                       for i, (m, n) in enumerate(pairs)]
            biases = [tf.Variable(tf.zeros([n]), name=f"b{i}") for i, (_, n) in enumerate(pairs)]
            global_step = tf.train.get_or_create_global_step()
            images = tf.placeholder(tf.float32, [None, BIG_LAYERS[0]], name="images")
            labels = tf.placeholder(tf.int64, [None], name="labels")
            x = images
            for i, (w, b) in enumerate(zip(weights, biases)):
                x = tf.matmul(x, w) + b
                if i < len(weights) - 1:
                    x = tf.nn.relu(x)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=x))
            train_op = tf.train.MomentumOptimizer(learning_rate, 0.9).minimize(loss, global_step=global_step)
        init = tf.global_variables_initializer()
        ready = [v.is_initialized() for v in tf.global_variables()]
    return graph, images, labels, loss, train_op, init, ready


def cnn_worker_graph(tf, task: int, num_ps: int):
    """bench/models.py's CNN, between-graph: variables (and Adam's slots) on the ps tasks by
    replica_device_setter, the tower on this worker."""
    from models import cnn_train_op   # bench/ is on sys.path (run as a script)

    graph = tf.Graph()
    with graph.as_default():
        with tf.device(tf.train.replica_device_setter(ps_tasks=num_ps, worker_device=f"/job:worker/task:{task}")):
            global_step = tf.train.get_or_create_global_step()
            images = tf.placeholder(tf.float32, [None, 784], name="images")
            labels = tf.placeholder(tf.int64, [None], name="labels")
            loss, train_op = cnn_train_op(tf, tf.reshape(images, [-1, 28, 28, 1]), labels, global_step)
        init = tf.global_variables_initializer()
        ready = [v.is_initialized() for v in tf.global_variables()]
    return graph, images, labels, loss, train_op, init, ready


def serve_zmtf(cluster: str, job: str, task: int) -> None:
    """A zmtf task as TF1 scripts start theirs: ``tf.train.Server(...)``, then ``join()``."""
    import zmtf as tf

    stop_on_signals()
    server = tf.train.Server(tf.train.ClusterSpec(json.loads(cluster)), job_name=job, task_index=task)
    server.join()


def serve_worker(framework: str, cluster: str, task: int):
    """Start /job:worker/task:<task> in this process (a TF1 trainer's own tf.train.Server)."""
    if framework == "tf":
        import tensorflow as tf

        return tf.distribute.Server(tf.train.ClusterSpec(json.loads(cluster)), job_name="worker",
                                    task_index=task, protocol="grpc", start=True)
    import zmtf

    return zmtf.train.Server(zmtf.train.ClusterSpec(json.loads(cluster)), job_name="worker",
                             task_index=task)


def run_client(args) -> None:
    mlp = load_example(args.framework)
    tf = mlp.tf
    if args.mode == "local":
        graph, images, labels, loss, train_op, init = local_graph(mlp, args.learning_rate)
        sess = tf.Session(graph=graph)
        sess.run(init)
    else:
        if args.model == "big":
            graph, images, labels, loss, train_op, init, ready = big_worker_graph(
                tf, args.task, args.ps, args.learning_rate)
        elif args.model == "cnn":
            graph, images, labels, loss, train_op, init, ready = cnn_worker_graph(tf, args.task, args.ps)
        else:
            graph, images, labels, loss, _acc, train_op, init, ready, _saver, _sync = \
                mlp.build_worker_graph(args.task, args.ps, args.learning_rate)
        if args.serve:   # TF1's between-graph idiom: this process is the worker task too
            server = serve_worker(args.framework, args.cluster, args.task)
            sess = tf.Session(server.target, graph=graph)
        else:
            address = json.loads(args.cluster)["worker"][args.task]
            scheme = "zmtf" if args.framework == "zmtf" else "grpc"
            sess = tf.Session(f"{scheme}://{address}", graph=graph)
        if args.task == 0:
            sess.run(init)
        else:
            mlp.wait_for_chief(sess, ready, timeout=300.0)
    pool = [mlp.make_data(seed=(100 + args.task) * 100000 + i, n=args.batch_size) for i in range(args.pool)]
    feeds = [{images: xs, labels: ys} for xs, ys in pool]
    fetches = [train_op, loss]
    counter = [0]

    def steps(n: int) -> float:
        value = float("nan")
        i = counter[0]
        for _ in range(n):
            _, value = sess.run(fetches, feeds[i % len(feeds)])
            i += 1
        counter[0] = i
        return float(value)

    steps(args.warmup)
    say("ready")
    for words in commands():
        n = int(words[1])
        profiler = None
        if words[0] == "profile":
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        cpu0, start = time.process_time(), time.perf_counter()
        last_loss = steps(n)
        end, cpu1 = time.perf_counter(), time.process_time()
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(words[2])
        say({"start": start, "end": end, "cpu": cpu1 - cpu0, "loss": last_loss, "steps": n})
    sess.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("role", choices=["tf-server", "zmtf-server", "client"])
    parser.add_argument("--cluster", help="cluster spec as JSON")
    parser.add_argument("--job", help="the job (tf-server, zmtf-server)")
    parser.add_argument("--model", choices=["small", "big", "cnn"], default="small",
                        help="small: the example's 784-256-10; big: 784-4096-4096-10 (80 MB); "
                        "cnn: bench/models.py's CNN")
    parser.add_argument("--task", type=int, default=0)
    parser.add_argument("--framework", choices=["zmtf", "tf"], default="zmtf")
    parser.add_argument("--mode", choices=["local", "cluster"], default="cluster")
    parser.add_argument("--ps", type=int, default=1)
    parser.add_argument("--serve", action="store_true",
                        help="run this worker task's server in the client's process (TF1's idiom)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--pool", type=int, default=16, help="distinct batches, cycled")
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    if args.role == "tf-server":
        serve_tf(args.cluster, args.job, args.task)
    elif args.role == "zmtf-server":
        serve_zmtf(args.cluster, args.job, args.task)
    else:
        run_client(args)


if __name__ == "__main__":
    main()

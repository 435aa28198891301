"""Models benchmark: a small CNN, a hand-unrolled LSTM, an embedding with sparse Adagrad, a
tf.data pipeline and the README's MLP, trained through the TF1 API by zmtf and by TensorFlow
(tf.compat.v1) side by side.

Every workload is written once against a ``tf`` module (``build_*`` below), so zmtf and
TensorFlow run the same graph-building code. Each framework lives in a child process of its
own (this script with ``--child zmtf|tf``; TensorFlow's from ``--tf-python``, by default
/work/tfvenv/bin/python when it exists, else this interpreter when it can import tensorflow)
that builds every workload once, then obeys ``run WORKLOAD SECONDS`` lines on stdin. The
driver alternates the two children round by round (rotating who goes first), so drift on a
noisy machine hits both, and prints the median steps/s of the rounds and the zmtf/TF ratio.

Run: python bench/models.py [--rounds 3] [--seconds 3] [--only cnn,lstm] [--no-tf]
The CNN trained by 2 workers on a ps (between-graph, replica_device_setter), TF beside it:
     python bench/train.py --model cnn --only 2
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

HERE = Path(__file__).resolve()
DEFAULT_TF_PYTHON = "/work/tfvenv/bin/python"
WORKLOADS = ("cnn", "cnn_1thread", "lstm", "embedding", "dataset", "mlp")
DESCRIPTIONS = {
    "cnn": "CNN 2x(conv3x3+relu+pool2x2)+2 dense, Adam, batch 64",
    "cnn_1thread": "same CNN, inter/intra op threads 1",
    "lstm": "LSTM 20 steps x 128 units, batch 32, SGD",
    "embedding": "embedding 100k x 64, 512 ids, sparse Adagrad",
    "dataset": "tf.data slices(100k x 32).map(v*2+1).batch(128)",
    "mlp": "MLP 784-256-10, batch 64, Momentum (the README's)",
}


# ---- the workloads: each returns (graph, init, fetch, feed, config) -----------------------------


def cnn_train_op(tf, images, labels, global_step=None):
    """The CNN on a [batch, 28, 28, 1] image tensor, its loss and Adam's training op:
    2x (conv2d 3x3 VALID + relu + max_pool 2x2) with 16 and 32 filters, dense 800-128-10.
    bench/_train_task.py builds the same model between-graph (variables on the ps)."""
    h = images
    for cin, cout in ((1, 16), (16, 32)):
        w = tf.Variable(tf.truncated_normal([3, 3, cin, cout], stddev=0.1))
        b = tf.Variable(tf.zeros([cout]))
        h = tf.nn.relu(tf.nn.conv2d(h, w, strides=[1, 1, 1, 1], padding="VALID") + b)
        h = tf.nn.max_pool(h, ksize=[1, 2, 2, 1], strides=[1, 2, 2, 1], padding="VALID")
    h = tf.reshape(h, [-1, 5 * 5 * 32])
    w1 = tf.Variable(tf.truncated_normal([800, 128], stddev=0.05))
    b1 = tf.Variable(tf.zeros([128]))
    h = tf.nn.relu(tf.matmul(h, w1) + b1)
    w2 = tf.Variable(tf.truncated_normal([128, 10], stddev=0.05))
    logits = tf.matmul(h, w2) + tf.Variable(tf.zeros([10]))
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    return loss, tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=global_step)


def build_cnn(tf, np, threads: int | None):
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [64, 28, 28, 1])
        y = tf.placeholder(tf.int32, [64])
        loss, train = cnn_train_op(tf, x, y)
        init = tf.global_variables_initializer()
    feed = {x: rng.random((64, 28, 28, 1), dtype=np.float32),
            y: rng.integers(0, 10, 64).astype(np.int32)}
    config = None
    if threads is not None:
        config = tf.ConfigProto(inter_op_parallelism_threads=threads,
                                intra_op_parallelism_threads=threads)
    return graph, init, [train, loss], feed, config


def build_lstm(tf, np):
    steps, units, batch, features = 20, 128, 32, 128
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        xs = [tf.placeholder(tf.float32, [batch, features]) for _ in range(steps)]
        target = tf.placeholder(tf.float32, [batch, units])
        w = tf.Variable(tf.truncated_normal([features + units, 4 * units], stddev=0.05))
        b = tf.Variable(tf.zeros([4 * units]))
        h = tf.zeros([batch, units])
        c = tf.zeros([batch, units])
        for x in xs:
            gates = tf.matmul(tf.concat([x, h], 1), w) + b
            i, f, g, o = tf.split(gates, 4, axis=1)
            c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)
            h = tf.sigmoid(o) * tf.tanh(c)
        loss = tf.reduce_mean(tf.square(h - target))
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {x: rng.random((batch, features), dtype=np.float32) for x in xs}
    feed[target] = rng.random((batch, units), dtype=np.float32)
    return graph, init, [train, loss], feed, None


def build_embedding(tf, np):
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        ids = tf.placeholder(tf.int64, [512])
        table = tf.Variable(tf.random_uniform([100_000, 64], -0.05, 0.05))
        rows = tf.nn.embedding_lookup(table, ids)
        loss = tf.reduce_mean(tf.square(rows - 0.5))
        train = tf.train.AdagradOptimizer(0.1).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {ids: rng.integers(0, 100_000, 512)}
    return graph, init, [train, loss], feed, None


def build_dataset(tf, np):
    data = np.random.default_rng(0).random((100_000, 32), dtype=np.float32)
    graph = tf.Graph()
    with graph.as_default():
        dataset = (tf.data.Dataset.from_tensor_slices(data).map(lambda v: v * 2 + 1)
                   .batch(128).repeat())
        batch = tf.data.make_one_shot_iterator(dataset).get_next()
        init = tf.no_op()
    return graph, init, batch, None, None


def build_mlp(tf, np):
    """examples/train_mlp.py's model and batch, for the per-node figures next to the others."""
    rng = np.random.default_rng(0)
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(0)
        x = tf.placeholder(tf.float32, [64, 784])
        y = tf.placeholder(tf.int32, [64])
        w1 = tf.Variable(tf.truncated_normal([784, 256], stddev=0.05))
        h = tf.nn.relu(tf.matmul(x, w1) + tf.Variable(tf.zeros([256])))
        logits = tf.matmul(h, tf.Variable(tf.truncated_normal([256, 10], stddev=0.05)))
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
        train = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss)
        init = tf.global_variables_initializer()
    feed = {x: rng.random((64, 784), dtype=np.float32), y: rng.integers(0, 10, 64).astype(np.int32)}
    return graph, init, [train, loss], feed, None


def build(tf, np, name: str):
    if name == "cnn":
        return build_cnn(tf, np, None)
    if name == "cnn_1thread":
        return build_cnn(tf, np, 1)
    return {"lstm": build_lstm, "embedding": build_embedding, "dataset": build_dataset,
            "mlp": build_mlp}[name](tf, np)


# ---- the child: one framework, every workload -----------------------------------------------------


def load_framework(framework: str):
    if framework == "zmtf":
        import zmtf

        return zmtf
    import tensorflow.compat.v1 as tf1

    tf1.disable_eager_execution()
    return tf1


def child(framework: str, names: list[str]) -> None:
    tf = load_framework(framework)   # first: zmtf lowers OpenBLAS's spin only if numpy is not loaded yet
    import numpy as np
    sessions = {}
    for name in names:
        graph, init, fetch, feed, config = build(tf, np, name)
        sess = tf.Session(graph=graph, config=config)
        sess.run(init)
        for _ in range(5):   # warm-up: kernels compiled, buffers pooled
            sess.run(fetch, feed_dict=feed)
        if framework == "zmtf":   # fused loops compile in the background from the third run
            from zmtf.runtime import fused_kernels
            fused_kernels.settle(300)
            sess.run(fetch, feed_dict=feed)
        sessions[name] = (sess, fetch, feed)
    print("@@ ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        sess, fetch, feed = sessions[words[1]]
        seconds = float(words[2])
        steps, start, cpu = 0, time.perf_counter(), time.process_time()
        while True:
            sess.run(fetch, feed_dict=feed)
            steps += 1
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        cpu_ms = (time.process_time() - cpu) * 1e3 / steps
        print("@@ " + json.dumps({"steps_per_s": steps / elapsed, "cpu_ms": cpu_ms}), flush=True)


# ---- the driver ----------------------------------------------------------------------------------


class Child:
    """A child process, driven by ``run`` lines; its answers are its ``@@ `` lines."""

    def __init__(self, python: str, framework: str, names: list[str]) -> None:
        self.framework = framework
        self.proc = subprocess.Popen(
            [python, str(HERE), "--child", framework, "--only", ",".join(names)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.answer()

    def answer(self) -> str:
        for line in self.proc.stdout:   # type: ignore[union-attr]
            if line.startswith("@@ "):
                return line[3:].strip()
        raise RuntimeError(f"the {self.framework} child exited ({self.proc.wait()})")

    def run(self, name: str, seconds: float) -> tuple[float, float]:
        """(steps/s, CPU ms per step of the whole process) over ``seconds`` of steps."""
        self.proc.stdin.write(f"run {name} {seconds}\n")   # type: ignore[union-attr]
        self.proc.stdin.flush()   # type: ignore[union-attr]
        answer = json.loads(self.answer())
        return float(answer["steps_per_s"]), float(answer["cpu_ms"])

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")   # type: ignore[union-attr]
            self.proc.stdin.close()   # type: ignore[union-attr]
        except OSError:
            pass
        self.proc.wait(timeout=60)


def tf_python(requested: str | None) -> str | None:
    if requested:
        return requested
    if os.path.exists(DEFAULT_TF_PYTHON):
        return DEFAULT_TF_PYTHON
    probe = subprocess.run([sys.executable, "-c", "import tensorflow"], capture_output=True)
    return sys.executable if probe.returncode == 0 else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=("zmtf", "tf"), help=argparse.SUPPRESS)
    parser.add_argument("--only", default=",".join(WORKLOADS), help="comma-separated workloads")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="per workload per round")
    parser.add_argument("--no-tf", action="store_true")
    parser.add_argument("--tf-python", help="the interpreter that imports TensorFlow")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    if args.child:
        child(args.child, names)
        return
    children = [Child(sys.executable, "zmtf", names)]
    python = None if args.no_tf else tf_python(args.tf_python)
    if python is not None:
        children.append(Child(python, "tf", names))
    else:
        print("TensorFlow not found: zmtf only")
    rates: dict[str, dict[str, list[float]]] = {c.framework: {n: [] for n in names} for c in children}
    cpu: dict[str, dict[str, list[float]]] = {c.framework: {n: [] for n in names} for c in children}
    try:
        for r in range(args.rounds):
            for name in names:
                order = children if r % 2 == 0 else children[::-1]
                for c in order:
                    rate, cpu_ms = c.run(name, args.seconds)
                    rates[c.framework][name].append(rate)
                    cpu[c.framework][name].append(cpu_ms)
    finally:
        for c in children:
            c.close()
    print(f"\n{'workload':<50}{'zmtf steps/s':>13}{'TF steps/s':>11}{'zmtf/TF':>8}"
          f"{'zmtf CPU ms':>12}{'TF CPU ms':>10}")
    for name in names:
        z, zc = statistics.median(rates["zmtf"][name]), statistics.median(cpu["zmtf"][name])
        if "tf" in rates:
            t, tc = statistics.median(rates["tf"][name]), statistics.median(cpu["tf"][name])
            tf_cells = f"{t:>11.1f}{z / t:>8.2f}{zc:>12.2f}{tc:>10.2f}"
        else:
            tf_cells = f"{'-':>11}{'-':>8}{zc:>12.2f}{'-':>10}"
        print(f"{DESCRIPTIONS[name]:<50}{z:>13.1f}{tf_cells}")
    print(f"(median of {args.rounds} interleaved rounds of {args.seconds:g} s each; CPU ms: all "
          f"threads of the process per step)")


if __name__ == "__main__":
    main()

"""Local-runtime benchmark: per-op overhead, trivial-run latency, kernel throughput in a session.

Prints zmtf next to numpy and, when importable, TensorFlow's local session (tf.compat.v1),
all measured in this one run; ratios compare within the run only. Medians of several reps.
Run: python bench/local.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

import zmtf  # noqa: E402


def load_tensorflow():
    try:
        import tensorflow.compat.v1 as tf1
    except ImportError:
        return None
    tf1.disable_eager_execution()
    return tf1


def median_time(fn, reps: int, inner: int = 1) -> float:
    fn()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(inner):
            fn()
        samples.append((time.perf_counter() - start) / inner)
    return statistics.median(samples)


def graph_cases(tf, n_ops: int, big: int, mat: int):
    """Build every case in a fresh graph of framework ``tf``; return {name: (fetch, feeds)}."""
    graph = tf.Graph()
    with graph.as_default():
        # a fed input keeps TensorFlow's grappler from constant-folding the op chains away
        seed = tf.placeholder(tf.float32, [], name="seed")
        x = seed
        for _ in range(n_ops):
            x = x + 1.0
        chain = x
        adds = [seed + float(i) for i in range(n_ops)]
        independent = tf.group(*adds)
        trivial = seed + 1.0
        a = tf.Variable(np.random.default_rng(0).random(big, dtype=np.float32))
        b = tf.Variable(np.random.default_rng(1).random(big, dtype=np.float32))
        m = tf.Variable(np.random.default_rng(2).random((mat, mat), dtype=np.float32))
        cases = {"chain": chain, "independent": independent, "trivial": trivial,
                 "add16M": a + b, "relu16M": tf.nn.relu(a - 0.5), "matmul": tf.matmul(m, m)}
        init = tf.global_variables_initializer()
    return graph, init, cases, seed


def measure(tf, label: str, args) -> dict[str, float]:
    graph, init, cases, seed = graph_cases(tf, args.ops, args.big, args.mat)
    results = {}
    feeds = {seed: 1.0}
    config = None
    if tf is not zmtf:
        # grappler folds "x + 1 + 1 + ..." into one op: turn it off so both run every node
        config = tf.ConfigProto()
        config.graph_options.rewrite_options.disable_meta_optimizer = True
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for name, fetch in cases.items():
            reps = args.reps if name in ("add16M", "relu16M", "matmul") else args.reps * 4
            results[name] = median_time(lambda: sess.run(fetch, feed_dict=feeds), reps)
    print(f"  measured {label}")
    return results


def numpy_baseline(args) -> dict[str, float]:
    rng = np.random.default_rng(0)
    a = rng.random(args.big, dtype=np.float32)
    b = rng.random(args.big, dtype=np.float32)
    m = rng.random((args.mat, args.mat), dtype=np.float32)
    return {"add16M": median_time(lambda: a + b, args.reps),
            "relu16M": median_time(lambda: np.maximum(a - 0.5, 0), args.reps),
            "matmul": median_time(lambda: m @ m, args.reps)}


def report(rows: dict[str, dict[str, float]], args) -> None:
    z = rows["zmtf"]
    print(f"\n{'case':<34}{'zmtf':>12}" + "".join(f"{k:>12}" for k in rows if k != "zmtf")
          + "   ratios (other / zmtf; >1 means zmtf is faster)")
    per_op = {"chain": args.ops, "independent": args.ops}
    for name in z:
        unit, scale = ("us/op", 1e6 / per_op[name]) if name in per_op else ("ms", 1e3)
        if name == "trivial":
            unit, scale = ("us/run", 1e6)
        cells = [f"{rows[k][name] * scale:>12.2f}" if name in rows[k] else f"{'-':>12}" for k in rows if k != "zmtf"]
        ratios = [f"{k} {rows[k][name] / z[name]:.2f}x" for k in rows if k != "zmtf" and name in rows[k]]
        print(f"{name + ' (' + unit + ')':<34}{z[name] * scale:>12.2f}" + "".join(cells) + "   " + ", ".join(ratios))
    print("(TensorFlow runs with grappler off, so that it executes every node of the chains)")
    gbs = 3 * args.big * 4 / 1e9
    print(f"\nadd16M zmtf throughput: {gbs / z['add16M']:.1f} GB/s (3 x {args.big * 4 / 1e6:.0f} MB moved)")
    print(f"matmul zmtf: {2 * args.mat ** 3 / z['matmul'] / 1e9:.1f} GFLOP/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few reps")
    parser.add_argument("--no-tf", action="store_true", help="skip TensorFlow even if installed")
    args = parser.parse_args()
    args.ops, args.big, args.mat, args.reps = (1000, 16 * 2**20, 1024, 7)
    if args.quick:
        args.ops, args.big, args.mat, args.reps = (200, 2**20, 256, 3)
    rows = {"zmtf": measure(zmtf, "zmtf", args)}
    tf1 = None if args.no_tf else load_tensorflow()
    if tf1 is not None:
        rows["tensorflow"] = measure(tf1, f"TensorFlow {tf1.__version__ if hasattr(tf1, '__version__') else ''}", args)
    else:
        print("  TensorFlow not installed (pip install -e .[bench]); comparing with numpy only")
    rows["numpy"] = numpy_baseline(args)
    report(rows, args)


if __name__ == "__main__":
    main()

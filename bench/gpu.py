"""GPU benchmark (needs a real GPU; under numba's simulator it only checks that it runs).

Prints elementwise add GB/s against the card's theoretical memory bandwidth (when the
driver reports it) and matmul TFLOP/s against numpy on the CPU and, when installed,
CuPy/cuBLAS, as ratios, all in one run. zmtf runs the ops in a session with inputs and
outputs pinned to /gpu:0 (variables on the GPU, a reduction fetched so no copy dominates).
Run: python bench/gpu.py [--n 67108864] [--m 4096] [--reps 10]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import zmtf as tf


def median(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def zmtf_cases(n: int, m: int, reps: int) -> dict[str, float]:
    tf.reset_default_graph()
    with tf.device("/gpu:0"):
        a = tf.Variable(tf.random_uniform([n], seed=1))
        b = tf.Variable(tf.random_uniform([n], seed=2))
        add = tf.reduce_sum(a + b)
        x = tf.Variable(tf.random_uniform([m, m], seed=3))
        mm = tf.reduce_sum(tf.matmul(x, x))
    config = tf.ConfigProto(device_count={"GPU": 1})
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        return {"add": median(lambda: sess.run(add), reps), "matmul": median(lambda: sess.run(mm), reps)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=64 * 2**20)
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    if not tf.test.is_gpu_available():
        print("no GPU visible to zmtf (python -m zmtf.devices); nothing to measure")
        return
    z = zmtf_cases(args.n, args.m, args.reps)
    add_gbs = 3 * args.n * 4 / z["add"] / 1e9
    flops = 2 * args.m ** 3
    print(f"zmtf add ({args.n} float32): {z['add'] * 1e3:.2f} ms, {add_gbs:.1f} GB/s (3 arrays moved)")
    print(f"zmtf matmul ({args.m}^2 float32): {z['matmul'] * 1e3:.2f} ms, {flops / z['matmul'] / 1e12:.2f} TFLOP/s")
    host = np.random.default_rng(0).random((min(args.m, 2048),) * 2, dtype=np.float32)
    t_np = median(lambda: host @ host, 3)
    np_tflops = 2 * host.shape[0] ** 3 / t_np / 1e12
    print(f"numpy CPU matmul ({host.shape[0]}^2): {np_tflops:.3f} TFLOP/s -> zmtf GPU is "
          f"{flops / z['matmul'] / 1e12 / np_tflops:.1f}x")
    try:
        import cupy
    except ImportError:
        print("CuPy not installed: no cuBLAS baseline")
        return
    dx = cupy.random.random((args.m, args.m), dtype=cupy.float32)

    def cublas() -> None:
        (dx @ dx).sum().get()

    t_cu = median(cublas, args.reps)
    print(f"cuBLAS matmul: {flops / t_cu / 1e12:.2f} TFLOP/s -> zmtf/cuBLAS {t_cu / z['matmul']:.2f}x")


if __name__ == "__main__":
    main()

"""GPU benchmark (needs a real GPU; under numba's simulator it only checks that it runs).

Prints, in one run and as ratios:
* elementwise ``a + b`` (then summed, so only a scalar comes home) GB/s at several sizes,
  against the card's theoretical memory bandwidth (from the driver's clock and bus width)
  and against CuPy doing the same two ops, when CuPy is installed;
* matmul TFLOP/s (float32) against numpy on the CPU and CuPy/cuBLAS;
* the GPU allocator after training an MLP (784-256-10, batch 100) for 1,000 steps on
  /gpu:0: bytes in use, peak, reserved, and fragmentation (1 - largest free chunk / free
  bytes), against the same after the first step.
zmtf runs each op in a session with its variables and the op pinned to /gpu:0, so a step
is a session call: launch and session overhead are part of what is measured.
Run: python bench/gpu.py [--sizes 1048576,16777216,268435456] [--m 4096] [--reps 20]
     python bench/gpu.py --memory-only --mlp 16,8,4 --mlp-batch 8 --mlp-steps 20  (simulator)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import zmtf as tf


#: The GPU share zmtf's sessions take (the first session reserves it for the process), so
#: CuPy's baselines in the same process have the rest of the card (--memory-fraction).
MEMORY_FRACTION = [0.5]


def gpu_config(allow_growth: bool = False, allow_soft_placement: bool = False) -> tf.ConfigProto:
    return tf.ConfigProto(device_count={"GPU": 1}, allow_soft_placement=allow_soft_placement,
                          gpu_options=tf.GPUOptions(per_process_gpu_memory_fraction=MEMORY_FRACTION[0],
                                                    allow_growth=allow_growth))


def median(fn, reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def zmtf_add(n: int, reps: int) -> float:
    tf.reset_default_graph()
    with tf.device("/gpu:0"):
        a = tf.Variable(tf.random_uniform([n], seed=1))
        b = tf.Variable(tf.random_uniform([n], seed=2))
        total = tf.reduce_sum(a + b)
    with tf.Session(config=gpu_config()) as sess:
        sess.run(tf.global_variables_initializer())
        expected = float(np.sum(sess.run(a), dtype=np.float64) + np.sum(sess.run(b), dtype=np.float64))
        got = float(sess.run(total))
        assert abs(got - expected) <= 1e-3 * abs(expected), (got, expected)
        return median(lambda: sess.run(total), reps)


def zmtf_matmul(m: int, reps: int) -> float:
    tf.reset_default_graph()
    with tf.device("/gpu:0"):
        x = tf.Variable(tf.random_uniform([m, m], seed=3))
        total = tf.reduce_sum(tf.matmul(x, x))
    with tf.Session(config=gpu_config()) as sess:
        sess.run(tf.global_variables_initializer())
        host = sess.run(x).astype(np.float64)
        expected = float((host @ host).sum())
        got = float(sess.run(total))
        assert abs(got - expected) <= 1e-3 * abs(expected), (got, expected)
        return median(lambda: sess.run(total), reps)


def mlp_memory(layers: list[int], steps: int, batch: int, growth: bool) -> tuple[dict, dict, float]:
    """Train an MLP on /gpu:0 for ``steps`` steps; the GPU allocator's stats after the first
    step and after the last, and the seconds per step."""
    from zmtf.runtime.gpu_memory import memory_stats

    tf.reset_default_graph()
    rng = np.random.default_rng(0)
    xs = rng.random((batch, layers[0]), dtype=np.float32)
    labels = rng.integers(0, layers[-1], size=batch)
    with tf.device("/gpu:0"):
        x = tf.placeholder(tf.float32, [None, layers[0]])
        y = tf.placeholder(tf.int64, [None])
        h = x
        for i, (n_in, n_out) in enumerate(zip(layers, layers[1:])):
            w = tf.Variable(tf.random_normal([n_in, n_out], stddev=0.05, seed=i + 1))
            b = tf.Variable(tf.zeros([n_out]))
            h = tf.matmul(h, w) + b
            if i < len(layers) - 2:
                h = tf.nn.relu(h)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=h))
        step = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
    # soft placement: the few ops without a GPU kernel (gradient shape helpers) go to the CPU
    # (gpu_options count only when this is the process's first GPU session: --memory-only)
    config = gpu_config(allow_growth=growth, allow_soft_placement=True)
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        feed = {x: xs, y: labels}
        sess.run(step, feed)
        first = memory_stats("GPU:0")
        start = time.perf_counter()
        for _ in range(steps - 1):
            sess.run(step, feed)
        per_step = (time.perf_counter() - start) / max(1, steps - 1)
        return first, memory_stats("GPU:0"), per_step


def print_mlp_memory(layers: list[int], steps: int, batch: int, growth: bool) -> None:
    first, last, per_step = mlp_memory(layers, steps, batch, growth)

    def line(s: dict) -> str:
        return (f"in use {s['bytes_in_use'] / 2**20:.2f} MiB, peak {s['peak_bytes_in_use'] / 2**20:.2f} "
                f"MiB, reserved {s['bytes_reserved'] / 2**20:.0f} MiB in {s['regions']} region(s), "
                f"largest free chunk {s['largest_free_block_bytes'] / 2**20:.2f} of "
                f"{s['bytes_free'] / 2**20:.2f} MiB free, fragmentation {s['fragmentation']:.4f}")

    name = "-".join(map(str, layers))
    print(f"MLP {name}, batch {batch}, on /gpu:0, {steps} steps ({per_step * 1e3:.2f} ms/step): "
          f"GPU allocator{' (allow_growth)' if growth else ''}")
    print(f"  after step {1:>5}: {line(first)}")
    print(f"  after step {steps:>5}: {line(last)}")


def theoretical_bandwidth() -> float | None:
    """Bytes/s the card's memory can move (double data rate x bus width), or None."""
    try:
        from numba import cuda

        device = cuda.get_current_device()
        clock_hz = device.MEMORY_CLOCK_RATE * 1e3
        return 2 * clock_hz * device.GLOBAL_MEMORY_BUS_WIDTH / 8
    except Exception:  # noqa: BLE001 - the simulator, or a driver without the attributes
        return None


def cupy_or_none():
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=f"{2**20},{2**24},{2**28}")
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--memory-fraction", type=float, default=0.5,
                        help="per_process_gpu_memory_fraction of zmtf's sessions (the rest: CuPy)")
    parser.add_argument("--mlp", default="784,256,10", help="the MLP's layer widths")
    parser.add_argument("--mlp-steps", type=int, default=1000)
    parser.add_argument("--mlp-batch", type=int, default=100)
    parser.add_argument("--allow-growth", action="store_true",
                        help="the MLP's session grows GPU memory on demand (with --memory-only)")
    parser.add_argument("--memory-only", action="store_true",
                        help="only the allocator after MLP training (fits the simulator)")
    args = parser.parse_args()
    if not tf.test.is_gpu_available():
        print("no GPU visible to zmtf (python -m zmtf.devices); nothing to measure")
        return
    layers = [int(n) for n in args.mlp.split(",")]
    MEMORY_FRACTION[0] = args.memory_fraction
    if args.memory_only:
        print_mlp_memory(layers, args.mlp_steps, args.mlp_batch, args.allow_growth)
        return
    cupy = cupy_or_none()
    peak = theoretical_bandwidth()
    print(f"card memory bandwidth: {peak / 1e9:.0f} GB/s (theoretical)" if peak else
          "card memory bandwidth: not reported by the driver")
    for n in (int(s) for s in args.sizes.split(",")):
        moved = 4 * n * 4     # a+b reads 2 arrays, writes 1; the sum reads it again
        t = zmtf_add(n, args.reps)
        line = f"add+sum n={n:>10}: zmtf {t * 1e3:8.3f} ms {moved / t / 1e9:7.1f} GB/s"
        if peak:
            line += f" ({moved / t / peak:.0%} of peak)"
        if cupy is not None:
            a = cupy.random.random(n, dtype=cupy.float32)
            b = cupy.random.random(n, dtype=cupy.float32)
            t_cu = median(lambda: float((a + b).sum()), args.reps)
            line += f"; CuPy {t_cu * 1e3:8.3f} ms {moved / t_cu / 1e9:7.1f} GB/s -> zmtf/CuPy {t_cu / t:.2f}x"
            del a, b
        print(line)
    flops = 2 * args.m ** 3
    t = zmtf_matmul(args.m, max(3, args.reps // 4))
    print(f"matmul {args.m}^2 float32: zmtf {t * 1e3:.2f} ms, {flops / t / 1e12:.2f} TFLOP/s")
    host = np.random.default_rng(0).random((min(args.m, 2048),) * 2, dtype=np.float32)
    t_np = median(lambda: host @ host, 3)
    np_tflops = 2 * host.shape[0] ** 3 / t_np / 1e12
    print(f"numpy CPU matmul ({host.shape[0]}^2): {np_tflops:.3f} TFLOP/s -> zmtf GPU is "
          f"{flops / t / 1e12 / np_tflops:.1f}x")
    if cupy is None:
        print("CuPy not installed: no CuPy/cuBLAS baseline")
    else:
        dx = cupy.random.random((args.m, args.m), dtype=cupy.float32)
        t_cu = median(lambda: float((dx @ dx).sum()), max(3, args.reps // 4))
        print(f"cuBLAS matmul (CuPy, float32, default math mode): {flops / t_cu / 1e12:.2f} TFLOP/s "
              f"-> zmtf/cuBLAS {t_cu / t:.2f}x")
        del dx
    print_mlp_memory(layers, args.mlp_steps, args.mlp_batch, args.allow_growth)


if __name__ == "__main__":
    main()

"""Break-even of a thread hop: when does handing a node to the inter-op pool pay on this machine?

The executor runs a ready node inline unless another is ready too and the node is expensive
(runtime/executor.py, EXPENSIVE_ELEMENTS and EXPENSIVE_MULTIPLY_ADDS): then it goes to the
pool and the two run side by side. This measures, for two independent ops of one size, the
wall time of running both on this thread against handing one to a ThreadPoolExecutor thread
and running the other here (then waiting), for elementwise adds (by elements) and matrix
products (by multiply-adds), interleaved, medians of many pairs. The hop pays from the
smallest size whose ratio stays below 1.
Run: python bench/offload.py [--reps 200]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # the executor's small products: one BLAS thread

import numpy as np  # noqa: E402


def pair_times(op, reps: int, pool: ThreadPoolExecutor) -> tuple[float, float]:
    """Median seconds for two runs of ``op``: both inline, and one handed to ``pool``."""
    inline, hopped = [], []
    for _ in range(reps):
        start = time.perf_counter()
        op()
        op()
        inline.append(time.perf_counter() - start)
        start = time.perf_counter()
        done = threading.Event()
        pool.submit(lambda: (op(), done.set()))
        op()
        done.wait()
        hopped.append(time.perf_counter() - start)
    return statistics.median(inline), statistics.median(hopped)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=200)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    pool = ThreadPoolExecutor(1)
    pool.submit(lambda: None).result()
    print(f"{'op':<28}{'inline us':>11}{'hopped us':>11}{'hopped/inline':>15}")
    for shift in range(10, 22, 2):
        a, b = rng.random(1 << shift, dtype=np.float32), rng.random(1 << shift, dtype=np.float32)
        inline, hopped = pair_times(functools.partial(np.add, a, b), args.reps, pool)
        print(f"{'add 2^%d elements' % shift:<28}{inline * 1e6:>11.1f}{hopped * 1e6:>11.1f}"
              f"{hopped / inline:>15.2f}")
    for m, k, n in ((32, 64, 64), (32, 128, 128), (32, 256, 256), (32, 256, 512), (64, 256, 512), (64, 512, 512),
                    (128, 512, 512)):
        x, w = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
        inline, hopped = pair_times(functools.partial(np.matmul, x, w), args.reps, pool)
        macs = m * k * n
        print(f"{'matmul %dx%dx%d (2^%.1f)' % (m, k, n, np.log2(macs)):<28}{inline * 1e6:>11.1f}"
              f"{hopped * 1e6:>11.1f}{hopped / inline:>15.2f}")
    pool.shutdown()


if __name__ == "__main__":
    main()

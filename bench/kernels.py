"""CPU kernel throughput: zmtf kernels vs numpy on the same arrays, in one run.

Elementwise (Add, Mul, Relu, Exp, and Sum for reference) on 16M float32, and MatMul on
1024^2 and 2048^2 float32. Each case is timed ``--reps`` times, alternating zmtf and numpy
call by call so both see the same machine noise; medians are printed with the ratio
numpy/zmtf (> 1: zmtf is faster). The baseline is what a user would write: ``np.add(a, b)``
allocating its output, ``np.maximum(a, 0)``, ``a @ b``.

The first zmtf call of each case (numba compile, or loading it from the on-disk cache) is
excluded from the medians and printed separately. ``--cold`` points NUMBA_CACHE_DIR at an
empty temporary directory first, so those first calls are true compiles.

Run: .venv/bin/python bench/kernels.py [--reps N] [--threads N] [--cold]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("NUMBA_THREADING_LAYER", "threadsafe")
# Sleeping OpenMP workers: a spinning numba pool would steal cycles from OpenBLAS (TOOLCHAIN §3).
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

N_ELEMENTS = 16 * 1024 * 1024
MATMUL_SIZES = (1024, 2048)


class _Ctx:
    """The slice of the runtime's kernel context that these kernels use."""

    def __init__(self, threads: int) -> None:
        self.intra_op_threads = threads
        self.resources = None


def _time(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _bench_pair(
    zmtf_fn: Callable[[], Any], numpy_fn: Callable[[], Any], reps: int
) -> tuple[float, float, float]:
    """(first zmtf call, median zmtf, median numpy) in seconds; the first calls are warm-ups."""
    first = _time(zmtf_fn)
    numpy_fn()
    zmtf_times, numpy_times = [], []
    for _ in range(reps):
        zmtf_times.append(_time(zmtf_fn))
        numpy_times.append(_time(numpy_fn))
    return first, statistics.median(zmtf_times), statistics.median(numpy_times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cold", action="store_true", help="compile into an empty numba cache")
    args = parser.parse_args()
    if args.cold:
        os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="zmtf-bench-numba-")

    import numba
    import numpy as np

    import zmtf.kernels as kernels
    from zmtf.kernels.cpu import _jit

    ctx = _Ctx(args.threads)
    rng = np.random.default_rng(0)
    a = rng.standard_normal(N_ELEMENTS, dtype=np.float32)
    b = rng.standard_normal(N_ELEMENTS, dtype=np.float32)

    def op(op_type: str, inputs: list, **attrs: Any) -> Callable[[], Any]:
        fn = kernels.lookup(op_type, "CPU", inputs[0].dtype.name)
        attrs["_node_name"] = op_type.lower()
        return lambda: fn(ctx, inputs, attrs)

    zero = np.float32(0)
    cases: list[tuple[str, Callable[[], Any], Callable[[], Any], float, str]] = [
        ("Add     16M f32", op("Add", [a, b]), lambda: np.add(a, b), 3 * a.nbytes, "GB/s"),
        ("Mul     16M f32", op("Mul", [a, b]), lambda: np.multiply(a, b), 3 * a.nbytes, "GB/s"),
        ("Relu    16M f32", op("Relu", [a]), lambda: np.maximum(a, zero), 2 * a.nbytes, "GB/s"),
        ("Exp     16M f32", op("Exp", [a]), lambda: np.exp(a), 2 * a.nbytes, "GB/s"),
        ("Sum     16M f32", op("Sum", [a], axis=None, keep_dims=False), lambda: np.sum(a),
         a.nbytes, "GB/s"),
    ]
    for n in MATMUL_SIZES:
        m1 = rng.standard_normal((n, n), dtype=np.float32)
        m2 = rng.standard_normal((n, n), dtype=np.float32)
        cases.append((
            f"MatMul {n}^2 f32",
            op("MatMul", [m1, m2], transpose_a=False, transpose_b=False),
            lambda m1=m1, m2=m2: np.matmul(m1, m2),
            2.0 * n**3,
            "GFLOP/s",
        ))

    cache = "on" if _jit.CACHE else "off"
    if args.cold:
        cache = "cold, in " + os.environ["NUMBA_CACHE_DIR"]
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, numba {numba.__version__}, "
          f"{os.cpu_count()} CPUs, intra_op_threads={args.threads}, reps={args.reps}, "
          f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}, numba cache {cache}, "
          f"numpy->numba threshold {_jit.PARALLEL_MIN_ELEMENTS} elements")
    header = (f"{'case':17} {'first call':>11} {'zmtf':>10} {'numpy':>10} {'numpy/zmtf':>10}"
              f"   {'zmtf rate':>16} {'numpy rate':>16}")
    print(header)
    print("-" * len(header))
    for name, zmtf_fn, numpy_fn, work, unit in cases:
        first, z, n = _bench_pair(zmtf_fn, numpy_fn, args.reps)
        scale = 1e-9
        print(f"{name:17} {first * 1e3:9.1f}ms {z * 1e3:8.2f}ms {n * 1e3:8.2f}ms {n / z:10.2f}x"
              f"   {work * scale / z:9.1f} {unit:6} {work * scale / n:9.1f} {unit:6}")
    print("first call = numba compile (or on-disk cache load) + one run; excluded from medians")


if __name__ == "__main__":
    main()

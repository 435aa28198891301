"""The one place that decides how CPU kernels are compiled with numba, and on how many threads.

Policy (measured on the 2-vCPU target; see bench/kernels.py):

* ``nogil=True`` always, so kernels run in parallel on the runtime's device threads.
* ``fastmath`` off: results must not depend on reassociation. Reductions get their SIMD
  speed from explicit accumulator lanes instead (see reduce.py).
* ``error_model="numpy"``: float division by zero gives inf/nan as in TF and numpy, and LLVM
  can vectorize divisions (no zero-check branch). Integer division by zero is checked by
  the kernel before it gets here.
* Compilation is lazy (first call with a new signature); importing compiles nothing.
* ``cache=True`` only where numba can write its cache without surprises: the package
  directory is writable (cache lands in ``zmtf/kernels/cpu/__pycache__``) or
  ``NUMBA_CACHE_DIR`` is set. Otherwise caching is off: numba would raise at decoration
  time ("no locator available") and break ``import zmtf``.

Only plain module-level functions may be cached. A closure made by a factory, or a
function that takes another jitted function as an argument, never hits the cache (the key
holds unstable pickles) and leaves a new ``.nbc`` file behind on every run: don't.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np

#: Element count at which an elementwise or reduction kernel leaves numpy for the parallel
#: numba kernel. Measured for a float32 add (numpy allocating its output vs. numba):
#: with libgomp's default spin-waiting, a prange launch costs ~2 us and numba wins from
#: ~64K elements (4.3 vs 4.6 us at 64K, 19 vs 34 us at 256K). With OMP_WAIT_POLICY=passive
#: (set in tests, and advisable when BLAS shares the cores) waking the sleeping workers
#: costs ~40-60 us, and the crossover moves to ~1M elements.
PARALLEL_MIN_ELEMENTS: int = (
    1 << 20 if os.environ.get("OMP_WAIT_POLICY", "").strip().lower() == "passive" else 1 << 16
)

#: dtypes that take the numba path; everything else (float16, small ints, bool) stays on numpy.
NUMBA_DTYPES: frozenset[str] = frozenset({"float32", "float64", "int32", "int64"})
#: the same as numpy dtypes: ``dtype in`` this is a C-level hash, where ``dtype.name`` is a
#: Python property of numpy's (~1 us, paid per call by every kernel that asks)
NUMBA_NP_DTYPES: frozenset[np.dtype] = frozenset(np.dtype(name) for name in NUMBA_DTYPES)


# NOTE: the runtime calls parallel kernels from several device threads at once. On numba's
# fallback "workqueue" threading layer that aborts the process (SIGABRT, TOOLCHAIN §3);
# "threadsafe" picks omp or tbb, or raises a clear error instead. Only when nobody chose.
if "NUMBA_THREADING_LAYER" not in os.environ and numba.config.THREADING_LAYER == "default":
    numba.config.THREADING_LAYER = "threadsafe"


def _cache_wanted() -> bool:
    """True when numba can write its cache next to this file or into NUMBA_CACHE_DIR."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return True
    here = Path(__file__).resolve().parent
    pycache = here / "__pycache__"
    target = pycache if pycache.is_dir() else here
    return os.access(target, os.W_OK | os.X_OK)


CACHE: bool = _cache_wanted()


def jit(*, parallel: bool = False) -> Callable[[Callable[..., Any]], Any]:
    """``numba.njit`` with the house policy; ``parallel=True`` for kernels with a ``prange``."""

    def decorate(fn: Callable[..., Any]) -> Any:
        options: dict[str, Any] = dict(
            nogil=True, parallel=parallel, fastmath=False, error_model="numpy"
        )
        try:
            return numba.njit(cache=CACHE, **options)(fn)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, **options)(fn)

    return decorate


def scalar(fn: Callable[..., Any]) -> Any:
    """A jitted scalar helper, inlined into the kernel loops that call it."""
    return numba.njit(inline="always", error_model="numpy")(fn)


def thread_count(ctx: Any) -> int:
    """Threads a parallel kernel may use: ``ctx.intra_op_threads`` within numba's limits."""
    wanted = getattr(ctx, "intra_op_threads", None)
    if not wanted:
        return numba.get_num_threads()
    return max(1, min(int(wanted), numba.config.NUMBA_NUM_THREADS))


def use_threads(ctx: Any) -> None:
    """Make the calling thread's parallel kernels use ``thread_count(ctx)`` threads.

    numba's thread count is per Python thread, so each runtime device thread sets its own;
    ``set_num_threads`` is called only when the value changes.
    """
    wanted = thread_count(ctx)
    if numba.get_num_threads() != wanted:
        numba.set_num_threads(wanted)


def takes_numba_path(*arrays: np.ndarray) -> bool:
    """True when the arrays share a numba dtype, are C-contiguous, and one of them is large."""
    if max(a.size for a in arrays) < PARALLEL_MIN_ELEMENTS:
        return False
    dtype = arrays[0].dtype
    return dtype in NUMBA_NP_DTYPES and all(
        a.dtype == dtype and a.flags.c_contiguous for a in arrays
    )

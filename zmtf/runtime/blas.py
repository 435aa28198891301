"""How many threads numpy's BLAS (OpenBLAS) may use: TF's intra_op_parallelism_threads.

Matmul runs in numpy's OpenBLAS, whose own threads busy-wait between calls. With several
zmtf processes on few cores (a ps, workers and clients on one machine) that spinning took
most of the CPU: 46 ms of CPU per training step on a worker, 5 ms with one BLAS thread
(bench/train.py). zmtf applies ``intra_op_parallelism_threads`` to BLAS when it is set.
"""

from __future__ import annotations

import ctypes
import logging

log = logging.getLogger("zmtf.runtime")

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


def _openblas() -> ctypes.CDLL | None:
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower()
                            and line.split()[-1].startswith("/")})
    except OSError:
        return None
    for path in paths:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def set_blas_threads(threads: int) -> bool:
    """Limit OpenBLAS to ``threads`` (process-wide); False if no OpenBLAS is found."""
    if threads <= 0:
        return False
    lib = _openblas()
    for name in _SETTERS:
        setter = getattr(lib, name, None) if lib is not None else None
        if setter is not None:
            setter(ctypes.c_int(threads))
            log.info("BLAS limited to %d thread(s) (intra_op_parallelism_threads)", threads)
            return True
    return False

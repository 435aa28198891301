"""How many threads numpy's BLAS (OpenBLAS) may use: TF's intra_op_parallelism_threads.

Matmul runs in numpy's OpenBLAS, whose own threads busy-wait between calls. With several
zmtf processes on few cores (a ps, workers and clients on one machine) that spinning took
most of the CPU: 46 ms of CPU per training step on a worker, 5 ms with one BLAS thread
(bench/train.py). So:

* ``intra_op_parallelism_threads`` caps BLAS threads when it is set (``set_blas_threads``);
* products below ~268 MFLOP run on one BLAS thread (``use_threads_for``): waking a sleeping
  BLAS thread on a machine with anything else running costs more than it saves below that
  (SINGLE_THREAD_FLOPS), and the executor already runs independent ops side by side;
* ``import zmtf`` lowers OpenBLAS's spin before sleeping (OPENBLAS_THREAD_TIMEOUT, unless
  set, and only if numpy was not imported first) from ~0.1 s to a few cycles.
"""

from __future__ import annotations

import ctypes
import logging
import os
from typing import Any

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


_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")

#: products below this many flops (2*m*n*k) run on one BLAS thread, in a local Session and in
#: a server alike. With OPENBLAS_THREAD_TIMEOUT low (below) a second BLAS thread sleeps
#: between products, and waking it costs a scheduler slice once anything else runs on the
#: machine. Measured on 2 vCPUs at load ~3 (one product, wall, 2 threads / 1): 2^24.6 flops
#: 60x, 2^26.6 27x, 2^28.1 1.2x, 2^29 3.7x, 2^30 2.1x, 2^31 0.56x; bench/models.py's CNN 8.4
#: -> 6.6 ms of CPU per step (wall 8.1 -> 6.7) and the MLP 1.3 -> 0.77 ms with this bar
#: instead of 2^24. On an idle machine threads win from ~2^26 (the example MLP's steps were
#: 1,220 -> 1,575/s with them): 2^28 bounds that loss, and products past it (a 64x4096x4096
#: layer is 2^31) keep their threads.
SINGLE_THREAD_FLOPS = 1 << 28


class _Blas:
    """The process's OpenBLAS thread setting: the cap, and what is set right now."""

    def __init__(self) -> None:
        self.loaded = False
        self.setter: Any = None
        self.cap = 0        # threads big products may use
        self.current = 0    # threads OpenBLAS uses now

    def load(self) -> None:
        if self.loaded:
            return
        self.loaded = True
        lib = _openblas()
        if lib is None:
            return
        self.setter = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        if self.setter is not None and getter is not None:
            self.cap = self.current = int(getter())

    def use(self, threads: int) -> None:
        if threads != self.current and self.setter is not None:
            self.setter(ctypes.c_int(threads))
            self.current = threads


_BLAS = _Blas()


def set_blas_threads(threads: int) -> bool:
    """Limit OpenBLAS to ``threads`` (process-wide); False if no OpenBLAS is found."""
    if threads <= 0:
        return False
    _BLAS.load()
    if _BLAS.setter is None:
        return False
    _BLAS.cap = threads
    _BLAS.use(threads)
    log.info("BLAS limited to %d thread(s) (intra_op_parallelism_threads)", threads)
    return True


def use_threads_for(flops: int) -> None:
    """Before a BLAS call of ``flops``: one thread for a small product, the cap otherwise.
    Process-wide and unsynchronized on purpose: a race only costs speed, never results."""
    blas = _BLAS
    if not blas.loaded:
        blas.load()
    if blas.cap > 1:
        threads = 1 if flops < SINGLE_THREAD_FLOPS else blas.cap
        if threads != blas.current:   # every product asks: no call when nothing changes
            blas.use(threads)


def for_server(intra_op_threads: int, tasks_on_machine: int = 1) -> None:
    """A server process: products past SINGLE_THREAD_FLOPS get this machine's cores shared
    out among the cluster's tasks on it, unless its config asks for intra-op threads
    explicitly (then the machine is assumed its own).
    Two workers on 2 cores with 2 BLAS threads each spent 302 ms of CPU per step of a
    784-4096-4096-10 MLP, 166 ms with one each (bench/train.py --model big: 5.4 -> 8.7
    steps/s); the second thread mostly waits for a core the other worker holds."""
    if intra_op_threads > 0:
        return
    share = max(1, len(os.sched_getaffinity(0)) // max(1, tasks_on_machine))
    _BLAS.load()
    if _BLAS.setter is not None and share < _BLAS.cap:
        _BLAS.cap = share
        _BLAS.use(share)
        log.info("BLAS limited to %d thread(s): %d tasks of the cluster share this machine's "
                 "cores (intra_op_parallelism_threads overrides)", share, tasks_on_machine)


def threads_cap() -> int:
    """The threads a big product may use in this process (0: no OpenBLAS found)."""
    _BLAS.load()
    return _BLAS.cap

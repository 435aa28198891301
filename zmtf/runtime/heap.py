"""Keep freed heap memory in the process: a server reuses it on the next step.

A received tensor arrives as 1 MiB zmq frames that libzmq mallocs and frees every step.
glibc returns the freed top of the heap to the OS once it exceeds ``M_TRIM_THRESHOLD``
(2x the largest recent chunk, a few MB), so the next step faults every page in again:
16 MiB moved at 1.4-1.7 GB/s over loopback tcp against 3.8 GB/s with trimming off, on
the same 2-vCPU VM (TF keeps its memory in its own BFC allocator for the same reason).

``keep_freed_memory()`` raises the trim threshold (and keeps allocations below the mmap
threshold on the heap). It is for server processes (``python -m zmtf.server`` calls it),
and ``keep_freed_memory_for_steps()`` applies it when a process opens its first local
Session: a training step frees and mallocs the same few-MB activations every step (a
64x26x26x16 float32 is 2.7 MB), and with glibc's dynamic thresholds each came back as fresh
pages. The small CNN of bench/models.py: 20-22 ms of CPU per step with glibc's defaults,
13 ms with memory kept. The cost is that the process's RSS stays at its peak, as TF's does
under its BFC allocator. ``ZMTF_TUNE_PROCESS=0`` opts out (the test suite sets it). Only
glibc has ``mallopt``; on other C libraries it does nothing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import os
import sys
from typing import Any, Iterator

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

DEFAULT_TRIM_THRESHOLD_BYTES = 128 << 10   # glibc's own
TRIM_THRESHOLD_BYTES = 1 << 30   # return freed memory to the OS only beyond 1 GiB at the top
MMAP_THRESHOLD_BYTES = 32 << 20  # glibc's own maximum for its dynamic threshold

log = logging.getLogger("zmtf.heap")


def keep_freed_memory() -> bool:
    """Tune glibc malloc for a long-running server; True if it applied."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):   # musl and others: no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    applied = (mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
               and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1)
    global _kept
    _kept = applied
    log.debug("malloc tuning %s", "applied" if applied else "refused")
    return applied


_kept = False   # whether keep_freed_memory() applied in this process

#: the environment variable that opts a process out of tuning (distributed/process_tuning.py)
TUNE_ENV = "ZMTF_TUNE_PROCESS"


def keep_freed_memory_for_steps() -> bool:
    """keep_freed_memory() once per process for local steps, unless ZMTF_TUNE_PROCESS=0;
    True if the process keeps freed memory (now or already)."""
    global _asked
    if not _asked:
        _asked = True
        if os.environ.get(TUNE_ENV, "1").strip() != "0":
            keep_freed_memory()
    return _kept


_asked = False   # whether keep_freed_memory_for_steps() has decided already


@contextlib.contextmanager
def returning_freed_memory() -> Iterator[None]:
    """Within it, memory freed goes back to the OS (glibc's default trim threshold), and on
    leaving, the heap's free pages go back too (``malloc_trim``): for a server that frees
    much at once (closed sessions' graphs). Freed chunks that merge into a thread arena's top
    are handed back only as they are freed, under a low threshold; malloc_trim does not
    trim those tops. The server's threshold is restored on leaving."""
    libc = _libc()
    if _kept and libc is not None:
        libc.mallopt(M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD_BYTES)
    try:
        yield
    finally:
        if libc is not None:
            libc.malloc_trim(0)
            if _kept:
                libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)


def _libc() -> Any:
    """glibc with mallopt and malloc_trim typed, or None (another C library, another OS)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc

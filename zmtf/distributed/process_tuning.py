"""One process setup for every server, however it was started.

A server process runs the same steps for days; Python's and glibc's defaults suit short
scripts. So when the first server of a process starts (``python -m zmtf.server``, an
Estimator's task, or ``server = tf.train.Server(cluster, job_name=..., task_index=...)``
in a TF1 script), zmtf tunes the process once:

* ``gc.freeze()``: what import and start-up made lives as long as the process; the cyclic
  GC stops scanning it;
* ``gc.set_threshold(20_000, 20, 20)``: a step allocates a few hundred objects; collect the
  young generation every ~50 steps rather than every few;
* glibc keeps freed memory (``runtime/heap.keep_freed_memory``): a received tensor's 1 MiB
  frames reuse the heap instead of faulting pages in every step (64 MiB ps -> worker: 1.85
  against 2.47 GB/s, issue 26).

BLAS threads need no step here: every server's start caps them (``ServerCore.start``).
The cost: objects frozen are never freed, even if the script drops them later, and the
process's RSS stays at its peak. A process that is mainly something else (a test suite, a
notebook) opts out with ``tf.train.Server(..., tune_process=False)``,
``python -m zmtf.server --no-tune-process`` or ``ZMTF_TUNE_PROCESS=0``.
"""

from __future__ import annotations

import gc
import logging
import threading
from dataclasses import dataclass

from zmtf.runtime.heap import TUNE_ENV, keep_freed_memory

ENV = TUNE_ENV   # one name for the opt-out: runtime/heap.py
GC_THRESHOLD = (20_000, 20, 20)

log = logging.getLogger("zmtf.distributed")


@dataclass(frozen=True)
class ProcessTuning:
    """What tune_process did to this process."""

    gc_frozen: int            # objects moved to the GC's permanent generation
    gc_threshold: tuple[int, int, int]
    malloc_keeps_freed: bool  # glibc's trim/mmap thresholds raised (False: not glibc)


_applied: ProcessTuning | None = None
_lock = threading.Lock()


def tune_process() -> ProcessTuning:
    """Tune this process for serving, once; later calls return the first one's record."""
    global _applied
    with _lock:
        if _applied is None:
            gc.freeze()
            gc.set_threshold(*GC_THRESHOLD)
            kept = keep_freed_memory()
            _applied = ProcessTuning(gc.get_freeze_count(), GC_THRESHOLD, kept)
            log.info("Tuned this process for serving (GC: %d objects frozen, thresholds %s; "
                     "malloc keeps freed memory: %s); tune_process=False or %s=0 opts out",
                     _applied.gc_frozen, GC_THRESHOLD, kept, ENV)
        return _applied


def applied() -> ProcessTuning | None:
    """This process's tuning, or None while no server has tuned it."""
    return _applied


__all__ = ["ENV", "ProcessTuning", "applied", "tune_process"]

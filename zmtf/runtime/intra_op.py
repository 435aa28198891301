"""The intra-op helper thread behind kernels/cpu/parts.py: the calling thread and one helper
thread take a kernel's parts from a shared counter until none is left. Importing this
module installs it (``parts.install``); zmtf.runtime imports it with its executor.

Why this shape (issue 29, the small CNN on 2 vCPUs): its step is a chain of convolutions
that one thread runs end to end, so on a quiet machine the second core idled while TF spread
the step over both. A part is a batch chunk of a convolution's im2col + GEMM (one OpenBLAS
thread each, see blas.SINGLE_THREAD_FLOPS), or half of a big product (matmul.SPLIT_MIN_FLOPS); both release the GIL. A thread running
a part, or a node beside the step's critical path (runtime/weight_gradients_beside.py), runs
the kernels inside it on one worker (``inside_part``, ``one_worker``).
The helper is used only while the machine has about half a core to spare (``_Spare``,
/proc/stat's idle time plus the helper's own): on a busy machine two threads cost ~10% more
CPU per CNN step for no wall time (measured with one busy loop beside it: CPU 8.6 -> 9.7
ms, wall 15.5 -> 15.1 ms).
The caller never waits for the helper to *start*: if the helper is slow to wake (a busy
machine), the caller runs every part itself and only waits for a part the helper has
already claimed. So the work and its results never depend on the helper running; the price
on a busy machine is one queue hand-off per kernel call.

Parts must write disjoint outputs (or separate buffers the caller combines in order), so the
values are the same bits whoever runs which part.
"""

from __future__ import annotations

import itertools
import os
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from zmtf.kernels.cpu import parts
from zmtf.kernels.cpu.parts import Part


class _Inside(threading.local):
    """Whether this thread is running a part (parts._Installed.inside)."""

    part = False


_INSIDE = _Inside()


def inside_part() -> bool:
    return _INSIDE.part


@contextmanager
def one_worker() -> Iterator[None]:
    """Kernels called inside keep their parts on this thread (``inside_part``): the thread
    runs a part of a split, or a node beside the step's critical path
    (runtime/weight_gradients_beside.py) while the other core runs that path."""
    outer = _INSIDE.part
    _INSIDE.part = True
    try:
        yield
    finally:
        _INSIDE.part = outer


class _Job:
    """One kernel call's parts; ``busy`` is held while the helper runs one of them."""

    __slots__ = ("fn", "count", "next", "busy", "error")

    def __init__(self, fn: Part, count: int) -> None:
        self.fn, self.count = fn, count
        self.next = itertools.count()   # next() is atomic under the GIL
        self.busy = threading.Lock()
        self.error: BaseException | None = None

    def work(self, worker: int) -> None:
        with one_worker():
            while (k := next(self.next)) < self.count:
                self.fn(k, worker)

    def help(self) -> None:
        with self.busy:
            try:
                self.work(1)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
                self.error = exc


class _Helper:
    """The process's helper thread, started on first use (and again after a fork)."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.start_lock = threading.Lock()

    def submit(self, job: _Job) -> None:
        if self.thread is None:
            with self.start_lock:
                if self.thread is None:
                    thread = threading.Thread(target=self._loop, name="zmtf-intra-op", daemon=True)
                    thread.start()
                    self.thread = thread
        self.jobs.put(job)

    def _loop(self) -> None:
        np.seterr(all="ignore")   # like quiet_fp on the calling thread; numpy's state is per thread
        while True:
            self.jobs.get().help()

    def forget(self) -> None:
        """In a forked child: the parent's thread is not there; start a new one when needed."""
        self.jobs = queue.SimpleQueue()
        self.thread = None
        self.start_lock = threading.Lock()


class _Spare:
    """Whether the machine had spare CPU lately: idle cores (all of /proc/stat's idle and
    iowait time) plus the cores the helper itself took, over the last ``PERIOD`` seconds,
    at least ``MIN_CORES``. Counting the helper's own time keeps a quiet machine quiet when
    the helper is what fills it. Without /proc/stat: always spare."""

    PERIOD = 0.2
    MIN_CORES = 0.5

    def __init__(self) -> None:
        self.at = 0.0
        self.idle = self.total = -1
        self.helper_cpu = 0.0
        self.spare = True

    def __call__(self, helper: threading.Thread | None) -> bool:
        now = time.monotonic()
        if now - self.at >= self.PERIOD:
            self.sample(now, helper)
        return self.spare

    def sample(self, now: float, helper: threading.Thread | None) -> None:
        try:
            with open("/proc/stat", "rb") as stat:
                fields = stat.readline().split()[1:]
            idle, total = int(fields[3]) + int(fields[4]), sum(int(f) for f in fields[:8])
            cpu = 0.0
            if helper is not None and helper.ident is not None:
                cpu = time.clock_gettime(time.pthread_getcpuclockid(helper.ident))
        except (OSError, ValueError, IndexError, AttributeError):
            self.at, self.spare = now, True
            return
        if self.total >= 0 and total > self.total:
            cores = os.cpu_count() or 1
            seconds = max(now - self.at, 1e-3)
            idle_cores = (idle - self.idle) / (total - self.total) * cores
            helper_cores = max(cpu - self.helper_cpu, 0.0) / seconds
            self.spare = idle_cores + helper_cores >= self.MIN_CORES
        self.at, self.idle, self.total, self.helper_cpu = now, idle, total, cpu


_HELPER = _Helper()
_SPARE = _Spare()


def _forget() -> None:
    _HELPER.forget()
    _SPARE.__init__()   # type: ignore[misc]


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


def spare() -> bool:
    """Whether the machine has CPU to spare for the helper now (``_Spare``)."""
    return _SPARE(_HELPER.thread)


def run_on_two(count: int, fn: Part) -> None:
    """``fn(k, worker)`` for k in range(count) on this thread and the helper; returns when
    every part is done; a part's exception is raised here."""
    job = _Job(fn, count)
    _HELPER.submit(job)
    try:
        job.work(0)
    finally:
        with job.busy:   # the part the helper claimed, if any, is done
            pass
    if job.error is not None:
        raise job.error


parts.install(run_on_two, spare, inside_part)

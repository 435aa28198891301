"""Intra-op parallelism for a kernel split into independent parts (batch chunks of a
convolution): ``run_parts`` runs them on the calling thread and, when the runtime has
installed its helper thread (zmtf/runtime/intra_op.py: kernels start no threads) and the
machine has CPU to spare, on that helper too.

Why (issue 29, the small CNN on 2 vCPUs): its step is a chain of convolutions that one
thread ran end to end, so on a quiet machine the second core idled while TF spread the step
over both. Parts must write disjoint outputs (or separate buffers the caller combines in
order), so the values are the same bits whoever runs which part.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable
from time import perf_counter

from zmtf.kernels.cpu import blas

#: a part's function: (part index, worker 0 = the calling thread or 1 = the helper)
Part = Callable[[int, int], None]

#: workers a kernel may split its parts over (the caller and one helper): the 2-vCPU target
#: gains from the second; more helpers would only wait for cores there.
WORKERS = 2
#: ``ZMTF_INTRA_OP=0`` keeps every kernel on its calling thread
ENABLED = os.environ.get("ZMTF_INTRA_OP", "1").strip() != "0"


class _Installed:
    """What the runtime installed: the two-thread runner, its spare-CPU test, and whether
    this thread keeps its parts to itself: it runs a part of a two-worker split (a kernel
    called inside one keeps its own parts on its thread: the other worker is busy with the
    other part), or a node beside the step's critical path
    (runtime/weight_gradients_beside.py: the other core runs that path)."""

    run: Callable[[int, Part], None] | None = None
    spare: Callable[[], bool] | None = None
    inside: Callable[[], bool] = staticmethod(lambda: False)


def install(run: Callable[[int, Part], None], spare: Callable[[], bool], inside: Callable[[], bool]) -> None:
    """Called by zmtf.runtime.intra_op when it is imported."""
    _Installed.run, _Installed.spare, _Installed.inside = run, spare, inside


def workers_for(count: int, key: Hashable = None) -> int:
    """How many workers ``count`` parts get: 2 (this thread and the helper) when there are
    two parts or more, this thread is not running a part itself, a helper is installed,
    the process's BLAS cap (TF's intra_op_parallelism_threads, or a server's share of the
    machine's cores) is above 1, the machine has CPU to spare and, for a ``key`` (a kernel
    and its shapes), two workers have been timed faster than one on it lately
    (``_Timings``); else 1."""
    spare = _Installed.spare
    if count < 2 or spare is None or not ENABLED or _Installed.inside() or blas.threads_cap() < 2:
        return 1
    if not spare():
        return 1
    return WORKERS if key is None else _TIMINGS.choose(key)


class _Timing:
    __slots__ = ("one", "two", "calls")

    def __init__(self) -> None:
        self.one = self.two = 0.0   # smoothed wall seconds of a call with 1 / 2 workers
        self.calls = 0


class _Timings:
    """Whether two workers win, per kernel and shapes, measured on this machine now: /proc/stat
    cannot see a container's CPU quota, two vCPUs that share a core, or a neighbour thrashing
    memory (a slow state seen here: copies 6-14x slower, where two threads took 75-82 steps/s
    of the CNN and one 108). The first call of a key runs on one worker, the second on two;
    after that the faster kind (two only if under ``WIN`` of one), and every
    ``PROBE_EVERY``-th call the other kind, so the choice follows the machine."""

    PROBE_EVERY = 16
    WIN = 0.9
    ALPHA = 0.25      # weight of the newest call in the smoothed times
    MAX_KEYS = 1024   # then all are forgotten at once

    def __init__(self) -> None:
        self.by_key: dict[Hashable, _Timing] = {}

    def choose(self, key: Hashable) -> int:
        timing = self.by_key.get(key)
        if timing is None:
            if len(self.by_key) >= self.MAX_KEYS:
                self.by_key.clear()
            timing = self.by_key[key] = _Timing()
        timing.calls += 1
        if not timing.one:
            return 1
        if not timing.two:
            return WORKERS
        two_win = timing.two < self.WIN * timing.one
        if timing.calls % self.PROBE_EVERY == 0:
            two_win = not two_win
        return WORKERS if two_win else 1

    def record(self, key: Hashable, workers: int, seconds: float) -> None:
        timing = self.by_key.get(key)
        if timing is None:
            return
        if workers >= 2:
            timing.two = seconds if not timing.two else timing.two + self.ALPHA * (seconds - timing.two)
        else:
            timing.one = seconds if not timing.one else timing.one + self.ALPHA * (seconds - timing.one)


_TIMINGS = _Timings()


def run_keyed(key: Hashable, count: int, body: Callable[[int], None]) -> None:
    """``body(workers)`` with ``workers_for(count, key)`` workers, its wall time kept under
    ``key`` for the next calls' choice. Inside a part (see ``_Installed``): one worker,
    untimed (a time taken beside another kernel says nothing of the kernel alone)."""
    if _Installed.inside():
        body(1)
        return
    workers = workers_for(count, key)
    start = perf_counter()
    body(workers)
    _TIMINGS.record(key, workers, perf_counter() - start)


def run_parts(count: int, fn: Part, workers: int) -> None:
    """``fn(k, worker)`` for k in range(count): on this thread alone if ``workers`` is 1
    (see ``workers_for``) or no helper is installed, else on this thread and the helper.
    Returns when every part is done; a part's exception is raised here."""
    run = _Installed.run
    if workers < 2 or count < 2 or run is None:
        for k in range(count):
            fn(k, 0)
        return
    run(count, fn)

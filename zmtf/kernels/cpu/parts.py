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
from collections.abc import Callable

from zmtf.kernels.cpu import blas

#: a part's function: (part index, worker 0 = the calling thread or 1 = the helper)
Part = Callable[[int, int], None]

#: workers a kernel may split its parts over (the caller and one helper): the 2-vCPU target
#: gains from the second; more helpers would only wait for cores there.
WORKERS = 2
#: ``ZMTF_INTRA_OP=0`` keeps every kernel on its calling thread
ENABLED = os.environ.get("ZMTF_INTRA_OP", "1").strip() != "0"


class _Installed:
    """What the runtime installed: the two-thread runner and its spare-CPU test."""

    run: Callable[[int, Part], None] | None = None
    spare: Callable[[], bool] | None = None


def install(run: Callable[[int, Part], None], spare: Callable[[], bool]) -> None:
    """Called by zmtf.runtime.intra_op when it is imported."""
    _Installed.run, _Installed.spare = run, spare


def workers_for(count: int) -> int:
    """How many workers ``count`` parts get: 2 (this thread and the helper) when there are
    two parts or more, a helper is installed, the process's BLAS cap (TF's
    intra_op_parallelism_threads, or a server's share of the machine's cores) is above 1
    and the machine has CPU to spare; else 1."""
    spare = _Installed.spare
    if count < 2 or spare is None or not ENABLED or blas.threads_cap() < 2:
        return 1
    return WORKERS if spare() else 1


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

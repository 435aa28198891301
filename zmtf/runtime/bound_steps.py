"""BoundSteps: the plan-and-bind of one graph, cached by step signature.

The local session and a worker's registered partition both turn (fetches, feeds, targets)
into a ``BoundStep`` the executor runs: planned by a ``StepPlanner`` (placement, sticky
devices, the placement log), its kernels looked up once by ``bind``. Both keep the result
for every later run of that signature; this class is that one path.
"""

from __future__ import annotations

import threading
from typing import Any, Hashable, Sequence

from zmtf.framework.graph import Operation, Tensor
from zmtf.placement.plan import StepPlanner
from zmtf.runtime.executor import BoundStep, KernelLookup, bind


class BoundSteps:
    """Bound steps by signature key. ``steps`` is read directly on the hot path (a hit is a
    dict lookup); ``bind`` plans and binds a miss, under a lock (sessions are shared by
    threads). ``fuse``: bind's elementwise fusion switch. ``limit``: the cache is emptied when it grows past it (a caller that keys by
    object identity would otherwise keep dead graphs' steps)."""

    def __init__(self, planner: StepPlanner, devices: Sequence[str], lookup: KernelLookup,
                 resources: Any, limit: int | None = None, fuse: bool | None = None) -> None:
        self.planner = planner
        self.devices = list(devices)
        self.lookup = lookup
        self.resources = resources
        self.limit = limit
        self.fuse = fuse   # elementwise fusion (runtime.fusion); None: the ZMTF_FUSION default
        self.steps: dict[Hashable, BoundStep] = {}
        self._lock = threading.Lock()

    def bind(self, key: Hashable, fetches: Sequence[Tensor], feeds: Sequence[Tensor],
             targets: Sequence[Operation]) -> BoundStep:
        """The bound step of ``key``: made now (plan, then bind) unless it is cached."""
        with self._lock:
            step = self.steps.get(key)
            if step is None:
                plan = self.planner.plan(fetches, feeds, targets, self.devices)
                step = bind(plan, self.lookup, self.resources, self.fuse)
                if self.limit is not None and len(self.steps) > self.limit:
                    self.steps.clear()
                self.steps[key] = step
        return step

"""What the master keeps per client session: its graph and planner, and per step signature
the partitions it registered with the tasks (``StepSetup``)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from zmtf.distributed.peers import WorkerPeer
from zmtf.framework.graph import Graph
from zmtf.placement.partition import TaskPartition
from zmtf.placement.plan import StepPlanner


@dataclass
class StepSetup:
    """Partitions of one (fetches, feeds, targets) signature, registered with their tasks."""

    graph_key: str
    parts: dict[str, TaskPartition]
    fetch_names: list[str]
    feed_names: list[str]
    peers: dict[str, WorkerPeer]                # the other tasks of ``parts``
    devices: dict[str, str] = field(default_factory=dict)   # node -> device the master placed it on
    deferred: TaskPartition | None = None       # the master's own, started after the replies
    start_first: list[TaskPartition] = field(default_factory=list)   # the others, remote first

    def __post_init__(self) -> None:
        own = [p for p in self.parts.values() if p.deferred]
        self.deferred = own[0] if own and len(self.parts) > 1 else None
        self.start_first = [p for p in self.parts.values() if p is not self.deferred]


@dataclass
class MasterSession:
    """One client session: its graph, its planner (placements stick per session, as in TF),
    its partitions per signature, and the (task, graph key) pairs registered for it."""

    handle: str
    graph: Graph
    config: dict[str, Any]
    planner: StepPlanner
    setups: dict[tuple, StepSetup] = field(default_factory=dict)
    registered: set[tuple[str, str]] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last_used: float = field(default_factory=time.monotonic)   # its client's last request

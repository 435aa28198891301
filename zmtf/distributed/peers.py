"""WorkerPeer: another task of the cluster as this one calls it, one method per request.

The master registers partitions with a peer's worker, runs them, cleans a failed step up and
forgets a closed session; a worker pushes tensors to a peer; a server asks a peer for its
devices or has it clear its variables. Each is a typed method here (its message, its timeout
and how its reply is read), so the callers never build wire messages or choose calls by name.
"""

from __future__ import annotations

import functools
import operator
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Protocol

import numpy as np

from zmtf.distributed import transit
from zmtf.distributed.trace_clock import onto_master
from zmtf.runtime.step_stats import from_plain, wall_now
from zmtf.wire import messages as m

if TYPE_CHECKING:
    from zmtf.distributed.futures import Deferred

CONTROL_TIMEOUT = 30.0   # seconds for RegisterGraph and the like
CLEANUP_TIMEOUT = 2.0    # CleanupStep is best effort: its target may be the task that died
#: the first of a Reset's containers when a master passes a reset on: clear, do not pass on
LOCAL_RESET = "__local__"


class Calls(Protocol):
    """What a peer needs of a channel to its task (the transport's Channel)."""

    def call(self, message: Any, timeout: float) -> Awaitable[Any]: ...

    def request(self, message: Any, timeout: float,
                unwrap: Callable[[Any], Any] | None = None) -> Deferred: ...

    def send_only(self, message: Any) -> None: ...

    def unavailable(self) -> Exception | None: ...


class WorkerPeer:
    """One other task, reached through ``channel(task)`` (asked on every call: a channel is
    replaced when its peer's server restarts in this process)."""

    __slots__ = ("task", "_channel")

    def __init__(self, task: str, channel: Callable[[str], Calls]) -> None:
        self.task = task
        self._channel = channel

    def unavailable(self) -> Exception | None:
        """UnavailableError naming the task if its connection dropped and is not back."""
        try:
            return self._channel(self.task).unavailable()
        except Exception as error:  # noqa: BLE001 - no channel can be made: that is the answer
            return error

    # ---- the worker service ---------------------------------------------------------
    async def register_graph(self, session: str, graph_key: str, graph: dict,
                             arrays: list[np.ndarray], isolated: bool = False) -> None:
        await self._channel(self.task).call(
            m.RegisterGraph(session=session, graph_key=graph_key, graph=graph, tensors=arrays,
                            isolated=int(isolated)),
            CONTROL_TIMEOUT)

    async def deregister_session(self, session: str) -> None:
        """Forget every graph the session registered there."""
        await self._channel(self.task).call(m.DeregisterGraph(session=session, graph_key=""),
                                            CONTROL_TIMEOUT)

    async def cleanup_step(self, step_id: int) -> None:
        await self._channel(self.task).call(m.CleanupStep(step_id=step_id), CLEANUP_TIMEOUT)

    def run_graph(self, session: str, graph_key: str, step_id: int, feeds: list[str],
                  fetches: list[str], targets: list[str], values: list[np.ndarray],
                  timeout: float, trace: list | None = None) -> Deferred:
        """A Deferred of the partition's output tensors. With ``trace`` (a list) the peer's
        node timings are added to it. The peer keeps the deadline (the budget travels, not
        a time: clocks differ); ours is a little later, for a peer that never answers, and
        still before the client's own (a second after the deadline)."""
        unwrap = (_tensors_of if trace is None
                  else functools.partial(_traced, self.task, trace, wall_now()))
        return self._channel(self.task).request(
            m.RunGraph(session=session, graph_key=graph_key, step_id=step_id, feeds=feeds,
                       fetches=fetches, targets=targets, tensors=values,
                       timeout_ms=int(timeout * 1000), trace_level=int(trace is not None),
                       sent_us=transit.stamp()),
            timeout + min(0.5, timeout / 2), unwrap=unwrap)

    def push_tensors(self, step_id: int, keys: list[str], values: list[np.ndarray]) -> None:
        """Hand tensors for the peer's Recvs to the socket; no reply is awaited."""
        self._channel(self.task).send_only(m.PushTensor(step_id=step_id, keys=keys, tensors=values))

    # ---- the server -------------------------------------------------------------------
    async def ping(self, timeout: float) -> None:
        """Whether the task is up: UnavailableError if it cannot be reached in ``timeout`` s."""
        await self._channel(self.task).call(m.Ping(), timeout)

    async def list_devices(self, timeout: float) -> list[dict[str, Any]]:
        """The devices the peer knows of, its own first."""
        reply = await self._channel(self.task).call(m.ListDevices(), timeout)
        return list(reply.devices)

    async def reset_own(self, containers: list[str]) -> None:
        """Clear the peer's named containers, not asking it to pass it on to the cluster."""
        await self._channel(self.task).call(m.Reset(containers=[LOCAL_RESET, *containers]),
                                            CONTROL_TIMEOUT)


_tensors_of = operator.attrgetter("tensors")   # a RunGraphResult's values: the untraced reply


def _traced(task: str, trace: list, sent: float, reply: Any) -> Any:
    """A traced RunGraphResult's values; its node timings join the step's ``trace``, moved
    onto this task's clock (``sent``: when the RunGraph left, on that clock)."""
    received = wall_now()
    from_plain(reply.step_stats, task)   # checked; kept plain (wall-clock already)
    trace.extend(onto_master(reply.step_stats, sent, received))
    return reply.tensors

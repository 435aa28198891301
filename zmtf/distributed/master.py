"""MasterService: client sessions, placement across the cluster, partitions, steps.

Per session it keeps the client's graph, the placements made so far (a node keeps its
device) and, per (fetches, feeds, targets), the partitions registered with the workers.
A step fans RunGraph out to the involved tasks (its own task directly, no socket), feeds
values that other partitions return into its rendezvous (or, for a deferred partition of its
own, starts that one with those values once they are all in: ``placement.partition``), and
answers with the fetches or the first error, after aborting the step everywhere.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import random
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import numpy as np

from zmtf.formats.config_proto import device_matches
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import FetchNotFoundError, InvalidArgumentError, NotFoundError, OpError
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.graph_io import graph_from_dict
from zmtf.placement.partition import TaskPartition, partition
from zmtf.placement.plan import COPY_OPS, plan_step
from zmtf.distributed.futures import Deferred, failed, outcome
from zmtf.distributed.worker import WorkerService, supports

placement_log = logging.getLogger("zmtf.placement")

# remote(task, coroutine factory name, **fields) is provided by the server: it owns channels;
# remote_run_graph(task, fields) returns a future of the partition's output tensors.
RemoteCall = Callable[..., Awaitable[Any]]
RemoteRunGraph = Callable[[str, dict], "Deferred"]


@dataclass
class _StepSetup:
    """Partitions of one (fetches, feeds, targets) signature, registered with their tasks."""

    graph_key: str
    parts: dict[str, TaskPartition]
    fetch_names: list[str]
    feed_names: list[str]
    deferred: TaskPartition | None = None       # the master's own, started after the replies
    start_first: list[TaskPartition] = field(default_factory=list)   # the others, remote first

    def __post_init__(self) -> None:
        own = [p for p in self.parts.values() if p.deferred]
        self.deferred = own[0] if own and len(self.parts) > 1 else None
        self.start_first = [p for p in self.parts.values() if p is not self.deferred]


@dataclass
class MasterSession:
    handle: str
    graph: Graph
    config: dict[str, Any]
    placements: dict[str, str] = field(default_factory=dict)
    setups: dict[tuple, _StepSetup] = field(default_factory=dict)
    registered: set[tuple[str, str]] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class MasterService:
    """The master of one task: sessions in, RunGraph calls out."""

    def __init__(self, task: str, worker: WorkerService, cluster_devices: Callable[[], list[str]],
                 remote: RemoteCall, remote_run_graph: RemoteRunGraph, default_timeout: float,
                 learn_devices: Callable[[list[str] | None], Awaitable[None]] | None = None) -> None:
        self._learn_devices = learn_devices
        self.task = task
        self.task_spec = DeviceSpec.from_string(task)
        self.worker = worker
        self._cluster_devices = cluster_devices
        self._remote = remote
        self._remote_run_graph = remote_run_graph
        self._timeout = default_timeout
        self._sessions: dict[str, MasterSession] = {}
        self._step_ids = itertools.count(random.getrandbits(40) << 16)
        self._background: set[asyncio.Future] = set()

    # ---- sessions -----------------------------------------------------------------------
    def create_session(self, graph: dict, arrays: list, config: dict) -> str:
        handle = uuid.uuid4().hex
        self._sessions[handle] = MasterSession(handle, graph_from_dict(graph, arrays), dict(config))
        return handle

    def extend_session(self, handle: str, graph: dict, arrays: list) -> None:
        session = self._session(handle)
        session.graph = graph_from_dict(graph, arrays)
        session.setups.clear()

    async def close_session(self, handle: str) -> None:
        session = self._sessions.pop(handle, None)
        if session is None:
            return
        self.worker.deregister_session(handle)
        tasks = {task for task, _ in session.registered if task != self.task}
        await asyncio.gather(*[self._remote(task, "deregister", session=handle) for task in tasks],
                             return_exceptions=True)

    def _session(self, handle: str) -> MasterSession:
        session = self._sessions.get(handle)
        if session is None:
            raise NotFoundError(None, None, f"session '{handle}' is not open on the master "
                                f"{self.task}; it was closed, or the server restarted. Open a new Session.")
        return session

    # ---- steps ---------------------------------------------------------------------------
    def run_step(self, handle: str, feeds: list[str], fetches: list[str], targets: list[str],
                 values: list[np.ndarray], timeout_ms: int, trace: list | None = None,
                 finish: Callable[[list], Any] | None = None) -> "Deferred | Awaitable[Any]":
        """Run one step: an awaitable of the fetched values, or of ``finish(values)`` (cancel it,
        or fail it, to abort the step).

        A step whose partitions are registered already is a Deferred settled by callbacks
        (no task, no coroutine): each of those would cost a loop iteration on the hot path."""
        session = self._sessions.get(handle) or self._session(handle)   # the latter raises
        timeout = timeout_ms / 1000.0 if timeout_ms > 0 else self._timeout
        setup = session.setups.get((tuple(feeds), tuple(fetches), tuple(targets)))
        if setup is None:
            return self._setup_then_run(session, feeds, fetches, targets, values, timeout, trace,
                                        finish)
        return self._start(session, setup, fetches, dict(zip(feeds, values)), timeout, trace, finish)

    async def _setup_then_run(self, session: MasterSession, feeds: list[str], fetches: list[str],
                              targets: list[str], values: list[np.ndarray], timeout: float,
                              trace: list | None, finish: Callable[[list], Any] | None) -> Any:
        setup = await self._setup(session, feeds, fetches, targets)
        return await self._start(session, setup, fetches, dict(zip(feeds, values)), timeout, trace,
                                 finish)

    def _start(self, session: MasterSession, setup: _StepSetup, fetches: list[str],
               feed_values: dict[str, np.ndarray], timeout: float,
               trace: list | None = None, finish: Callable[[list], Any] | None = None) -> Deferred:
        """Start every partition of one step; the Deferred settles with the fetches or the
        first error, after which the step is aborted on every task. With ``trace`` (a list)
        every partition's node timings are added to it."""
        step_id = next(self._step_ids)
        results: dict[str, np.ndarray] = {}   # client fetches, and a deferred part's reply values
        running: list[Any] = []

        def ended(error: BaseException) -> None:   # the step failed or was cancelled
            self._abort(setup, step_id, error)
            for call in running:
                call.cancel()

        step = Deferred(on_failure=ended)
        parts = setup.start_first
        deferred = setup.deferred
        remaining = len(setup.parts)
        retried: set[str] = set()

        # part_done is handed itself (``resume``): a closure naming itself would be a reference
        # cycle, and the step's tensors would then wait for the cyclic GC
        def part_done(part: TaskPartition, resume: Callable[..., None], done: Any) -> None:
            nonlocal remaining
            if step.settled:
                return
            if type(done) is list:   # our own partition, run through at its start
                cancelled, value, error = False, done, None
            else:
                cancelled, value, error = outcome(done)
            if cancelled:
                step.cancel()
                return
            if error is not None and part.task not in retried and _lost_graphs(error):
                # the task restarted and lost its graphs: register this partition again, once
                retried.add(part.task)
                again = asyncio.ensure_future(self._register_again(
                    session, setup, part, step_id, feed_values, timeout, trace))
                running.append(again)
                again.add_done_callback(functools.partial(resume, part, resume))
                return
            if error is None:
                try:
                    self._take_outputs(part, value, step_id, results, deferred is not None)
                except Exception as exc:  # noqa: BLE001 - a malformed reply fails the step
                    error = exc
            if error is not None:
                step.set_exception(error)
                return
            remaining -= 1
            if remaining == 1 and deferred is not None and part is not deferred:
                # every reply is in: the master's own partition runs now, fed with them
                try:
                    call = self._start_partition(session, setup, deferred, step_id, feed_values,
                                                 timeout, trace, results)
                except Exception as exc:  # noqa: BLE001
                    call = failed(exc)
                if type(call) is list:
                    resume(deferred, resume, call)
                else:
                    running.append(call)
                    call.add_done_callback(functools.partial(resume, deferred, resume))
            elif remaining == 0:
                values = []
                for name in fetches:   # a loop: a comprehension is a call of its own
                    values.append(feed_values[name] if name in feed_values else results[name])
                settle(values)

        def settle(values: list) -> None:
            try:
                value = values if finish is None else finish(values)
            except Exception as error:  # noqa: BLE001 - e.g. a fetched value the reply refuses
                step.set_exception(error)
            else:
                step.set_result(value)

        for part in parts:
            if step.settled:   # an earlier partition failed at once: start no more
                break
            try:
                call = self._start_partition(session, setup, part, step_id, feed_values, timeout,
                                             trace)
            except Exception as error:  # noqa: BLE001 - e.g. the peer's channel is closed
                call = failed(error)
            if type(call) is list:   # our own partition ran through
                part_done(part, part_done, call)
            else:
                running.append(call)
                call.add_done_callback(functools.partial(part_done, part, part_done))   # no frame
        if not parts:
            settle([feed_values[n] for n in fetches])
        return step

    def _start_partition(self, session: MasterSession, setup: _StepSetup, part: TaskPartition,
                         step_id: int, feed_values: dict[str, np.ndarray], timeout: float,
                         trace: list | None = None, received: dict | None = None) -> list | Deferred:
        """Start one partition: a Deferred of its outputs, or the outputs themselves when it is
        this task's and ran through at once; ``received``: the reply values a deferred one is fed."""
        values = [feed_values[name] for name in part.feeds] if part.feeds else []
        if part.task == self.task:
            feeds = part.feeds
            if received is not None:
                feeds = part.run_feeds
                for key in part.recv_keys:
                    values.append(received[key])
            return self.worker.run_graph(session.handle, setup.graph_key, step_id, feeds,
                                         part.fetches, part.targets, values, timeout, trace)
        return self._remote_run_graph(part.task, dict(
            session=session.handle, graph_key=setup.graph_key, step_id=step_id, feeds=part.feeds,
            fetches=part.fetches, targets=part.targets, tensors=values, timeout=timeout,
            trace=trace))

    async def _register_again(self, session: MasterSession, setup: _StepSetup,
                              part: TaskPartition, step_id: int, feed_values: dict[str, np.ndarray],
                              timeout: float, trace: list | None) -> list[np.ndarray]:
        await self._remote(part.task, "register", session=session.handle, graph_key=setup.graph_key,
                           graph=part.graph, tensors=part.arrays)
        outputs = self._start_partition(session, setup, part, step_id, feed_values, timeout, trace)
        return outputs if type(outputs) is list else await outputs

    def _take_outputs(self, part: TaskPartition, outputs: list[np.ndarray], step_id: int,
                      results: dict[str, np.ndarray], deferred: bool) -> None:
        """Client fetches into ``results``; reply-carried values into this task's rendezvous,
        or into ``results`` too, by key, when the partition that reads them is ``deferred``."""
        n_client = len(part.client_fetches)
        if len(outputs) != n_client + len(part.reply_keys):
            raise InvalidArgumentError(None, None, f"{part.task} returned {len(outputs)} tensors for "
                                       f"{n_client + len(part.reply_keys)} expected outputs")
        for name, value in zip(part.client_fetches, outputs[:n_client]):
            results[name] = value
        if deferred:
            for key, value in zip(part.reply_keys, outputs[n_client:]):
                results[key] = value
            return
        for key, value in zip(part.reply_keys, outputs[n_client:]):
            self.worker.push_tensor(step_id, key, value)

    def _abort(self, setup: _StepSetup, step_id: int, error: BaseException) -> None:
        reason = f"step {step_id} aborted: {type(error).__name__}: {error}"
        self.worker.abort_step(step_id, reason)
        # Tell the other tasks without waiting: one of them may be the task that just died.
        for task in setup.parts:
            if task != self.task:
                cleanup = asyncio.ensure_future(self._remote(task, "cleanup", step_id=step_id))
                self._background.add(cleanup)
                cleanup.add_done_callback(_forget(self._background))

    async def _setup(self, session: MasterSession, feeds: list[str], fetches: list[str],
                     targets: list[str]) -> _StepSetup:
        key = (tuple(feeds), tuple(fetches), tuple(targets))
        setup = session.setups.get(key)
        if setup is not None:
            return setup
        async with session.lock:
            setup = session.setups.get(key)
            if setup is None:
                if self._learn_devices is not None:   # the tasks this session may use only
                    await self._learn_devices(session.config.get("device_filters"))
                setup = self._plan(session, feeds, fetches, targets)
                await self._register(session, setup)
                session.setups[key] = setup
        return setup

    def _plan(self, session: MasterSession, feeds: list[str], fetches: list[str],
              targets: list[str]) -> _StepSetup:
        graph = session.graph
        feed_t = [_tensor(graph, n) for n in feeds]
        fetch_t = [_tensor(graph, n) for n in fetches]
        target_ops = [graph.get_operation_by_name(n) for n in targets]
        devices = self._cluster_devices()
        filters = session.config.get("device_filters")
        if filters:   # the session sees only what its filters name, and its own task
            devices = [d for d in devices if d.startswith(self.task + "/") or device_matches(d, filters)]
        try:
            plan = plan_step(fetch_t, feed_t, target_ops, devices, supports,
                             task=self.task_spec, previous=session.placements,
                             allow_soft_placement=bool(session.config.get("allow_soft_placement")))
        except InvalidArgumentError as error:
            if filters:
                error.message += (f" (this session's ConfigProto.device_filters {filters} leave "
                                  f"out every other device)")
            raise
        for name, device in plan.placement.devices.items():
            session.placements.setdefault(name, device)
        if session.config.get("log_device_placement"):
            for line in plan.placement.log_lines:
                placement_log.info("%s", line)
        # the plan's host<->GPU copies are not graph ops: each worker plans its own
        ops = [graph.get_operation_by_name(n.name) for n in plan.nodes if n.op_type not in COPY_OPS]
        parts = partition(ops, plan.placement.devices, master_task=self.task, feeds=feed_t,
                          fetches=fetch_t, targets=target_ops)
        # remote partitions first: their requests are on the wire while ours starts running
        ordered = dict(sorted(parts.items(), key=lambda item: item[0] == self.task))
        return _StepSetup(uuid.uuid4().hex[:12], ordered, fetches, feeds)

    async def _register(self, session: MasterSession, setup: _StepSetup) -> None:
        calls = []
        for task, part in setup.parts.items():
            if task == self.task:
                self.worker.register_graph(session.handle, setup.graph_key, part.graph, part.arrays)
            else:
                calls.append(self._remote(task, "register", session=session.handle,
                                          graph_key=setup.graph_key, graph=part.graph,
                                          tensors=part.arrays))
            session.registered.add((task, setup.graph_key))
        await _first_error(calls)


def _lost_graphs(error: BaseException) -> bool:
    """Whether a RunGraph failed because its task restarted and no longer has the graph."""
    return isinstance(error, NotFoundError) and "is not registered" in str(error)


def _forget(pending: set[asyncio.Future]) -> Callable[[asyncio.Future], None]:
    """A done-callback that drops a finished background call and swallows its error."""

    def done(future: asyncio.Future) -> None:
        pending.discard(future)
        if not future.cancelled():
            future.exception()

    return done


async def _first_error(calls: list[Awaitable[Any]]) -> None:
    """Await all calls; raise the first error as soon as it happens (cancelling the rest)."""
    if len(calls) == 1:
        await calls[0]
        return
    tasks = [asyncio.ensure_future(c) for c in calls]
    if not tasks:
        return
    try:
        for finished in asyncio.as_completed(tasks):
            await finished
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


def _tensor(graph: Graph, name: str) -> Tensor:
    element = graph.as_graph_element(name, allow_operation=False)
    if not isinstance(element, Tensor):
        raise FetchNotFoundError(None, None, f"'{name}' names an operation, not a tensor")
    return element


__all__ = ["MasterService", "MasterSession", "InvalidArgumentError", "OpError", "Operation"]

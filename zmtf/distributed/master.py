"""MasterService: client sessions, placement across the cluster, partitions, steps.

Per session (``MasterSession``) it keeps the client's graph, its planner (a node keeps its
device) and, per (fetches, feeds, targets), the partitions registered with the workers. A
step (a ``MasterStep``) fans RunGraph out to the involved tasks (its own task directly, no
socket), feeds values that other partitions return into its rendezvous (or, for a deferred
partition of its own, starts that one with those values once they are all in:
``placement.partition``), and answers with the fetches or the first error, after aborting
the step everywhere.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
import uuid
from typing import Any, Awaitable, Callable, Sequence

import numpy as np

from zmtf.formats.config_proto import device_matches
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import AbortedError, FetchNotFoundError, InvalidArgumentError, \
    NotFoundError, OpError
from zmtf.framework.gc_pause import gc_paused
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.graph_io import graph_from_dict
from zmtf.placement.partition import TaskPartition, partition, recv_name_of
from zmtf.placement.plan import PLAN_OPS, StepPlanner
from zmtf.runtime.executor import NodeTrace
from zmtf.distributed.futures import Deferred
from zmtf.distributed.master_session import MasterSession, StepSetup
from zmtf.distributed.master_step import MasterStep
from zmtf.distributed.off_loop import node_count, set_up
from zmtf.distributed.operator_log import StepFailures
from zmtf.distributed.peers import WorkerPeer
from zmtf.distributed.trace_clock import SPAN_THREAD
from zmtf.distributed.worker import WorkerService, supports


RESET_MEMORY = 4096   # reset sessions whose handles are remembered (see MasterService._reset)


class MasterService:
    """The master of one task: sessions in, RunGraph calls out."""

    def __init__(self, task: str, worker: WorkerService, cluster_devices: Callable[[], list[str]],
                 peer: Callable[[str], WorkerPeer], default_timeout: float,
                 learn_devices: Callable[[list[str] | None], Awaitable[None]] | None = None,
                 wait_for: Callable[[list[str], float], Awaitable[None]] | None = None) -> None:
        self._learn_devices = learn_devices
        self._wait_for = wait_for   # (tasks, seconds): returns once they are up (task_wait)
        self.task = task
        self.task_spec = DeviceSpec.from_string(task)
        self.worker = worker
        self._cluster_devices = cluster_devices
        self.peer = peer   # the server's: it owns the channels
        self._timeout = default_timeout
        self._sessions: dict[str, MasterSession] = {}
        #: handles of sessions a Session.reset closed, until their clients close them: their
        #: requests get AbortedError, as TF's (oldest dropped beyond RESET_MEMORY)
        self._reset: dict[str, None] = {}
        self.step_ids = itertools.count(random.getrandbits(40) << 16)   # MasterStep takes one
        self._background: set[asyncio.Future] = set()
        self.step_failures = StepFailures(task)   # its interval: the server's peer_log_secs

    # ---- sessions -----------------------------------------------------------------------
    def create_session(self, graph: dict, arrays: list, config: dict) -> str:
        return self.open_session(graph_from_dict(graph, arrays), config)

    def open_session(self, graph: Graph, config: dict) -> str:
        """A new session on ``graph`` (read from a CreateSession already); its handle."""
        handle = uuid.uuid4().hex
        planner = StepPlanner(supports, self.task_spec,
                              allow_soft_placement=bool(config.get("allow_soft_placement")),
                              log_placement=bool(config.get("log_device_placement")))
        self._sessions[handle] = MasterSession(handle, graph, dict(config), planner)
        return handle

    def extend_session(self, handle: str, graph: Graph) -> None:
        """The session's graph is now ``graph`` (read from an ExtendSession already)."""
        session = self._session(handle)
        session.last_used = time.monotonic()
        session.graph = graph
        session.setups.clear()

    async def close_session(self, handle: str, reset: bool = False) -> None:
        """Forget a session and its partitions everywhere; after a ``reset`` its handle is
        remembered, so that its client hears AbortedError rather than NotFoundError."""
        if reset:
            self._reset[handle] = None
            while len(self._reset) > RESET_MEMORY:
                del self._reset[next(iter(self._reset))]
        else:
            self._reset.pop(handle, None)
        session = self._sessions.pop(handle, None)
        if session is None:
            return
        self.worker.deregister_session(handle)
        tasks = {task for task, _ in session.registered if task != self.task}
        await asyncio.gather(*[self.peer(task).deregister_session(handle) for task in tasks],
                             return_exceptions=True)

    def session_handles(self) -> list[str]:
        """The sessions open on this master (read-only: for status and tests)."""
        return list(self._sessions)

    def idle_sessions(self, idle: float) -> list[str]:
        """The sessions no request named for ``idle`` s (session_gc closes them)."""
        since = time.monotonic() - idle
        return [h for h, s in self._sessions.items() if s.last_used <= since]

    def touch(self, handle: str) -> None:
        session = self._sessions.get(handle)
        if session is not None:
            session.last_used = time.monotonic()

    def _session(self, handle: str) -> MasterSession:
        session = self._sessions.get(handle)
        if session is None and handle in self._reset:
            raise AbortedError(None, None, f"session '{handle}' was closed by tf.Session.reset on "
                               f"the master {self.task}; open a new Session (its variables in "
                               f"the containers reset are uninitialized)")
        if session is None:
            raise NotFoundError(None, None, f"session '{handle}' is not open on the master "
                                f"{self.task}; it was closed (or collected after no request for the "
                                f"server's --session-gc-secs), or the server restarted. Open a "
                                f"new Session.")
        return session

    # ---- steps ---------------------------------------------------------------------------
    def run_step(self, handle: str, feeds: list[str], fetches: list[str], targets: list[str],
                 values: list[np.ndarray], timeout_ms: int, trace: list | None = None,
                 finish: Callable[[list], Any] | None = None) -> Deferred:
        """Run one step: a Deferred of the fetched values, or of ``finish(values)``; cancel
        it, or fail it, to abort the step. With ``trace`` (a list) every partition's node
        timings are added to it.

        A signature's first run plans and registers its partitions first (a task); later
        runs start them at once, and a step that ran through here settles before this
        returns."""
        session = self._sessions.get(handle) or self._session(handle)   # the latter raises
        session.last_used = time.monotonic()
        timeout = timeout_ms / 1000.0 if timeout_ms > 0 else self._timeout
        step = MasterStep(self, session, fetches, dict(zip(feeds, values)), timeout, trace, finish)
        setup = session.setups.get((tuple(feeds), tuple(fetches), tuple(targets)))
        if setup is not None:
            step.start(setup)
        else:
            step.start_after(asyncio.ensure_future(self._setup(session, feeds, fetches, targets,
                                                               timeout)))
        return step.outcome

    def step_kind(self, handle: str, feeds: list[str], fetches: list[str],
                  targets: list[str]) -> str:
        """"distributed" when a signature's partitions run on other tasks too, else "local"
        (the ``kind`` of a step's metrics)."""
        session = self._sessions.get(handle)
        setup = session.setups.get((tuple(feeds), tuple(fetches), tuple(targets))) \
            if session is not None else None
        return "distributed" if setup is not None and setup.peers else "local"

    def start_partition(self, session: MasterSession, setup: StepSetup, part: TaskPartition,
                        step_id: int, feed_values: dict[str, np.ndarray], timeout: float,
                        trace: list | None = None, received: dict | None = None) -> Deferred:
        """Start one partition: a Deferred of its outputs (settled already when it is this
        task's and ran through); ``received``: the reply values a deferred one is fed."""
        values = [feed_values[name] for name in part.feeds] if part.feeds else []
        if part.task == self.task:
            feeds = part.feeds
            if received is not None:
                feeds = part.run_feeds
                for key in part.recv_keys:
                    values.append(received[key])
                if trace is not None:   # the values the replies carried: a timeline's flows end here
                    now = time.perf_counter()
                    trace.extend(NodeTrace(recv_name_of(key), f"{self.task}/device:CPU:0", now, now,
                                           SPAN_THREAD, int(getattr(received[key], "nbytes", 0)))
                                 for key in part.recv_keys)
            return self.worker.run_graph(session.handle, setup.graph_key, step_id, feeds,
                                         part.fetches, part.targets, values, timeout, trace)
        return setup.peers[part.task].run_graph(session.handle, setup.graph_key, step_id, part.feeds,
                                                part.fetches, part.targets, values, timeout, trace)

    async def register_again(self, session: MasterSession, setup: StepSetup,
                             part: TaskPartition) -> None:
        """Register a partition with its task again (the task restarted and lost it)."""
        await self.peer(part.task).register_graph(session.handle, setup.graph_key, part.graph,
                                                  part.arrays, _isolated(session))

    def take_outputs(self, part: TaskPartition, outputs: list[np.ndarray], step_id: int,
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

    def abort(self, setup: StepSetup, step_id: int, error: BaseException) -> None:
        """Abort a failed step here and, without waiting, on its other tasks."""
        reason = f"step {step_id} aborted: {type(error).__name__}: {error}"
        self.worker.abort_step(step_id, reason)
        # Tell the other tasks without waiting: one of them may be the task that just died.
        for task in setup.parts:
            if task != self.task:
                cleanup = asyncio.ensure_future(self.peer(task).cleanup_step(step_id))
                self._background.add(cleanup)
                cleanup.add_done_callback(_forget(self._background))

    def blame(self, setup: StepSetup, error: BaseException) -> BaseException:
        """The error to report for a step that ran out of time: UnavailableError naming a
        task of the step whose connection is lost (that is why it did not finish), else
        ``error`` itself."""
        for task in setup.parts:
            if task != self.task:
                unavailable = self.peer(task).unavailable()
                if unavailable is not None:
                    return unavailable
        return error

    def step_failed(self, session: str, step_id: int, error: BaseException,
                    at_fault: str | None) -> None:
        """Log a failed step (rate-limited per task at fault and error class)."""
        self.step_failures.failed(session, step_id, error, at_fault)

    async def _setup(self, session: MasterSession, feeds: list[str], fetches: list[str],
                     targets: list[str], timeout: float) -> StepSetup:
        key = (tuple(feeds), tuple(fetches), tuple(targets))
        setup = session.setups.get(key)
        if setup is not None:
            return setup
        async with session.lock:   # one setup per signature: a second first run waits for it
            setup = session.setups.get(key)
            if setup is None:
                if self._learn_devices is not None:   # the tasks this session may use only
                    await self._learn_devices(session.config.get("device_filters"))
                graph = session.graph
                devices = self._session_devices(session)   # the server's tables: read here
                # a big graph is planned and partitioned on a thread (off_loop): the loop
                # answers pings and other sessions' steps meanwhile
                parts, placed = await set_up(node_count(graph), self._plan, session, graph,
                                             devices, feeds, fetches, targets)
                peers = {task: self.peer(task) for task in parts if task != self.task}
                setup = StepSetup(uuid.uuid4().hex[:12], parts, fetches, feeds, peers, placed)
                if self._wait_for is not None:   # tasks that start late: waited for, and logged
                    await self._wait_for(list(setup.peers), timeout)
                await self._register(session, setup)
                if session.graph is graph:   # else ExtendSession came meanwhile: plan that next
                    session.setups[key] = setup
        return setup

    def _session_devices(self, session: MasterSession) -> list[str]:
        """The devices a session may place on: the cluster's, less what its device_filters
        leave out (its own task's always)."""
        devices = self._cluster_devices()
        filters = session.config.get("device_filters")
        if filters:   # the session sees only what its filters name, and its own task
            devices = [d for d in devices if d.startswith(self.task + "/") or device_matches(d, filters)]
        return devices

    def _plan(self, session: MasterSession, graph: Graph, devices: list[str], feeds: list[str],
              fetches: list[str], targets: list[str]
              ) -> tuple[dict[str, TaskPartition], dict[str, str]]:
        """(partitions by task, remote ones first; node -> device). Touches the session's
        graph and planner only (under its lock): it may run on a thread."""
        with gc_paused():   # plan and partitions all live on: no heap rescans while they grow
            return self._plan_and_partition(session, graph, devices, feeds, fetches, targets)

    def _plan_and_partition(self, session: MasterSession, graph: Graph, devices: list[str],
                            feeds: list[str], fetches: list[str], targets: list[str]
                            ) -> tuple[dict[str, TaskPartition], dict[str, str]]:
        feed_t = [_tensor(graph, n) for n in feeds]
        fetch_t = [_tensor(graph, n) for n in fetches]
        target_ops = [graph.get_operation_by_name(n) for n in targets]
        filters = session.config.get("device_filters")
        try:
            plan = session.planner.plan(fetch_t, feed_t, target_ops, devices)
        except InvalidArgumentError as error:
            if filters:
                error.message += (f" (this session's ConfigProto.device_filters {filters} leave "
                                  f"out every other device)")
            raise
        # the plan's host<->GPU copies and ref reads are not graph ops: each worker plans its own
        ops = [graph.get_operation_by_name(n.name) for n in plan.nodes if n.op_type not in PLAN_OPS]
        parts = partition(ops, plan.placement.devices, master_task=self.task, feeds=feed_t,
                          fetches=fetch_t, targets=target_ops)
        # remote partitions first: their requests are on the wire while ours starts running
        return dict(sorted(parts.items(), key=lambda item: item[0] == self.task)), \
            plan.placement.devices

    def partition_graphs(self, handle: str, feeds: list[str], fetches: list[str],
                         targets: list[str]) -> list[dict[str, Any]]:
        """The nodes each device runs for a signature that ran (RunOptions.
        output_partition_graphs), the partitioner's _Send/_Recv and stand-ins included:
        [{"device": name, "nodes": [{"name", "op", "inputs"}]}]."""
        session = self._sessions.get(handle)
        setup = session.setups.get((tuple(feeds), tuple(fetches), tuple(targets))) if session else None
        if setup is None:
            return []
        by_device: dict[str, list[dict[str, Any]]] = {}
        for task, part in setup.parts.items():
            for node in part.graph["nodes"]:
                device = setup.devices.get(node["name"]) or node["device"] or task
                inputs = node["inputs"] + ["^" + c for c in node["control_inputs"]]
                by_device.setdefault(device, []).append(
                    {"name": node["name"], "op": node["op"], "inputs": inputs})
        return [{"device": device, "nodes": nodes} for device, nodes in by_device.items()]

    async def _register(self, session: MasterSession, setup: StepSetup) -> None:
        calls = []
        for task, part in setup.parts.items():
            isolated = _isolated(session)
            if task == self.task:
                calls.append(self._register_here(session, setup.graph_key, part, isolated))
            else:
                calls.append(self.peer(task).register_graph(session.handle, setup.graph_key,
                                                            part.graph, part.arrays, isolated))
            session.registered.add((task, setup.graph_key))
        await _first_error(calls)

    async def _register_here(self, session: MasterSession, graph_key: str, part: TaskPartition,
                             isolated: bool) -> None:
        """This task's own partition, parsed on a thread when it is big (off_loop)."""
        began = self.worker.deregistrations   # the session closed meanwhile: not kept
        graph = await set_up(node_count(part.graph), graph_from_dict, part.graph, part.arrays)
        self.worker.keep_graph(session.handle, graph_key, graph, isolated, began)


def _isolated(session: MasterSession) -> bool:
    """Whether the session's state is its own on every worker (isolate_session_state)."""
    return session.config.get("isolate_session_state") is True


def _forget(pending: set[asyncio.Future]) -> Callable[[asyncio.Future], None]:
    """A done-callback that drops a finished background call and swallows its error."""

    def done(future: asyncio.Future) -> None:
        pending.discard(future)
        if not future.cancelled():
            future.exception()

    return done


async def _first_error(calls: Sequence[Awaitable[Any]]) -> None:
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


__all__ = ["MasterService", "MasterSession", "StepSetup", "InvalidArgumentError", "OpError",
           "Operation"]

"""WorkerService: runs registered partitions on the local executor; _Send/_Recv between tasks.

Variables live in the worker's ResourceContainer, which outlives sessions (TF's container
semantics: a variable initialized through one session is read by another). Tensors move
between workers directly (PushTensor), never through the master.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from zmtf.distributed.reactor import deadlines_for
from zmtf.distributed.futures import Deferred, chain, outcome, resolved
from zmtf.distributed.off_loop import node_count, off_loop_for, start_off_loop
from zmtf.framework.memory_budget import Account, MemoryBudget
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import (
    AbortedError, FetchNotFoundError, GraphNotRegisteredError, InvalidArgumentError,
)
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.graph_io import graph_from_dict
from zmtf.kernels import lookup as kernel_lookup
from zmtf.kernels import supports as kernel_supports
from zmtf.placement.plan import StepPlanner
from zmtf.runtime import functional  # noqa: F401  (registers the While kernels)
from zmtf.runtime.context import KernelContext
from zmtf.runtime.devices import DevicePools, LocalDevice
from zmtf.runtime.bound_steps import BoundSteps
from zmtf.runtime.executor import BoundStep, Executor
from zmtf.runtime.rendezvous import Rendezvous
from zmtf.runtime.resources import ResourceContainer

log = logging.getLogger("zmtf.worker")

# push(dst_task, step_id, keys, values): hands the values to the socket (no acknowledgement)
Pusher = Callable[[str, int, list, list], None]
TRANSFER_OPS = ("_Send", "_Recv")
CLEANUP_DELAY = 5.0        # seconds a finished step's rendezvous entries are kept
# Partitions whose kernels took less than this last time run on the event loop thread: every
# Recv that arrives and every Send then continues without a thread hop, which for small
# partitions costs more than their kernels. The price: the loop serves nothing else for that
# long, so the bound stays a few milliseconds (its measurement: notes, docs/design.md).
INLINE_SECONDS = 0.005
CLOSED_MEMORY = 4096       # deregistered sessions remembered (a late off-loop registration)


class StepContext:
    """A KernelContext plus what _Send/_Recv need for one step."""

    __slots__ = ("base", "resources", "intra_op_threads", "empty", "gpu_empty", "gpu_const_cache",
                 "executor", "step_id", "worker")

    def __init__(self, base: KernelContext, step_id: int, worker: WorkerService,
                 resources: ResourceContainer) -> None:
        self.base = base
        self.resources = resources   # the worker's, or an isolated session's
        self.empty = base.empty
        self.gpu_empty = base.gpu_empty
        self.gpu_const_cache = base.gpu_const_cache
        self.intra_op_threads = base.intra_op_threads
        self.executor = base.executor
        self.step_id = step_id
        self.worker = worker

    def random_generator(self, key: str, seed: int, seed2: int) -> np.random.Generator:
        return self.base.random_generator(key, seed, seed2)

    @property
    def gpu_stream(self) -> Any:
        return self.base.gpu_stream

    @property
    def gpu_launch_lock(self) -> Any:
        return self.base.gpu_launch_lock


def _recv_kernel(ctx: StepContext, inputs: list, attrs: dict, done: Any) -> None:
    ctx.worker.rendezvous.recv(ctx.step_id, attrs["key"], done.one)


def _send_kernel(ctx: StepContext, inputs: list, attrs: dict, done: Callable) -> None:
    value = inputs[0] if inputs else np.zeros(0, np.bool_)
    ctx.worker.send(attrs["dst_task"], ctx.step_id, attrs["key"], value, done)


_recv_kernel.is_async = True  # type: ignore[attr-defined]
_send_kernel.is_async = True  # type: ignore[attr-defined]
_send_kernel.dead_unsupported = True  # type: ignore[attr-defined]  # no dead values on the wire
_TRANSFER_KERNELS = {"_Recv": _recv_kernel, "_Send": _send_kernel}


def lookup(op_type: str, device_type: str, dtype: str | None) -> Callable:
    return _TRANSFER_KERNELS.get(op_type) or kernel_lookup(op_type, device_type, dtype)


def supports(op_type: str, device_type: str, dtype: str | None) -> bool:
    return op_type in _TRANSFER_KERNELS or kernel_supports(op_type, device_type, dtype)


@dataclass
class _Registered:
    """A partition registered by a master: its graph and its steps, bound once per signature."""

    graph: Graph
    steps: BoundSteps
    resources: ResourceContainer   # the worker's, or its session's own (isolate_session_state)
    nodes: int                     # its size: a big one is bound on a thread (off_loop)


class WorkerService:
    """One task's worker: graphs by (session, key), steps on the executor, tensors by rendezvous."""

    def __init__(self, task: str, devices: list[LocalDevice], pools: DevicePools,
                 loop: asyncio.AbstractEventLoop, pusher: Pusher, intra_op_threads: int) -> None:
        self.task = task
        self.task_spec = DeviceSpec.from_string(task)
        self.devices = devices
        self.loop = loop
        # the default container is named after the job, as TF's: Session.reset(target, [job])
        self.resources = ResourceContainer(self.task_spec.job or "localhost")
        self._isolated: dict[str, ResourceContainer] = {}   # session -> its private state
        self.rendezvous = Rendezvous()
        self.executor = Executor(pools)
        self.context = KernelContext(self.resources, intra_op_threads)
        self.context.executor = self.executor
        self._pusher = pusher
        self._loop_thread = threading.get_ident()   # built by the server, on its loop thread
        # (dst task, step id) -> (keys, values, done callbacks) of pushes not yet sent
        self._outgoing: dict[tuple[str, int], tuple[list, list, list]] = {}
        self._graphs: dict[tuple[str, str], _Registered] = {}
        # session -> the ``deregistrations`` count at its latest deregistration (the latest
        # CLOSED_MEMORY sessions): a graph parsed off the loop meanwhile is not kept
        self._closed: dict[str, int] = {}
        self.deregistrations = 0
        # (id(BoundSteps), signature) -> its binding on a thread (a big partition's first run)
        self._binding: dict[tuple[int, tuple], asyncio.Future] = {}
        self._last_compute: dict[int, float] = {}   # id(BoundStep) -> kernel seconds of its last run
        self._running: dict[int, Any] = {}   # step_id -> executor Future, for abort_step
        self.copy_aliases = True   # the server turns it off unless it serves inproc://
        self._lock = threading.Lock()
        self._to_clean: deque[tuple[float, int]] = deque()   # (when, step id), in time order
        self._sweep_timer: asyncio.TimerHandle | None = None
        self._deadlines = deadlines_for(loop)
        self.budget: MemoryBudget | None = None   # the server's bytes for requests in flight

    # ---- graphs --------------------------------------------------------------------
    def register_graph(self, session: str, graph_key: str, graph: dict, arrays: list,
                       isolated: bool = False) -> None:
        """Keep a partition to run (parsed here: see ``keep_graph`` for one parsed already)."""
        self.keep_graph(session, graph_key, graph_from_dict(graph, arrays), isolated)

    def keep_graph(self, session: str, graph_key: str, graph: Graph, isolated: bool = False,
                   parsed_from: int | None = None) -> None:
        """Keep a parsed partition to run (on the loop thread); an ``isolated`` session's
        variables, queues and tables live in a container of its own (TF's
        isolate_session_state), dropped when it closes. ``parsed_from``: the
        ``deregistrations`` count when its parse began on a thread (off_loop); a session
        deregistered since gets nothing kept, since nobody would deregister it again."""
        if parsed_from is not None and self._closed.get(session, -1) >= parsed_from:
            return
        # the master placed every node: the worker's plan only adds its host<->GPU copies
        planner = StepPlanner(supports, self.task_spec, allow_soft_placement=True, sticky=False)
        resources = self.resources
        if isolated:
            resources = self._isolated.get(session) or self._isolated.setdefault(
                session, self.resources.isolated())
        self._graphs[(session, graph_key)] = _Registered(
            graph, BoundSteps(planner, [d.name for d in self.devices], lookup, resources),
            resources, node_count(graph))

    def registered_sessions(self) -> set[str]:
        """The sessions with partitions registered here (read-only: for status and tests)."""
        return {key[0] for key in list(self._graphs)}   # list(): one step, whichever thread reads

    def deregister_session(self, session: str) -> None:
        for key in [k for k in self._graphs if k[0] == session]:
            del self._graphs[key]
        private = self._isolated.pop(session, None)
        if private is not None:
            private.clear()
        self._closed[session] = self.deregistrations
        self.deregistrations += 1
        while len(self._closed) > CLOSED_MEMORY:
            del self._closed[next(iter(self._closed))]

    # ---- steps -----------------------------------------------------------------------
    def run_graph(self, session: str, graph_key: str, step_id: int, feeds: list[str],
                  fetches: list[str], targets: list[str], values: list[np.ndarray],
                  timeout: float | None, trace: list | None = None) -> Deferred:
        """Start one partition for one step (on the loop thread): a Deferred of its fetched
        values (a list, owned by the caller), settled already if it ran through here and now.
        Cancelling it, or its deadline passing, aborts the step.

        A Deferred rather than a coroutine: on the step path each task and each await costs a
        loop iteration, and the latency of a small step is made of those."""
        aborted = self.rendezvous.aborted(step_id)
        if aborted is not None:   # its master gave up on it before this request came
            raise AbortedError(None, None, f"step {step_id} was aborted on {self.task} before its "
                               f"partition started ({aborted}); not run")
        registered = self._graphs.get((session, graph_key))
        if registered is None:
            raise GraphNotRegisteredError(
                None, None, f"graph '{graph_key}' of session '{session}' is not registered on "
                f"{self.task}; the master must RegisterGraph first")
        key = (tuple(feeds), tuple(fetches), tuple(targets))
        step = registered.steps.steps.get(key)
        if step is None:
            if off_loop_for(registered.nodes):   # a big partition's first run: bound on a thread
                return self._bind_then_run(registered, key, session, graph_key, step_id, values,
                                           timeout, trace)
            step = self._bind(registered, key)
        if len(values) != len(feeds):
            raise InvalidArgumentError(None, None, f"RunGraph carries {len(values)} tensors for "
                                       f"{len(feeds)} feeds")
        # A step whose kernels took under INLINE_SECONDS last time runs right here on the loop
        # thread (time spent waiting for a Recv does not count): no thread hop per Recv/Send.
        inline = self._last_compute.get(id(step), 1.0) < INLINE_SECONDS
        budget = self.budget
        running = self.executor.run(step, values,
                                    StepContext(self.context, step_id, self, registered.resources),
                                    inline=inline, trace=trace,
                                    account=None if budget is None else Account(budget))
        ran = running.outcome()
        if ran is not None:
            # it ran through on this thread (no Recv waited: a ps's read of a variable, a
            # deferred partition): settled now, with no deadline, callbacks or thread hop
            cancelled, outputs, error = ran
            if not cancelled and error is None and not (
                    self.copy_aliases and _holds_any(self.resources, outputs)):
                self._last_compute[id(step)] = getattr(running, "compute_seconds", 1.0)
                self._cleanup_later(step_id)
                return resolved(list(map(np.asarray, outputs)))
        loop = self.loop
        result = Deferred()
        self._running[step_id] = running
        timer = None if timeout is None or running.done() else self._deadlines.call_later(
            timeout, self._expire, result, step_id, timeout)

        def settle(done: Future) -> None:
            if timer is not None:
                timer.cancel()
            if result.done():
                return
            cancelled, outputs, error = outcome(done)
            if cancelled:
                result.cancel()
                return
            if error is not None:
                result.set_exception(error)
                return
            self._last_compute[id(step)] = getattr(done, "compute_seconds", 1.0)
            if self.copy_aliases and _holds_any(self.resources, outputs):
                copies = loop.run_in_executor(None, lambda: [self._owned(v) for v in outputs])
                copies.add_done_callback(lambda f: chain(f, result))
            else:
                result.set_result(list(map(np.asarray, outputs)))

        def ended(_: Deferred) -> None:
            self._running.pop(step_id, None)
            cancelled, _value, error = outcome(result)
            if cancelled or error is not None:
                running.abort(AbortedError(None, None, f"step {step_id} aborted on {self.task}"))
                self.rendezvous.abort_step(step_id, AbortedError(None, None, f"step {step_id} was aborted"))
            self._cleanup_later(step_id)

        result.add_done_callback(ended)
        running.add_done_callback(
            lambda done: settle(done) if threading.get_ident() == self._loop_thread
            else loop.call_soon_threadsafe(settle, done))
        return result

    def _bind_then_run(self, registered: _Registered, key: tuple, session: str, graph_key: str,
                       step_id: int, values: list[np.ndarray], timeout: float | None,
                       trace: list | None) -> Deferred:
        """``run_graph`` of a signature whose plan-and-bind is seconds of work: bound on a
        thread (one binding for concurrent first runs), then run as any other; the step's
        deadline counts from now, the binding included."""
        pending = (id(registered.steps), key)   # the binding holds them: the id stays theirs
        binding = self._binding.get(pending)
        if binding is None:
            binding = self._binding[pending] = start_off_loop(self._bind, registered, key)
            binding.add_done_callback(lambda _: self._binding.pop(pending, None))
        began = time.monotonic()
        running: list[Deferred] = []   # the run, once bound: a failed result cancels it

        def stop_run(_: BaseException) -> None:
            for run in running:
                run.cancel()

        result = Deferred(on_failure=stop_run)
        timer = None if timeout is None else self._deadlines.call_later(
            timeout, self._expire, result, step_id, timeout)

        def bound(done: Any) -> None:
            if timer is not None:
                timer.cancel()
            cancelled, _step, error = outcome(done)   # read even when unused: it was retrieved
            if result.done():
                return
            if cancelled or error is not None:
                result.set_exception(error if error is not None else AbortedError(
                    None, None, f"binding the partition of step {step_id} on {self.task} was "
                    f"cancelled"))
                return
            left = None if timeout is None else max(timeout - (time.monotonic() - began), 1e-3)
            feeds, fetches, targets = key
            try:
                run = self.run_graph(session, graph_key, step_id, list(feeds), list(fetches),
                                     list(targets), values, left, trace)
            except Exception as exc:  # noqa: BLE001 - e.g. aborted while it was bound
                result.set_exception(exc)
                return
            running.append(run)
            run.add_done_callback(lambda ran: chain(ran, result))

        binding.add_done_callback(bound)
        return result

    def _expire(self, result: Deferred, step_id: int, timeout: float) -> None:
        if not result.done():
            result.set_exception(_deadline(self.task, step_id, timeout))

    def _bind(self, registered: _Registered, key: tuple) -> BoundStep:
        """Plan and bind one signature of a registered partition (its first run)."""
        feeds, fetches, targets = key
        graph = registered.graph
        return registered.steps.bind(key, [_tensor(graph, n) for n in fetches],
                                     [_tensor(graph, n) for n in feeds], [_op(graph, n) for n in targets])

    def _owned(self, value: Any) -> np.ndarray:
        """A value safe to hand over in-process: never a view of a variable's storage.

        Over tcp and ipc the bytes are copied into the socket anyway, so values that alias a
        variable leave without a copy of their own (``copy_aliases`` False), like TF1's
        unlocked ref reads: an update racing the send can be seen by it."""
        if isinstance(value, np.ndarray) and self.resources.holds(value):
            return value.copy()
        return np.asarray(value)

    def private_reply(self, reply: Any) -> Any:
        """``reply`` with copies of the tensors that are a variable's storage (for a reply that
        crosses no network: zero-copy inproc would give the client the variable itself)."""
        tensors = getattr(reply, "tensors", None)
        if not tensors or not _holds_any(self.resources, tensors):
            return reply
        return replace(reply, tensors=[self._owned(v) for v in tensors])

    # ---- transfers -------------------------------------------------------------------
    def send(self, dst_task: str, step_id: int, key: str, value: Any, done: Callable) -> None:
        """Push ``value`` to ``dst_task`` (from the loop thread); ``done`` once it is queued.

        No acknowledgement is awaited: a push that cannot arrive (the task died) fails the step
        through the master's RunGraph to that task, and a refused one aborts the step on the
        receiver. Pushes queued while the loop runs one callback (an inline partition's burst
        of Sends) leave as one message per destination when it returns."""
        if self.copy_aliases:
            value = self._owned(value)
        if threading.get_ident() != self._loop_thread:
            self.loop.call_soon_threadsafe(self.send, dst_task, step_id, key, value, done)
            return
        batch = self._outgoing.get((dst_task, step_id))
        if batch is None:
            batch = self._outgoing[(dst_task, step_id)] = ([], [], [])
            if len(self._outgoing) == 1:
                self.loop.call_soon(self._flush_pushes)
        batch[0].append(key)
        batch[1].append(value)
        batch[2].append(done)

    def _flush_pushes(self) -> None:
        outgoing, self._outgoing = self._outgoing, {}
        for (dst_task, step_id), (keys, values, dones) in outgoing.items():
            try:
                self._pusher(dst_task, step_id, keys, values)
            except BaseException as error:  # noqa: BLE001
                for done in dones:
                    done(None, error)
            else:
                for done in dones:
                    done([], None)

    def push_tensor(self, step_id: int, key: str, value: np.ndarray) -> None:
        self.rendezvous.put(step_id, key, value)

    def abort_step(self, step_id: int, reason: str) -> None:
        """Fail the step's partition here: its Recvs and its ops parked in queues let go."""
        self.rendezvous.abort_step(step_id, AbortedError(None, None, reason))
        running = self._running.get(step_id)
        if running is not None:
            running.abort(AbortedError(None, None, reason))
        self._cleanup_later(step_id)

    def _cleanup_later(self, step_id: int) -> None:
        """Forget a step's rendezvous entries CLEANUP_DELAY s from now (late pushes for it are
        dropped until then): one sweep timer for all steps instead of a timer per step."""
        # time.monotonic is the loop's clock (asyncio's default): no loop to ask
        self._to_clean.append((time.monotonic() + CLEANUP_DELAY, step_id))
        if self._sweep_timer is None:
            self._arm_sweep()

    def _arm_sweep(self) -> None:
        self._sweep_timer = self.loop.call_later(CLEANUP_DELAY, self._sweep)

    def _sweep(self) -> None:
        now = time.monotonic()
        queue = self._to_clean
        while queue and queue[0][0] <= now:
            self.rendezvous.cleanup_step(queue.popleft()[1])
        self._sweep_timer = (self.loop.call_later(max(queue[0][0] - now, 0.1), self._sweep)
                             if queue else None)

    def reset(self, containers: list[str]) -> None:
        """Clear the named containers (the default one, the job's, for []): TF's reset."""
        self.resources.clear_containers(containers or [self.resources.default_container])

    def release_free_buffers(self) -> None:
        """Give back the big output buffers no step uses now (after sessions were closed)."""
        self.context.pool.release_free()


def _holds_any(resources: ResourceContainer, values: list) -> bool:
    """Whether any of ``values`` is a variable's storage (to be copied before it leaves)."""
    return any(resources.holds(v) for v in values)


def _deadline(task: str, step_id: int, timeout: float | None) -> Exception:
    from zmtf.framework.errors import DeadlineExceededError

    return DeadlineExceededError(None, None, f"step {step_id} did not finish on {task} within "
                                 f"{timeout:.3g} s" if timeout is not None else
                                 f"step {step_id} did not finish on {task}")


def _tensor(graph: Graph, name: str) -> Tensor:
    element = graph.as_graph_element(name, allow_operation=False)
    if not isinstance(element, Tensor):
        raise FetchNotFoundError(None, None, f"'{name}' is not a tensor of the registered graph")
    return element


def _op(graph: Graph, name: str) -> Operation:
    return graph.get_operation_by_name(name)

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
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import numpy as np

from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import AbortedError, FetchNotFoundError, InvalidArgumentError, NotFoundError
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.graph_io import graph_from_dict
from zmtf.kernels import lookup as kernel_lookup
from zmtf.kernels import supports as kernel_supports
from zmtf.placement.plan import plan_step
from zmtf.runtime.context import KernelContext
from zmtf.runtime.devices import DevicePools, LocalDevice
from zmtf.runtime.executor import BoundStep, Executor, bind
from zmtf.runtime.rendezvous import Rendezvous
from zmtf.runtime.resources import ResourceContainer

log = logging.getLogger("zmtf.worker")

# push(dst_task, step_id, key, value) -> awaitable that completes when the peer has it
Pusher = Callable[[str, int, str, np.ndarray], Awaitable[None]]
TRANSFER_OPS = ("_Send", "_Recv")
INLINE_SECONDS = 0.0005   # steps faster than this run on the event loop thread itself


class StepContext:
    """A KernelContext plus what _Send/_Recv need for one step."""

    __slots__ = ("base", "resources", "intra_op_threads", "empty", "gpu_empty", "gpu_const_cache",
                 "step_id", "worker")

    def __init__(self, base: KernelContext, step_id: int, worker: WorkerService) -> None:
        self.base = base
        self.resources = base.resources
        self.empty = base.empty
        self.gpu_empty = base.gpu_empty
        self.gpu_const_cache = base.gpu_const_cache
        self.intra_op_threads = base.intra_op_threads
        self.step_id = step_id
        self.worker = worker

    def random_generator(self, key: str, seed: int, seed2: int) -> np.random.Generator:
        return self.base.random_generator(key, seed, seed2)

    @property
    def gpu_stream(self) -> Any:
        return self.base.gpu_stream


def _recv_kernel(ctx: StepContext, inputs: list, attrs: dict, done: Callable) -> None:
    def arrived(value: Any, error: BaseException | None) -> None:
        done(None if error else [value], error)

    ctx.worker.rendezvous.recv(ctx.step_id, attrs["key"], arrived)


def _send_kernel(ctx: StepContext, inputs: list, attrs: dict, done: Callable) -> None:
    value = inputs[0] if inputs else np.zeros(0, np.bool_)
    ctx.worker.send(attrs["dst_task"], ctx.step_id, attrs["key"], value, done)


_recv_kernel.is_async = True  # type: ignore[attr-defined]
_send_kernel.is_async = True  # type: ignore[attr-defined]
_TRANSFER_KERNELS = {"_Recv": _recv_kernel, "_Send": _send_kernel}


def lookup(op_type: str, device_type: str, dtype: str | None) -> Callable:
    return _TRANSFER_KERNELS.get(op_type) or kernel_lookup(op_type, device_type, dtype)


def supports(op_type: str, device_type: str, dtype: str | None) -> bool:
    return op_type in _TRANSFER_KERNELS or kernel_supports(op_type, device_type, dtype)


@dataclass
class _Registered:
    graph: Graph
    steps: dict[tuple, BoundStep] = field(default_factory=dict)


class WorkerService:
    """One task's worker: graphs by (session, key), steps on the executor, tensors by rendezvous."""

    def __init__(self, task: str, devices: list[LocalDevice], pools: DevicePools,
                 loop: asyncio.AbstractEventLoop, pusher: Pusher, intra_op_threads: int) -> None:
        self.task = task
        self.task_spec = DeviceSpec.from_string(task)
        self.devices = devices
        self.loop = loop
        self.resources = ResourceContainer()
        self.rendezvous = Rendezvous()
        self.executor = Executor(pools)
        self.context = KernelContext(self.resources, intra_op_threads)
        self._pusher = pusher
        self._graphs: dict[tuple[str, str], _Registered] = {}
        self._tasks: set[asyncio.Task] = set()
        self._last_duration: dict[int, float] = {}   # id(BoundStep) -> seconds its last run took
        self._running: dict[int, Any] = {}   # step_id -> executor Future, for abort_step
        self.copy_aliases = True   # the server turns it off unless it serves inproc://
        self._lock = threading.Lock()

    # ---- graphs --------------------------------------------------------------------
    def register_graph(self, session: str, graph_key: str, graph: dict, arrays: list) -> None:
        self._graphs[(session, graph_key)] = _Registered(graph_from_dict(graph, arrays))

    def deregister_session(self, session: str) -> None:
        for key in [k for k in self._graphs if k[0] == session]:
            del self._graphs[key]

    # ---- steps -----------------------------------------------------------------------
    async def run_graph(self, session: str, graph_key: str, step_id: int, feeds: list[str],
                        fetches: list[str], targets: list[str], values: list[np.ndarray],
                        timeout: float | None) -> list[np.ndarray]:
        """Run one partition for one step; returns the fetched values (owned by the caller)."""
        registered = self._graphs.get((session, graph_key))
        if registered is None:
            raise NotFoundError(None, None, f"graph '{graph_key}' of session '{session}' is not "
                                f"registered on {self.task}; the master must RegisterGraph first")
        step = self._bound(registered, feeds, fetches, targets)
        if len(values) != len(feeds):
            raise InvalidArgumentError(None, None, f"RunGraph carries {len(values)} tensors for "
                                       f"{len(feeds)} feeds")
        # A step that took under INLINE_SECONDS last time runs right here on the loop thread:
        # for the small steps of a parameter server that saves two thread hops (~100 us).
        inline = self._last_duration.get(id(step), 1.0) < INLINE_SECONDS
        started = time.perf_counter()
        future = self.executor.run(step, values, StepContext(self.context, step_id, self),
                                   inline=inline)
        self._running[step_id] = future
        try:
            if future.done():
                outputs = future.result()
            else:
                outputs = await asyncio.wait_for(asyncio.wrap_future(future), timeout)
            self._last_duration[id(step)] = time.perf_counter() - started
        except BaseException as error:
            future.abort(AbortedError(None, None, f"step {step_id} aborted on {self.task}"))
            self.rendezvous.abort_step(step_id, AbortedError(None, None, f"step {step_id} was aborted"))
            if isinstance(error, asyncio.TimeoutError):
                raise _deadline(self.task, step_id, timeout) from None
            raise
        finally:
            self._running.pop(step_id, None)
            self.loop.call_later(5.0, self.rendezvous.cleanup_step, step_id)
        if self.copy_aliases and any(self.resources.holds(v) for v in outputs):
            return await self.loop.run_in_executor(None, lambda: [self._owned(v) for v in outputs])
        return [np.asarray(v) for v in outputs]

    def _bound(self, registered: _Registered, feeds: list[str], fetches: list[str],
               targets: list[str]) -> BoundStep:
        key = (tuple(feeds), tuple(fetches), tuple(targets))
        step = registered.steps.get(key)
        if step is None:
            graph = registered.graph
            plan = plan_step([_tensor(graph, n) for n in fetches], [_tensor(graph, n) for n in feeds],
                             [_op(graph, n) for n in targets], [d.name for d in self.devices],
                             supports, task=self.task_spec, allow_soft_placement=True)
            step = bind(plan, lookup)
            registered.steps[key] = step
        return step

    def _owned(self, value: Any) -> np.ndarray:
        """A value safe to hand over in-process: never a view of a variable's storage.

        Over tcp and ipc the bytes are copied into the socket anyway, so values that alias a
        variable leave without a copy of their own (``copy_aliases`` False), like TF1's
        unlocked ref reads: an update racing the send can be seen by it."""
        if isinstance(value, np.ndarray) and self.resources.holds(value):
            return value.copy()
        return np.asarray(value)

    # ---- transfers -------------------------------------------------------------------
    def send(self, dst_task: str, step_id: int, key: str, value: Any, done: Callable) -> None:
        """Push ``value`` to ``dst_task`` from the loop thread; ``done`` reports the outcome."""
        if self.copy_aliases:
            value = self._owned(value)

        async def push() -> None:
            try:
                await self._pusher(dst_task, step_id, key, value)
            except BaseException as error:  # noqa: BLE001
                done(None, error)
            else:
                done([], None)

        self.loop.call_soon_threadsafe(self._spawn, push)

    def _spawn(self, factory: Callable[[], Awaitable[None]]) -> None:
        """Start a task and keep a strong reference until it ends (asyncio only keeps weak ones)."""
        task = self.loop.create_task(factory())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def push_tensor(self, step_id: int, key: str, value: np.ndarray) -> None:
        self.rendezvous.put(step_id, key, value)

    def abort_step(self, step_id: int, reason: str) -> None:
        """Fail the step's partition here: its Recvs and its ops parked in queues let go."""
        self.rendezvous.abort_step(step_id, AbortedError(None, None, reason))
        running = self._running.get(step_id)
        if running is not None:
            running.abort(AbortedError(None, None, reason))
        self.loop.call_later(5.0, self.rendezvous.cleanup_step, step_id)

    def reset(self) -> None:
        self.resources.clear()


def _deadline(task: str, step_id: int, timeout: float | None) -> Exception:
    from zmtf.framework.errors import DeadlineExceededError

    return DeadlineExceededError(None, None, f"step {step_id} did not finish on {task} within "
                                 f"{timeout} s")


def _tensor(graph: Graph, name: str) -> Tensor:
    element = graph.as_graph_element(name, allow_operation=False)
    if not isinstance(element, Tensor):
        raise FetchNotFoundError(None, None, f"'{name}' is not a tensor of the registered graph")
    return element


def _op(graph: Graph, name: str) -> Operation:
    return graph.get_operation_by_name(name)

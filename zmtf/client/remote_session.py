"""A session on a cluster: the graph goes to a master once, then one RunStep per run().

Targets: "zmtf://host:port", "grpc://host:port" (accepted for drop-in TF scripts),
"tcp://host:port", and "inproc://name" / "ipc://path" for servers in this process / host.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from typing import Any, Callable, Generator

import numpy as np

from zmtf.client.fetches import FetchPlans
from zmtf.client.partition_graphs import partition_graph_defs
from zmtf.client.feeds import Feeds, feed_arrays
from zmtf.client.session_core import make_placement_log_visible
from zmtf.distributed import inproc, security, shared_memory, transit
from zmtf.distributed.blocking import BlockingChannel
from zmtf.distributed.channel import Channel
from zmtf.distributed.off_loop import node_count, set_up
from zmtf.distributed.trace_clock import STEP_SPAN_NODE, onto_master
from zmtf.formats.config_proto import ConfigProto, RunMetadata, RunOptions
from zmtf.formats.step_stats_proto import fill_step_stats
from zmtf.framework.errors import InvalidArgumentError, NotFoundError, UnavailableError
from zmtf.framework.graph import Graph
from zmtf.framework.graph_io import graph_to_dict
from zmtf.runtime.executor import fetched
from zmtf.runtime.step_stats import from_plain, wall_now
from zmtf.wire import messages as m

CONNECT_TIMEOUT = 10.0   # seconds to reach the master before UnavailableError
#: beyond the budget it gave the master for late tasks: the master's ListDevices probe (2 s)
CREATE_SLACK = 3.0
DEFAULT_RUN_TIMEOUT = 3600.0
# seconds close() waits for the master to confirm CloseSession: the master closes the session
# whether or not we wait, and one that is dead or paused must not hold up the client's exit
CLOSE_TIMEOUT = 1.0


def endpoint_of(target: str) -> str:
    """The zmq endpoint of a session target; names the accepted forms on a bad one."""
    for scheme in ("zmtf://", "grpc://", "tcp://"):
        if target.startswith(scheme):
            address = target[len(scheme):]
            host, _, port = address.rpartition(":")
            if not host or not port.isdigit():
                break
            return f"tcp://{address}"
    if target.startswith(("inproc://", "ipc://")) and len(target) > 9:
        return target
    forms = ("'' (local), 'zmtf://host:port', 'grpc://host:port', 'tcp://host:port', "
             "'inproc://name' or 'ipc://path'")
    if not target.startswith(("zmtf://", "grpc://", "tcp://", "inproc://", "ipc://")):
        # a scheme no session serves: TF1 finds no session factory for it
        raise NotFoundError(
            None, None, f"No session factory registered for the given session options: "
            f"{{target: {target}}}; a session's target is one of {forms}.")
    raise InvalidArgumentError(None, None, f"Session target '{target}' is not understood: use {forms}.")


def _checked_partitions(reply: Any) -> list[dict[str, Any]]:
    """The reply's partition listing, refused with a typed error when it is not one."""
    for part in reply.partition_graphs:
        nodes = part.get("nodes")
        if not isinstance(part.get("device"), str) or not isinstance(nodes, list) or not all(
                isinstance(n, dict) and isinstance(n.get("name"), str) and isinstance(n.get("op"), str)
                and isinstance(n.get("inputs", []), list) for n in nodes):
            raise InvalidArgumentError(None, None, "the master's RunStepResult.partition_graphs is "
                                       "malformed: each must be {'device': str, 'nodes': [{'name', "
                                       "'op', 'inputs'}]}; is the server another zmtf version?")
    return list(reply.partition_graphs)


def _writable(value: Any) -> Any:
    """Decoded arrays arrive read-only; one assembled in our own buffer can simply be unlocked
    (O(1), no 256 MB copy on the event loop); one in a same-host sender's shared memory gets a
    copy-on-write mapping of its own (O(1) too); one that views a sender's memory otherwise
    cannot, and ``fetched`` then copies it."""
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        try:
            value.setflags(write=True)
        except ValueError:
            if value.nbytes >= shared_memory.THRESHOLD:
                return shared_memory.unlocked(value)
    return value


@dataclass(frozen=True, slots=True)
class Call:
    """One request the protocol wants sent, how long to wait for its reply, and (when less)
    how long to wait for the connection to the master before it is sent."""

    message: Any
    timeout: float
    on_cancel: Callable[[int], Any] | None = None
    connect_timeout: float | None = None


@dataclass(frozen=True, slots=True)
class SessionNeeded:
    """The protocol needs the master session (created once, under the driver's lock): within
    ``timeout`` s to reach the master, ``limit`` s (the step's budget) for it to answer."""

    timeout: float
    limit: float


@dataclass(frozen=True, slots=True)
class Encode:
    """The protocol needs the graph encoded for the wire (``graph_to_dict``): seconds for a
    big graph, which an AsyncSession does on a thread so that its loop runs on (off_loop)."""

    graph: Graph

    def __call__(self) -> tuple[dict, list]:
        return graph_to_dict(self.graph)


class RemoteSessionCore:
    """The client side of a master session; lives on one event loop."""

    def __init__(self, target: str, graph: Graph, config: ConfigProto) -> None:
        self.target = target
        self.graph = graph
        self.config = config
        # a server of this process listening at the target: reach it through memory
        self.endpoint = inproc.local_endpoint(endpoint_of(target))
        self._inproc = self.endpoint.startswith("inproc://")   # its server must run in this process
        shared = inproc.context_for(self.endpoint)
        self._own_context = shared is None
        self._context = shared or inproc.new_context()
        self._channel: Channel | None = None
        self._keys = security.client_credential()   # CURVE: ZMTF_CURVE_KEY, or an in-process server's
        self._handle: str | None = None
        self._sent_version = -1
        self._lock: asyncio.Lock | None = None
        self._threads = threading.local()          # the sync Session's socket per thread
        self._blocking: list[BlockingChannel] = []
        self._thread_lock = threading.Lock()      # guards the list of per-thread sockets
        self._session_lock = threading.Lock()     # one thread creates the master session
        self._closing = False                     # close_blocking() has run
        self._fetch_plans = FetchPlans(graph)
        self._context_released = False
        if config.log_device_placement:
            make_placement_log_visible()  # shows the lines of masters running in this process

    def _check_inproc(self) -> None:
        if self._inproc and inproc.context_for(self.endpoint) is None:
            raise UnavailableError(None, None, f"no zmtf server is running in this process at "
                                   f"{self.endpoint}; inproc:// targets reach in-process servers only")

    def _chan(self) -> Channel:
        self._check_inproc()
        if self._channel is None:
            self._channel = Channel(self._context, self.endpoint, asyncio.get_running_loop(),
                                    peer=self.target, keys=self._keys)
            self._lock = asyncio.Lock()
        return self._channel

    # ---- the protocol, written once: generators that yield Calls and get replies back ----
    def _session_calls(self, connect_timeout: float, limit: float
                       ) -> Generator[Call | Encode, Any, str]:
        """Create the master session, or extend it when the graph grew since it was sent.
        The master may wait up to ``limit`` s for tasks of the graph that are not up yet."""
        version = self.graph.version
        if self._handle is not None and version == self._sent_version:
            return self._handle
        graph, arrays = yield Encode(self.graph)
        if self._handle is None:
            config = {"log_device_placement": bool(self.config.log_device_placement),
                      "allow_soft_placement": bool(self.config.allow_soft_placement),
                      "device_filters": list(self.config.device_filters)}
            if self.config.isolate_session_state:   # left out otherwise: older servers refuse it
                config["isolate_session_state"] = True
            if self.config.cluster_def.job:   # plain data: {job: {"index": address}}
                config["cluster_def"] = {job.name: {str(i): a for i, a in job.tasks.items()}
                                         for job in self.config.cluster_def.job}
            reply = yield Call(m.CreateSession(id=0, graph=graph, config=config, tensors=arrays,
                                               timeout_ms=max(1, int(limit * 1000))),
                               limit + CREATE_SLACK, connect_timeout=connect_timeout)
            self._handle = reply.session
        else:
            yield Call(m.ExtendSession(id=0, session=self._handle, graph=graph, tensors=arrays),
                       connect_timeout)
        self._sent_version = version
        return self._handle

    def _run_calls(self, fetches: Any, feed_dict: dict | None, options: RunOptions | None,
                   timeout: float | None, run_metadata: RunMetadata | None = None,
                   feeds: Feeds | None = None) -> Generator[Call | SessionNeeded, Any, Any]:
        """One run(): the session first if needed, then a RunStep; returns the fetch structure.
        Traced (``options.trace_level`` with a ``run_metadata``), every task's node timings
        come back into ``run_metadata.step_stats``. ``feeds``: ``feed_dict`` resolved and
        converted already (AsyncSession does it off its loop when that is long work)."""
        plan = self._fetch_plans.get(fetches)
        if feeds is None:
            feeds = feed_arrays(self.graph, feed_dict) if feed_dict else ([], [])
        feed_tensors, feed_values = feeds
        timeout_ms = (options.timeout_in_ms if options else 0) or self.config.operation_timeout_in_ms
        if timeout is not None:
            timeout_ms = int(timeout * 1000)
        limit = timeout_ms / 1000.0 if timeout_ms > 0 else DEFAULT_RUN_TIMEOUT
        handle = self._handle
        if handle is None or self.graph.version != self._sent_version:   # else: no round of
            # the driver and no lock for a session that is open and current (the usual run)
            handle = yield SessionNeeded(min(CONNECT_TIMEOUT, limit), limit)
        trace_level = partitions = 0
        if run_metadata is not None:
            run_metadata.Clear()   # TF1's run() fills it anew, or leaves it empty
            if options is not None:
                trace_level = options.trace_level   # traced: the step's timings come back
                partitions = int(bool(options.output_partition_graphs))
        request = m.RunStep(id=0, session=handle, feeds=[t.name for t in feed_tensors],
                            fetches=plan.fetch_names, targets=plan.target_names,
                            timeout_ms=timeout_ms, trace_level=trace_level,
                            sent_us=transit.stamp(), partition_graphs=partitions,
                            tensors=feed_values)
        sent = wall_now() if trace_level else 0.0
        reply = yield Call(request, limit + 1.0,
                           lambda request_id: m.CancelStep(id=0, session=handle, request_id=request_id))
        if trace_level:   # every task's stats, moved onto this process's clock
            assert run_metadata is not None   # traced only with one
            received = wall_now()
            from_plain(reply.step_stats, self.target)   # checked before it is read
            fill_step_stats(run_metadata.step_stats, from_plain(   # TF's messages, once
                onto_master(reply.step_stats, sent, received, STEP_SPAN_NODE), self.target))
        if partitions:
            assert run_metadata is not None   # asked for only with one
            run_metadata.partition_graphs.extend(partition_graph_defs(
                self.graph, [(p["device"], p["nodes"]) for p in _checked_partitions(reply)]))
        tensors, values = reply.tensors, []
        for k in plan.picks:
            values.append(None if k is None else fetched(_writable(tensors[k])))
        return plan.rebuild(values)

    # ---- driving it from asyncio ------------------------------------------------------------
    async def _drive(self, calls: Generator[Any, Any, Any]) -> Any:
        reply: Any = None
        try:
            while True:
                step = calls.send(reply)
                if isinstance(step, SessionNeeded):
                    assert self._lock is not None
                    async with self._lock:
                        reply = await self._drive(self._session_calls(step.timeout, step.limit))
                elif isinstance(step, Encode):
                    reply = await set_up(node_count(step.graph), step)
                else:
                    reply = await self._chan().call(step.message, step.timeout, step.on_cancel,
                                                    step.connect_timeout)
        except StopIteration as done:
            return done.value

    async def run(self, fetches: Any, feed_dict: dict | None, options: RunOptions | None,
                  run_metadata: RunMetadata | None, timeout: float | None,
                  feeds: Feeds | None = None) -> Any:
        self._chan()
        return await self._drive(self._run_calls(fetches, feed_dict, options, timeout, run_metadata,
                                                 feeds))

    # ---- driving it from a plain thread (the sync Session) ------------------------------------
    def _blocking_chan(self) -> BlockingChannel:
        if self._inproc:
            self._check_inproc()
        channel = getattr(self._threads, "channel", None)
        if channel is None:
            # a session that has a handle was served by its master: a new thread's socket
            # that cannot reach it within the liveness bound fails then, naming it
            channel = BlockingChannel(self._context, self.endpoint, peer=self.target, keys=self._keys,
                                      served_before=self._handle is not None)
            self._threads.channel = channel
            with self._thread_lock:
                self._blocking.append(channel)
        return channel

    def _drive_blocking(self, calls: Generator[Any, Any, Any]) -> Any:
        reply: Any = None
        try:
            while True:
                step = calls.send(reply)
                if isinstance(step, SessionNeeded):
                    with self._session_lock:
                        reply = self._drive_blocking(self._session_calls(step.timeout, step.limit))
                elif isinstance(step, Encode):
                    reply = step()
                else:
                    reply = self._blocking_chan().call(step.message, step.timeout, step.on_cancel,
                                                       step.connect_timeout)
        except StopIteration as done:
            return done.value

    def run_blocking(self, fetches: Any, feed_dict: dict | None, options: RunOptions | None,
                     run_metadata: RunMetadata | None = None) -> Any:
        """run() on the calling thread with its own socket: no event loop involved."""
        try:
            return self._drive_blocking(self._run_calls(fetches, feed_dict, options, None,
                                                        run_metadata))
        finally:
            if self._closing:   # another thread closed the session during this run
                self._release_context()

    async def list_devices(self) -> list[dict[str, Any]]:
        reply = await self._chan().call(m.ListDevices(id=0), CONNECT_TIMEOUT)
        return list(reply.devices)

    async def reset(self, containers: list[str]) -> None:
        """Clear the named containers on the cluster (the default one for []), within the
        config's operation_timeout_in_ms when it sets one (TF's deadline for it)."""
        ms = self.config.operation_timeout_in_ms
        await self._chan().call(m.Reset(id=0, containers=containers),
                                ms / 1000.0 if ms > 0 else CONNECT_TIMEOUT)

    def list_devices_blocking(self) -> list[dict[str, Any]]:
        return list(self._blocking_chan().call(m.ListDevices(id=0), CONNECT_TIMEOUT).devices)

    def close_blocking(self) -> None:
        """Close the sync Session's sockets (after telling the master, from this thread)."""
        if self._handle is not None and self._blocking:
            try:
                self._blocking_chan().call(m.CloseSession(id=0, session=self._handle), CLOSE_TIMEOUT)
            except Exception:  # noqa: BLE001 - the server may be gone; closing still succeeds
                pass
            self._handle = None
        self._closing = True
        with self._thread_lock:
            channels = list(self._blocking)
        for channel in channels:
            channel.close()   # a channel in use by another thread closes when its call ends
        self._release_context()

    def _release_context(self) -> None:
        """Destroy our own zmq Context once no thread's socket is open on it any more."""
        with self._thread_lock:
            if any(not c.closed for c in self._blocking) or self._context_released:
                return
            self._blocking = []
            self._context_released = True
        if self._own_context and self._channel is None:
            self._context.destroy(linger=0)

    async def close(self) -> None:
        if self._channel is not None:
            if self._handle is not None:
                try:
                    await self._channel.call(m.CloseSession(id=0, session=self._handle), CLOSE_TIMEOUT)
                except Exception:  # noqa: BLE001 - the server may be gone; closing still succeeds
                    pass
            self._channel.close()
            self._channel = None
        if self._own_context:
            self._context.destroy(linger=0)

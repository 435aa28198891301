"""Server (tf.train.Server): one task of a cluster, with a master and a worker service.

``ServerCore`` is the async implementation (run it on any loop: tests, embedding);
``Server`` is TF's sync face, which runs a ServerCore on its own loop thread. Each server
owns one zmq Context shared by its sockets (inproc:// needs that), and its config decides
its devices and thread pools (logged at start, since TF users trip over which config wins).
"""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import logging
import os
import sys
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np
import zmq

from zmtf.formats.cluster_def_proto import ClusterDef
from zmtf.formats.config_proto import ConfigProto, check_session_config
from zmtf.formats.server_def_proto import ServerDef
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.graph import Graph
from zmtf.framework.graph_io import graph_from_dict
from zmtf.distributed import faults, identities, inproc, liveness, operator_log, security, shared_memory, transit
from zmtf.distributed.bind_policy import check_may_listen, is_local_only
from zmtf.distributed.cluster_spec import ClusterSpec, bind_endpoint, bound_address, \
    check_addresses, endpoint, tasks_on_this_machine
from zmtf.distributed.loop_thread import LoopThread
from zmtf.distributed.futures import then
from zmtf.distributed.master import MasterService
from zmtf.distributed.off_loop import node_count, off_loop_for, set_up, start_off_loop
from zmtf.distributed.peers import LOCAL_RESET, WorkerPeer
from zmtf.distributed.quotas import check_graph_size, inflight_budget
from zmtf.distributed.session_cluster import check_session_cluster
from zmtf.distributed.trace_clock import STEP_SPAN_NODE, span
from zmtf.distributed.client_sessions import ClientSessions
from zmtf.distributed.process_tuning import tune_process
from zmtf.distributed.server_options import ServerOptions, with_environment
from zmtf.distributed.session_gc import SessionCollector
from zmtf.distributed.task_stats import TaskStats, status_fields
from zmtf.distributed.task_wait import wait_for_tasks
from zmtf.distributed.channel import Channel
from zmtf.distributed.listener import Listener
from zmtf.distributed.sockets import RECEIVE_BUFFERS
from zmtf.distributed.worker import WorkerService
from zmtf.framework.errors import AbortedError, CancelledError, InvalidArgumentError, \
    PermissionDeniedError, UnavailableError
from zmtf.framework.log_limits import PeerLogLimiter, clip_list
from zmtf.placement.op_policy import OpPolicy, allowed_names, check_graph, check_reset
from zmtf.kernels.cpu.blas import for_server as blas_for_server
from zmtf.kernels.cpu.blas import set_blas_threads
from zmtf.runtime.devices import DevicePools, LocalDevice, local_devices
from zmtf.runtime.file_access import FileAccess
from zmtf.runtime.step_stats import to_plain, wall_now
from zmtf.wire import messages as m

if TYPE_CHECKING:   # prometheus_client loads only in a server with metrics on
    from zmtf.distributed.metrics import ServerMetrics

log = logging.getLogger("zmtf.server")

DEFAULT_STEP_TIMEOUT = 600.0   # seconds a step may take when neither client nor server config sets one
RUNNING_SWEEP_MIN = 64         # steps tracked for CancelStep before finished ones are dropped


def default_step_timeout(config: ConfigProto) -> float:
    """The deadline of a step whose client sets none: the server config's
    ``operation_timeout_in_ms`` (TF's default session config of a server), else 600 s."""
    ms = config.operation_timeout_in_ms
    return ms / 1000.0 if ms > 0 else DEFAULT_STEP_TIMEOUT


class ServerCore:
    """The async server: a ROUTER listener dispatching to the master and worker services."""

    def __init__(self, cluster: Any, job_name: str, task_index: int,
                 config: ConfigProto | None = None, context: zmq.Context | None = None,
                 options: ServerOptions | None = None) -> None:
        self.cluster = ClusterSpec(cluster)
        check_addresses(self.cluster)   # TF's rule: a server checks its cluster's addresses
        self.options = with_environment(options or ServerOptions(), os.environ)
        if self.options.no_shared_memory:   # process-wide: its channels and clients too
            shared_memory.set_enabled(False)
        self._collector: SessionCollector | None = None
        self._clients: ClientSessions | None = None   # sessions by client process (while started)
        if job_name not in self.cluster.jobs:
            raise ValueError(f"job '{job_name}' is not in the cluster spec (jobs: {self.cluster.jobs})")
        self.address = self.cluster.task_address(job_name, task_index)
        self.job_name, self.task_index = job_name, int(task_index)
        self.task = self.cluster.device_name(job_name, self.task_index)
        self.config = config or ConfigProto()
        check_session_config(self.config)
        # CURVE: the cluster's key directory (curve_dir, else ZMTF_CURVE_DIR) and this task's
        # own credential (curve_key, else DIR.private's), or None: plaintext. Read before the
        # Context is made: a server refused for its keys leaves nothing open
        self.cluster_keys, self.keys = security.for_server(
            self.options.curve_dir, self.options.curve_key, job_name, self.task_index)
        self._owners = identities.SessionOwners()   # under CURVE: who created each session
        self._session_quota = identities.SessionQuota(
            identities.check_session_limit(self.options.max_sessions_per_client))
        self._own_context = context is None
        self.context = context or zmq.Context()
        self._channels: dict[str, Channel] = {}
        self._peers: dict[str, WorkerPeer] = {}
        self._running: dict[tuple[str, int], Any] = {}   # (session, RunStep id) -> step (cancel())
        self._running_limit = RUNNING_SWEEP_MIN   # its size at which finished steps are dropped
        self._closing: set[str] = set()   # sessions being closed by CloseSession
        self._listener: Listener | None = None
        self._local_listener: Listener | None = None   # inproc:// twin of a tcp listener
        self.worker: WorkerService | None = None
        self.master: MasterService | None = None
        self._pools: DevicePools | None = None
        self._devices: list[LocalDevice] = []
        self._peer_devices: dict[str, list[str]] = {}   # task -> its device names (ListDevices)
        self.started = False
        self._pauses: liveness.PauseWatch | None = None   # while started (see liveness)
        # what graphs from the network may run here (file ops, Print, py_func)
        self.op_policy = OpPolicy(allowed_names(self.options.allow_ops), self.options.file_root,
                                  server=self.task)
        # how late requests arrive, per session: from its client (RunStep), from its master
        # (RunGraph); two clocks, so two tables (see transit)
        self._from_clients = transit.TransitDelays()
        self._from_masters = transit.TransitDelays()
        # quotas: the bytes held for requests in flight (steps' outputs, inbound streams)
        self.budget = inflight_budget(self.options.max_inflight_bytes)
        self._peer_log = PeerLogLimiter(log, self.options.peer_log_secs)   # peer-caused lines
        self._beat: liveness.LoopBeat | None = None
        self.stats = TaskStats()   # steps, partitions, traffic: for StatusRequest (zmtf.status)
        self.metrics: ServerMetrics | None = None   # while started with a metrics_port
        self._session_clients: dict[str, str] = {}   # open session -> who opened it (the log)
        self._session_lines = operator_log.SessionLines(self.task, self.options.peer_log_secs)

    @property
    def devices(self) -> list[LocalDevice]:
        return self._devices

    async def start(self) -> None:
        """Bind and start serving on the running loop."""
        if self.started:
            return
        check_may_listen(self.address, self.task, self.keys is not None, self.options.insecure)
        if self.options.metrics_port:   # first: a port in use leaves nothing else open
            from zmtf.distributed.metrics import for_server   # prometheus_client: only then
            self.metrics = for_server(self)
        loop = asyncio.get_running_loop()
        self._pools = DevicePools(self.config.inter_op_parallelism_threads)
        self._devices = local_devices(self.task, self.config.gpu_options, self.config.device_count,
                                      self._pools)
        intra = self.config.intra_op_parallelism_threads or self._pools.threads
        set_blas_threads(self.config.intra_op_parallelism_threads)
        blas_for_server(self.config.intra_op_parallelism_threads, tasks_on_this_machine(self.cluster))
        self.worker = WorkerService(self.task, self.devices, self._pools, loop, self._push, intra)
        self.worker.resources.files = FileAccess(self.options.file_root)
        self.worker.budget = self.budget   # its steps' big outputs count against it
        self.master = MasterService(self.task, self.worker, self._cluster_devices, self.peer,
                                    default_step_timeout(self.config), self.learn_cluster_devices,
                                    self._wait_for)
        self.master.step_failures.interval = self.options.peer_log_secs
        bind = bind_endpoint(self.address)
        if self.keys is not None:
            assert self.cluster_keys is not None
            security.start_authenticator(self.context, self.cluster_keys, self.keys, self.task,
                                         self.options.peer_log_secs)
        try:
            self._listener = Listener(self.context, bind, self.handle, loop, self.keys,
                                      on_gone=self._peer_gone, **self._listener_settings())
        except BaseException:
            if self.keys is not None:
                security.stop_authenticator(self.context, self.keys)
            if self.metrics is not None:
                self.metrics.close()
            raise
        self._take_bound_port(self._listener.endpoint)
        faults.listening(self._listener, self.address)   # (a test harness's faults)
        # in-process peers and clients would share a variable's memory: copy only then
        self.worker.copy_aliases = bind.startswith("inproc://")
        self.stats.start(loop)
        self._pauses = liveness.watch_pauses()   # drops work queued while this task was paused
        self._beat = liveness.LoopBeat(loop, self._pauses)   # ... or while its loop was stuck
        if bind.startswith("inproc://"):
            inproc.register(bind, self.context)
        elif self.keys is None:   # under CURVE every client shows its key, in-process ones too
            self._serve_in_process(loop, self.worker, self._listener.endpoint)
        self._collector = SessionCollector(loop, self.master, self.options.session_gc_secs,
                                           self._session_busy, self._collect_session,
                                           self._release_buffers)
        if self.options.session_gc_secs > 0:
            self._collector.start()
        listener = self._listener
        self._clients = ClientSessions(loop, liveness.liveness_seconds(), listener.connected_peers,
                                       listener.reachable, self._collector.collect)
        self.started = True
        log.info("started %s listening on %s (devices: %s; inter-op threads %d, intra-op threads %d; "
                 "%s)", self.task, self._listener.endpoint, ", ".join(d.name for d in self.devices),
                 self._pools.threads, intra,
                 f"CURVE as task key {self.keys.name}, admitting the keys in "
                 f"{self.cluster_keys.directory}" if self.keys and self.cluster_keys
                 else "plaintext, no CURVE")
        log.info("%s", operator_log.policy_line(self.task, self.op_policy.allow_ops,
                                                self.op_policy.file_root, self.options.allow_reset,
                                                self.options))
        if self.keys is None and not is_local_only(self.address):
            log.warning("%s serves %s in plaintext (insecure): anyone who reaches it can run any "
                        "op on this server", self.task, self._listener.endpoint)

    def _take_bound_port(self, bound: str) -> None:
        """A task address with port 0 asked for a free port: from now on the address (and
        the cluster this server knows) has the port it got, so its target reports it."""
        address = bound_address(self.address, bound)
        if address != self.address:
            self.address = address
            self.cluster = self.cluster.with_address(self.job_name, self.task_index, address)

    def _listener_settings(self) -> dict[str, Any]:
        """What a listener of this server admits (connections, its budget) and waits for (a
        handshake, a stalled stream), and how often it logs a peer's errors."""
        return {"handshake_secs": self.options.handshake_timeout_secs,
                "max_connections": self.options.max_connections, "budget": self.budget,
                "stream_idle_secs": self.options.stream_idle_secs,
                "peer_log_secs": self.options.peer_log_secs, "traffic": self.stats.traffic,
                "meter": self.metrics.listener_meter() if self.metrics is not None else None}

    def _admit_graph(self, what: str, graph: Any, arrays: Any) -> None:
        """A graph from the network, before anything is built of it: its size within the
        quotas, then its ops within the op policy (a worker's port is as open as a master's)."""
        check_graph_size(what, graph, arrays, self.options.max_graph_nodes,
                         self.options.max_graph_bytes)
        check_graph(graph, self.op_policy)

    def _read_graph(self, what: str, graph: Any, arrays: Any) -> Graph:
        """A graph off the wire, admitted (``_admit_graph``) and parsed: may run on a thread."""
        self._admit_graph(what, graph, arrays)
        return graph_from_dict(graph, arrays)

    def _serve_in_process(self, loop: asyncio.AbstractEventLoop, worker: WorkerService,
                          bound: str) -> None:
        """Also listen on a private inproc:// endpoint, the alias of the tcp one for Sessions
        in this process (TF1's ``tf.Session(server.target)`` in a worker's own process): no
        loopback network, no zmq I/O thread between them. Its replies never share a
        variable's memory with the client (zero-copy inproc would otherwise hand it over)."""
        local = f"inproc://zmtf-local{self.task}#{id(self):x}"
        self._local_listener = Listener(self.context, local, self.handle, loop,
                                        prepare_reply=worker.private_reply,
                                        **self._listener_settings())
        faults.listening(self._local_listener, self.address)
        inproc.register(local, self.context)
        for name in _tcp_names(self.address, bound):
            inproc.register_alias(name, local)

    async def stop(self) -> None:
        """Close sockets and pools; pending calls fail with UnavailableError."""
        if not self.started:
            return
        self.started = False
        if self._collector is not None:
            self._collector.stop()
        if self._clients is not None:
            self._clients.stop()
        self.stats.stop()
        for listener in (self._listener, self._local_listener):
            if listener is not None:
                await listener.close()
                if listener.endpoint.startswith("inproc://"):
                    inproc.unregister(listener.endpoint)
        for channel in self._channels.values():
            channel.close()
        self._channels.clear()
        if self._pools is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._pools.shutdown)
        if self.keys is not None:
            security.stop_authenticator(self.context, self.keys)
        if self._pauses is not None:
            liveness.unwatch_pauses()
        if self._beat is not None:
            self._beat.stop()
        if self.metrics is not None:
            self.metrics.close()
        self.release_context()
        log.info("stopped %s", self.task)

    def release_context(self) -> None:
        """Destroy the zmq Context this server made (not one it was given); also for a
        server that never started."""
        if self._own_context and not self.context.closed:
            self.context.destroy(linger=0)

    @property
    def endpoint(self) -> str:
        return self._listener.endpoint if self._listener else bind_endpoint(self.address)

    # ---- serving -----------------------------------------------------------------------------
    # Requests come through the listeners, which start() opens after it made the worker and
    # master services: the handlers assert that (an invariant, not a check of the request).
    def handle(self, message: Any, sender: identities.Sender | None = None,
               peer: bytes = b"") -> Any:
        """Dispatch one request from ``peer`` (its routing id); returns a reply or a coroutine
        that makes one. ``sender``: the CURVE identity it came with (None: plaintext or
        in-process, no identities)."""
        handler = self._HANDLERS.get(type(message))
        if handler is None:
            raise InvalidArgumentError(None, None, f"{type(message).__name__} is not a request this "
                                       f"server accepts")
        if type(message) is m.Reset:   # a task's key may clear containers; a client needs the flag
            check_reset(self.options.allow_reset or identities.is_task(sender), self.task)
        if sender is not None:
            identities.check_message(type(message), sender)
            if type(message) in _NAMING_A_SESSION and not sender.is_task:
                self._owners.check(message.session, sender, self.task)
        if type(message) is m.CreateSession:   # who opens it: its quota, owner, collection
            if sender is not None:
                return self._create_session_as(message, sender, peer)
            return self._create_session(message, peer)
        return handler(self, message)

    async def _create_session_as(self, msg: m.CreateSession, sender: identities.Sender,
                                 peer: bytes) -> Any:
        """CreateSession under CURVE: a client key's is counted against
        max_sessions_per_client; the session is its creator's (SessionOwners)."""
        counted = not sender.is_task
        if counted:
            self._session_quota.admit(sender, set(self.open_sessions()), self.task)
        try:
            reply = await self._create_session(msg, peer, sender)
        except BaseException:
            if counted:
                self._session_quota.failed(sender)
            raise
        if counted:
            self._session_quota.created(sender, reply.session)
        self._owners.record(reply.session, sender)
        return reply

    async def _create_session(self, msg: m.CreateSession, peer: bytes = b"",
                              sender: identities.Sender | None = None) -> m.SessionCreated:
        """Open a session; first wait for the tasks its graph places ops on that are not up
        yet (TF1 waits at CreateSession too), so that their devices are known when it is
        placed: a late GPU ps gets its variables on its GPU, not on a guessed CPU:0.
        A big graph is checked, measured and parsed on a thread (off_loop)."""
        nodes = node_count(msg.graph)
        await set_up(nodes, self._admit_graph, "CreateSession", msg.graph, msg.tensors)
        check_session_cluster(msg.config, self.cluster)
        _check_flags(msg.config)
        filters = _device_filters(msg.config)
        if type(msg.timeout_ms) is not int:
            raise InvalidArgumentError(None, None, "CreateSession's timeout_ms must be an int")
        graph = await set_up(nodes, graph_from_dict, msg.graph, msg.tensors)
        size = await set_up(nodes, operator_log.graph_size, msg.graph, msg.tensors)
        named = self._tasks_named(graph, filters)
        if named:
            limit = (msg.timeout_ms / 1000.0 if msg.timeout_ms > 0
                     else self.options.wait_for_tasks_secs)
            await self._wait_for(named, limit, "CreateSession")
        await self.learn_cluster_devices(filters)
        assert self.master is not None
        handle = self.master.open_session(graph, msg.config)
        if self._clients is not None:   # closed when that client is gone
            self._clients.created(peer, handle)
        self._session_clients[handle] = str(sender) if sender is not None else ""
        self._session_lines.created(handle, sender, size)
        return m.SessionCreated(id=msg.id, session=handle)

    def _peer_gone(self, peer: bytes) -> None:
        if self._clients is not None:
            self._clients.gone(peer)

    def _extend_session(self, msg: m.ExtendSession) -> Any:
        if off_loop_for(node_count(msg.graph)):   # a big graph: checked and parsed on a thread
            return self._extend_off_loop(msg)
        self._admit_graph("ExtendSession", msg.graph, msg.tensors)
        assert self.master is not None
        self.master.extend_session(msg.session, graph_from_dict(msg.graph, msg.tensors))
        return m.Ok(id=msg.id)

    async def _extend_off_loop(self, msg: m.ExtendSession) -> m.Ok:
        graph = await start_off_loop(self._read_graph, "ExtendSession", msg.graph, msg.tensors)
        assert self.master is not None
        self.master.extend_session(msg.session, graph)
        return m.Ok(id=msg.id)

    def _run_step(self, msg: m.RunStep) -> Any:
        """The master's step itself, settling with the RunStepResult: the reply is sent from
        the callback that finishes the step, with no outcome of ours in between."""
        trace: list | None = [] if msg.trace_level > 0 else None
        arrived = wall_now() if trace is not None else 0.0   # the RunStep span (trace_clock)
        key = (msg.session, msg.id)
        running = self._running
        stats = self.stats
        master = self.master
        assert master is not None
        timeout_ms = msg.timeout_ms
        assert self._pauses is not None   # started, like the services
        late = self._from_clients.excess(msg.session, msg.sent_us, time.monotonic())
        refused, waited = self._pauses.refusal(
            self.task, "RunStep", msg.id, timeout_ms / 1000.0 if timeout_ms > 0 else None, late,
            self._beat)
        if waited:   # read during or just after a pause of this task, or late: rare
            if refused is not None:
                raise refused
            if timeout_ms > 0:   # what is left of the client's budget
                timeout_ms = max(1, timeout_ms - int(waited * 1000))

        def finish(values: list) -> m.RunStepResult:
            running.pop(key, None)   # done: no CancelStep for it now (and its values not kept)
            stats.steps += 1
            parts = [] if not msg.partition_graphs else master.partition_graphs(
                msg.session, msg.feeds, msg.fetches, msg.targets)
            return m.RunStepResult(id=msg.id, tensors=values, partition_graphs=parts,
                                   step_stats=[] if trace is None else [
                *to_plain(trace), span(self.task, arrived, wall_now(), STEP_SPAN_NODE)])

        metrics = self.metrics
        started = time.perf_counter() if metrics is not None else 0.0
        step = master.run_step(msg.session, msg.feeds, msg.fetches, msg.targets, msg.tensors,
                               timeout_ms, trace, finish)
        if metrics is not None:
            metrics.watch_step(step, started, lambda: master.step_kind(
                msg.session, msg.feeds, msg.fetches, msg.targets))
        if not step.settled:
            running[key] = step   # for CancelStep and CloseSession
            if len(running) > self._running_limit:   # failed steps are dropped now and then
                self._forget_finished_steps()
        return step

    def _forget_finished_steps(self) -> None:
        """Drop finished steps from ``_running``: a step that succeeds leaves it as it finishes,
        one that fails now and then, here (a failure is rare: no callback per step for it)."""
        running = self._running   # in place: each step's finish holds this dict
        for key in [key for key, step in running.items() if step.settled]:
            del running[key]
        self._running_limit = max(RUNNING_SWEEP_MIN, 2 * len(running))

    def steps_in_flight(self) -> int:
        """How many RunSteps this master is running now."""
        return sum(not step.settled for step in self._running.values())

    def requests_in_flight(self) -> int:
        """Requests this task is serving that have not replied yet (its listeners')."""
        return sum(listener.in_flight() for listener in (self._listener, self._local_listener)
                   if listener is not None)

    def _cancel_step(self, msg: m.CancelStep) -> None:
        """Abort a running step whose client gave up (no reply: the client is not waiting)."""
        step = self._running.get((msg.session, msg.request_id))
        if step is not None:
            step.cancel()
        return None

    async def _close_session(self, msg: m.CloseSession) -> m.Ok:
        """Fail the session's steps still running (a chief's sync op waits forever), then close.
        Their callers still wait (another thread of the client's process closed the session):
        they get a CancelledError, not silence."""
        self._closing.add(msg.session)
        try:
            for (session, _), step in list(self._running.items()):
                if session == msg.session and not step.settled:
                    step.set_exception(_closed_session())   # aborts it, as a cancel would
            assert self.master is not None
            if self._forget_session(msg.session):   # it was open: closed now, its peers next
                self._session_lines.closed(msg.session)
            await self.master.close_session(msg.session)
        finally:
            self._closing.discard(msg.session)
        return m.Ok(id=msg.id)

    def _session_busy(self, handle: str) -> bool:
        """Whether a step of the session is running (it is not idle, however long it takes)."""
        return any(key[0] == handle and not step.settled for key, step in self._running.items())

    async def _collect_session(self, handle: str) -> None:
        """Close a session whose client is gone (session_gc): as CloseSession, with no reply."""
        for key in [key for key in self._running if key[0] == handle]:
            del self._running[key]
        self._forget_session(handle)   # the collector logged it ("closing session")
        assert self.master is not None
        await self.master.close_session(handle)

    def _forget_session(self, handle: str) -> bool:
        """A session being closed is no longer its client's (collection), its creator's
        (owners) or logged as open; whether it was open."""
        if self._clients is not None:
            self._clients.closed(handle)
        self._owners.forget(handle)
        return self._session_clients.pop(handle, None) is not None

    def _release_buffers(self) -> None:
        """Hand back received and output buffers nothing uses (kept for reuse otherwise)."""
        RECEIVE_BUFFERS.release_free()
        if self.worker is not None:
            self.worker.release_free_buffers()

    def open_sessions(self) -> list[str]:
        """The sessions open on this task's master (read-only)."""
        return self.master.session_handles() if self.master is not None else []

    def registered_sessions(self) -> set[str]:
        """The sessions with partitions registered on this task's worker (read-only)."""
        return self.worker.registered_sessions() if self.worker is not None else set()

    async def _reset(self, msg: m.Reset) -> m.Ok:
        """TF's Session.reset: clear the named containers (the default one for none) on every
        task, and close this master's sessions (their next request: AbortedError)."""
        assert self.worker is not None
        passed_on = msg.containers[:1] == [LOCAL_RESET]
        containers = msg.containers[1:] if passed_on else list(msg.containers)
        self.worker.reset(containers)
        if passed_on:
            return m.Ok(id=msg.id)
        others = [self.cluster.device_name(j, i) for j, i, _ in self.cluster.all_tasks()]
        outcomes = await asyncio.gather(
            *[self.peer(t).reset_own(containers) for t in others if t != self.task],
            return_exceptions=True)   # a task that is down has nothing to clear
        refused = [o for o in outcomes if isinstance(o, PermissionDeniedError)]
        if refused:
            raise refused[0]
        await self._close_sessions_for_reset(containers)
        return m.Ok(id=msg.id)

    async def _close_sessions_for_reset(self, containers: list[str]) -> None:
        """Close every session of this master, as TF's master does on Reset: steps running
        fail with AbortedError, and so does every later request of those sessions."""
        assert self.master is not None
        handles = set(self.master.session_handles())
        named = ", ".join(containers) if containers else "the default container"
        reason = f"the session was closed by tf.Session.reset ({named}) on {self.task}; open a new Session"
        for (session, _), step in list(self._running.items()):
            if session in handles and not step.settled:
                step.set_exception(AbortedError(None, None, reason))
        for handle in handles:
            for key in [key for key in self._running if key[0] == handle]:
                del self._running[key]
            if self._forget_session(handle):
                self._session_lines.closed(handle)
            await self.master.close_session(handle, reset=True)

    def _list_devices(self, msg: m.ListDevices) -> m.DeviceList:
        """This task's devices first, then the cluster's it knows of (a peer keeps the ones of
        its own task). Answering never calls another task, so peers cannot ask in circles."""
        own = [{"name": d.name, "device_type": d.device_type, "memory_limit": d.memory_limit}
               for d in self.devices]
        known = {d["name"] for d in own}
        down = self._tasks_down()   # a task that stopped is not listed (it has no devices now)
        others = [{"name": n, "device_type": "GPU" if "device:GPU:" in n else "CPU", "memory_limit": 0}
                  for n in self._cluster_devices()
                  if n not in known and not (down and n.split("/device:")[0] in down)]
        return m.DeviceList(id=msg.id, devices=own + others)

    def _tasks_down(self) -> set[str]:
        """The peers this task has a connection to that is not up now (lost, or never made)."""
        return {task for task, channel in self._channels.items()
                if channel.remote and not channel.connected}

    def _register_graph(self, msg: m.RegisterGraph) -> Any:
        if off_loop_for(node_count(msg.graph)):   # a big graph: checked and parsed on a thread
            return self._register_off_loop(msg)
        self._admit_graph("RegisterGraph", msg.graph, msg.tensors)
        assert self.worker is not None
        self.worker.register_graph(msg.session, msg.graph_key, msg.graph, msg.tensors,
                                   msg.isolated == 1)
        return m.Ok(id=msg.id)

    async def _register_off_loop(self, msg: m.RegisterGraph) -> m.Ok:
        assert self.worker is not None
        began = self.worker.deregistrations   # a DeregisterGraph meanwhile: not kept
        graph = await start_off_loop(self._read_graph, "RegisterGraph", msg.graph, msg.tensors)
        self.worker.keep_graph(msg.session, msg.graph_key, graph, msg.isolated == 1, began)
        return m.Ok(id=msg.id)

    def _deregister_graph(self, msg: m.DeregisterGraph) -> m.Ok:
        assert self.worker is not None
        self.worker.deregister_session(msg.session)
        return m.Ok(id=msg.id)

    def _run_graph(self, msg: m.RunGraph) -> Any:
        """Run a partition for a step, unless its step was aborted here already or it waited
        past its budget (the step's remaining deadline, counted from its arrival) or past
        the liveness bound while this task was paused: its master has failed it by then."""
        timeout = msg.timeout_ms / 1000.0 if msg.timeout_ms > 0 else None
        trace: list | None = [] if msg.trace_level > 0 else None
        arrived = wall_now() if trace is not None else 0.0   # the RunGraph span (trace_clock)
        assert self.worker is not None
        assert self._pauses is not None
        late = self._from_masters.excess(msg.session, msg.sent_us, time.monotonic())
        refused, waited = self._pauses.refusal(self.task, "RunGraph of step", msg.step_id,
                                               timeout, late, self._beat)
        if waited:   # read during or just after a pause of this task, or late: rare
            if refused is not None:
                raise refused
            if timeout is not None:
                timeout -= waited
        started = time.perf_counter() if self.metrics is not None else 0.0
        outputs = self.worker.run_graph(msg.session, msg.graph_key, msg.step_id, msg.feeds,
                                        msg.fetches, msg.targets, msg.tensors, timeout, trace)
        if self.metrics is not None:
            self.metrics.watch_run_graph(outputs, started)

        def result(tensors: list) -> m.RunGraphResult:
            self.stats.graphs += 1
            stats = [] if trace is None else [*to_plain(trace), span(self.task, arrived, wall_now())]
            return m.RunGraphResult(id=msg.id, tensors=tensors, step_stats=stats)

        if outputs.settled:   # it ran through here and now (a ps's read): the reply itself
            return result(outputs.result())
        return then(outputs, result)

    def _cleanup_step(self, msg: m.CleanupStep) -> m.Ok:
        assert self.worker is not None
        self.worker.abort_step(msg.step_id, f"step {msg.step_id} was aborted by its master")
        return m.Ok(id=msg.id)

    def _push_tensor(self, msg: m.PushTensor) -> None:
        """Tensors for a step's Recvs. No reply (the sender does not wait); a malformed push
        fails that step here with the reason, instead of an error reply nobody reads."""
        assert self.worker is not None
        if len(msg.tensors) != len(msg.keys):
            reason = (f"PushTensor for {clip_list(msg.keys)} carries {len(msg.tensors)} tensors, "
                      f"expected {len(msg.keys)}")
            self._peer_log.log(logging.WARNING, None, "PushTensor", "step %d: %s", msg.step_id,
                               reason)
            self.worker.rendezvous.abort_step(msg.step_id, InvalidArgumentError(None, None, reason))
            return None
        for key, value in zip(msg.keys, msg.tensors):
            self.worker.push_tensor(msg.step_id, key, value)
        return None

    def _ping(self, msg: m.Ping) -> m.Pong:
        return m.Pong(id=msg.id, task=self.task, incarnation=0)

    def _status(self, msg: m.StatusRequest) -> m.TaskStatus:
        """This task's health and load, for ``python -m zmtf.status`` (task_stats)."""
        return m.TaskStatus(id=msg.id, task=self.task, address=self.endpoint,
                            devices=[d.name for d in self.devices],
                            sessions=len(self.open_sessions()),
                            steps_running=self.steps_in_flight(), **status_fields(self.stats))

    _HANDLERS: ClassVar[dict[type[m.Message], Callable[[ServerCore, Any], Any]]] = {
        m.CreateSession: _create_session, m.ExtendSession: _extend_session, m.RunStep: _run_step,
        m.CloseSession: _close_session, m.Reset: _reset, m.ListDevices: _list_devices,
        m.RegisterGraph: _register_graph, m.DeregisterGraph: _deregister_graph,
        m.RunGraph: _run_graph, m.CleanupStep: _cleanup_step, m.PushTensor: _push_tensor,
        m.Ping: _ping, m.CancelStep: _cancel_step, m.StatusRequest: _status,
    }

    # ---- calling peers -----------------------------------------------------------------------
    def _cluster_devices(self) -> list[str]:
        """Every device of the cluster, this task's first; a peer not asked yet counts as CPU:0."""
        names = [d.name for d in self.devices]
        for job, index, _ in self.cluster.all_tasks():
            task = self.cluster.device_name(job, index)
            if task != self.task:
                names.extend(self._peer_devices.get(task, [f"{task}/device:CPU:0"]))
        return names

    async def learn_cluster_devices(self, filters: list[str] | None = None) -> None:
        """Ask every peer for its devices (once per peer; an unreachable one is asked again
        later); with ``filters`` (a session's device_filters), only the peers they match."""
        async def ask(task: str) -> None:
            try:
                devices = await self.peer(task).list_devices(2.0)
            except Exception:  # noqa: BLE001 - a task that is down now gets CPU:0 for placement
                return
            mine = [d for d in devices if d["name"].startswith(task + "/")]
            self._peer_devices[task] = [d["name"] for d in mine]

        peers = [self.cluster.device_name(j, i) for j, i, _ in self.cluster.all_tasks()]
        if filters:
            peers = [t for t in peers if any(_names_task(f, t) for f in filters)]
        await asyncio.gather(*[ask(t) for t in peers if t != self.task and t not in self._peer_devices])

    def _tasks_named(self, graph: Graph, filters: list[str]) -> list[str]:
        """The other tasks whose devices ``graph``'s ops name (by job, or job and task), among
        those ``filters`` (device_filters) let the session see."""
        specs = {op.device for op in graph.get_operations() if op.device.startswith("/job:")}
        named = []
        for job, index, _ in self.cluster.all_tasks():
            task = self.cluster.device_name(job, index)
            if task == self.task or (filters and not any(_names_task(f, task) for f in filters)):
                continue
            if any(_names_task(spec, task) for spec in specs):
                named.append(task)
        return named

    async def _wait_for(self, tasks: list[str], limit: float, what: str = "RegisterGraph") -> None:
        """Wait for tasks that have not started yet (task_wait), up to ``limit`` s and the
        server's wait_for_tasks_secs. An in-process (inproc://) peer is not waited for: it
        fails at once, as it always did."""
        remote = [t for t in tasks if not self._address_of(t).startswith("inproc://")]
        # a task that was up and whose connection dropped did not start late: it died or was
        # cut off; it gets the liveness bound to come back (its channel's), then the step fails
        lost = [t for t in remote if self.peer(t).unavailable() is not None]
        if lost:
            await asyncio.gather(*[self.peer(t).ping(limit) for t in lost])
            remote = [t for t in remote if t not in lost]
        if remote:
            await wait_for_tasks(lambda task, timeout: self.peer(task).ping(timeout), remote,
                                 self._address_of, min(limit, self.options.wait_for_tasks_secs),
                                 self.options.wait_log_secs, what)

    def _address_of(self, task: str) -> str:
        """The endpoint of a task named "/job:J/replica:0/task:I"."""
        spec = task.split("/")
        return endpoint(self.cluster.task_address(spec[1].split(":")[1], int(spec[3].split(":")[1])))

    def channel(self, task: str) -> Channel:
        channel = self._channels.get(task)
        if channel is not None and channel.remote:
            return channel   # the hot path: a tcp/ipc peer's address never changes
        address = self._address_of(task)
        context = self.context
        if address.startswith("inproc://"):
            # inproc reaches only sockets of the same Context: the peer server's, if it runs
            peer_context = inproc.context_for(address)
            if peer_context is None:
                raise UnavailableError(None, None, f"no server for {task} is running in this "
                                       f"process at {address}")
            context = peer_context
        if channel is None or channel.closed or channel.context is not context:
            if channel is not None:
                channel.close()
            channel = Channel(context, address, asyncio.get_running_loop(), peer=task, keys=self.keys,
                              traffic=self.stats.traffic)
            if self.metrics is not None:
                channel.meter = self.metrics.peer_traffic(task)
            faults.owned_by(channel.routing_id, self.address)   # (a test harness's faults)
            self._channels[task] = channel
        return channel

    def peer(self, task: str) -> WorkerPeer:
        """Another task, to call: its channel is looked up on every call (``channel``)."""
        peer = self._peers.get(task)
        if peer is None:
            peer = self._peers[task] = WorkerPeer(task, self.channel)
        return peer

    def _push(self, task: str, step_id: int, keys: list[str], values: list[np.ndarray]) -> None:
        self.peer(task).push_tensors(step_id, keys, values)


_FLAGS = ("allow_soft_placement", "log_device_placement", "isolate_session_state")


#: client requests that name a session: a client key may name only its own (SessionOwners)
_NAMING_A_SESSION = frozenset({m.ExtendSession, m.RunStep, m.CloseSession, m.CancelStep})


def _closed_session() -> CancelledError:
    return CancelledError(None, None, "Session has been closed (Session::Close): the step was "
                          "cancelled (tf.Session.close() from another thread)")


def _check_flags(config: dict[str, Any]) -> None:
    """A session config's yes/no options, checked (they come from the network: a list or a
    dict must not pass for True)."""
    for key in _FLAGS:
        if type(config.get(key, False)) is not bool:
            raise InvalidArgumentError(None, None, f"config {key!r} must be a bool, got "
                                       f"{type(config[key]).__name__}")


def _device_filters(config: dict[str, Any]) -> list[str]:
    """A session config's device_filters, checked (they come from the network)."""
    filters = config.get("device_filters", [])
    if type(filters) is not list or not all(type(f) is str for f in filters):
        raise InvalidArgumentError(None, None, "config 'device_filters' must be a list of device names")
    try:
        for spec in filters:
            DeviceSpec.from_string(spec)
    except (ValueError, TypeError) as exc:
        raise InvalidArgumentError(None, None, f"config 'device_filters': {exc}") from None
    return filters


def _names_task(spec: str, task: str) -> bool:
    """Whether a filter names this task (whatever device it then names)."""
    want, have = DeviceSpec.from_string(spec), DeviceSpec.from_string(task)
    return all(getattr(want, n) is None or getattr(want, n) == getattr(have, n)
               for n in ("job", "replica", "task"))


def _tcp_names(address: str, bound: str) -> set[str]:
    """The tcp:// endpoints under which a client in this process may name this server."""
    names = {endpoint(address), bound}
    host, _, port = bound[len("tcp://"):].rpartition(":")
    if host in ("127.0.0.1", "0.0.0.0", "localhost") and port.isdigit():
        names.update({f"tcp://127.0.0.1:{port}", f"tcp://localhost:{port}"})
    return {n for n in names if n.startswith("tcp://")}


def _read_server_def(server_def: ServerDef, job_name: str | None, task_index: int | None,
                     protocol: str | None) -> tuple[ClusterDef, str | None, int, str | None]:
    """The cluster, job, task and protocol of a ServerDef; arguments given override it (TF)."""
    if server_def.port:
        raise ValueError(f"ServerDef.port ({server_def.port}) is not supported: a zmtf server binds "
                         f"the address its task has in the cluster; put the port there")
    return (server_def.cluster, (server_def.job_name or None) if job_name is None else job_name,
            server_def.task_index if task_index is None else task_index,
            (server_def.protocol or None) if protocol is None else protocol)


def _server_options(settings: dict[str, Any]) -> ServerOptions:
    """The ServerOptions that keyword arguments name; an unknown name is refused by name."""
    known = {f.name for f in dataclasses.fields(ServerOptions)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise TypeError(f"tf.train.Server got unknown setting(s) {unknown}; zmtf's server settings "
                        f"are {sorted(known)}")
    return ServerOptions(**settings)


class Server:
    """``tf.train.Server(cluster, job_name="ps", task_index=0)``: serves on its own thread.

    Unlike TF, ``stop()`` really stops it and ``join()`` then returns. zmtf's own settings
    are keyword arguments, the fields of ``server_options.ServerOptions`` (``session_gc_secs``,
    ``wait_for_tasks_secs``, ``curve_dir``, ...; ``python -m zmtf.server`` has a flag for each).
    The first server a process starts tunes the process for serving, as ``python -m
    zmtf.server`` does (gc.freeze, glibc keeps freed memory: distributed/process_tuning.py);
    ``tune_process=False`` (or ``ZMTF_TUNE_PROCESS=0``) leaves the process alone.
    """

    def __init__(self, server_or_cluster_def: Any, job_name: str | None = None,
                 task_index: int | None = None, protocol: str | None = None,
                 config: ConfigProto | None = None, start: bool = True, **settings: Any) -> None:
        options = _server_options(settings)
        if isinstance(server_or_cluster_def, ServerDef):
            if config is None:   # a copy: the ServerDef stays the caller's
                config = ConfigProto()
                config.CopyFrom(server_or_cluster_def.default_session_config)
            server_or_cluster_def, job_name, task_index, protocol = _read_server_def(
                server_or_cluster_def, job_name, task_index, protocol)
        if protocol not in (None, "grpc", "zmtf", "zmq"):
            raise ValueError(f"protocol '{protocol}' is not supported; zmtf speaks ZeroMQ ('zmtf', or "
                             f"'grpc' accepted as an alias for drop-in scripts)")
        cluster = ClusterSpec(server_or_cluster_def)
        if job_name is None:
            if len(cluster.jobs) != 1:
                raise ValueError(f"job_name must be given: the cluster has jobs {cluster.jobs}")
            job_name = cluster.jobs[0]
        if task_index is None:
            indices = cluster.task_indices(job_name)
            if len(indices) != 1:
                raise ValueError(f"task_index must be given: job '{job_name}' has tasks {indices}")
            task_index = indices[0]
        self._core = ServerCore(cluster, job_name, task_index, config, options=options)
        self._loop: LoopThread | None = None
        _live_servers.add(self)
        self._stopped = threading.Event()
        if start:
            self.start()

    @property
    def target(self) -> str:
        """The target to pass to tf.Session: "zmtf://host:port" (or the inproc/ipc endpoint)."""
        address = self._core.address
        return address if "://" in address else f"zmtf://{address}"

    @property
    def server_def(self) -> ServerDef:
        """This server as a ``tf.train.ServerDef``: its cluster, job, task, protocol and
        ``default_session_config`` (the config it was made with; left unset when that is
        empty, as TF's ServerDef of a server made without one)."""
        server_def = ServerDef(cluster=self._core.cluster.as_cluster_def(),
                               job_name=self._core.job_name, task_index=self._core.task_index,
                               protocol="grpc")
        if self._core.config.ByteSize():
            server_def.default_session_config.CopyFrom(self._core.config)
        return server_def

    def open_sessions(self) -> list[str]:
        """The sessions open on this server's master (read-only)."""
        return self._core.open_sessions()

    def registered_sessions(self) -> set[str]:
        """The sessions with partitions registered on this server's worker (read-only)."""
        return self._core.registered_sessions()

    def start(self) -> None:
        if self._loop is None:
            self._loop = LoopThread(name=f"zmtf-server-{self._core.job_name}-{self._core.task_index}")
            try:
                self._loop.call(self._core.start())
            except BaseException:
                self._loop.stop()
                self._loop = None
                raise
            if self._core.options.tune_process:
                tune_process()   # once per process, as python -m zmtf.server's (process_tuning.py)

    def join(self) -> None:
        """Block until ``stop()`` is called (from another thread or a signal handler)."""
        self._stopped.wait()

    def stop(self) -> None:
        if self._loop is not None:
            loop, self._loop = self._loop, None
            try:
                loop.call(self._core.stop(), timeout=30)
            finally:
                loop.stop()
        else:
            self._core.release_context()
        self._stopped.set()

    @staticmethod
    def create_local_server(config: ConfigProto | None = None, start: bool = True) -> Server:
        """A one-task cluster on a free localhost port (port 0: the OS picks it when the
        server binds, so no other process can take it in between)."""
        return Server({"localhost": ["127.0.0.1:0"]}, "localhost", 0, config=config, start=start)

    def _stop_soon(self) -> None:
        """Stop without waiting for it: the garbage collector may finalize a server on any
        thread, its own loop thread and inter-op pool threads included, where waiting would
        wait for itself (the pool's shutdown waits for this very thread: a 30 s stall, then a
        server left half stopped). The loop thread stops the server, then itself."""
        loop, self._loop = self._loop, None
        self._stopped.set()
        if loop is None:
            self._core.release_context()
            return
        stopping = loop.submit(self._core.stop())
        stopping.add_done_callback(lambda _: loop.stop())

    def __del__(self) -> None:
        if sys.is_finalizing():
            return  # too late to talk to the loop thread; _stop_live_servers ran at exit
        try:
            self._stop_soon()
        except Exception:  # noqa: BLE001
            pass


_live_servers: "weakref.WeakSet[Server]" = weakref.WeakSet()


@atexit.register
def _stop_live_servers() -> None:
    """A script that never calls server.stop() still exits promptly and cleanly."""
    for server in list(_live_servers):
        try:
            server.stop()
        except Exception:  # noqa: BLE001 - exiting anyway
            pass

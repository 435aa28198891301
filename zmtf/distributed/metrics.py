"""Prometheus metrics of one server (``--metrics-port``), through ``prometheus_client``.

Every metric of a server is defined here, in its own registry (not the library's global
one: several servers in one process, as tests run them, each serve their own). The step
path calls in only where a server has metrics on (its hooks check for None), one call per
event; gauges that a scrape can read (open sessions, requests in flight, budget bytes) are
functions read at scrape time, so they cost the step path nothing at all.

Label values are bounded: ``task`` is this server's task; ``peer`` is a task of the
cluster ("ps-0"), "client" (a CURVE client key) or "unidentified" (a plaintext
connection: nobody is identified there), never an address or a client's own name;
``reason`` is an error class; ``kind`` is "local" or "distributed".

The endpoint has no authentication: it binds 127.0.0.1 unless ``metrics_address`` says
otherwise.
"""

from __future__ import annotations

import logging
import time
from bisect import bisect_left
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Callable, Protocol

from prometheus_client import CollectorRegistry, Gauge, ProcessCollector
from prometheus_client.exposition import start_http_server
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric

from zmtf.distributed.bind_policy import is_local_only
from zmtf.framework.errors import UnavailableError

if TYPE_CHECKING:
    from zmtf.distributed.cluster_spec import ClusterSpec
    from zmtf.distributed.server_options import ServerOptions
    from zmtf.framework.memory_budget import MemoryBudget

log = logging.getLogger("zmtf.server")

#: step and RunGraph latency bucket bounds, seconds: a ps read (~100 µs) to a long step
LATENCY_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                   0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CLIENT = "client"                 # any CURVE client key
UNIDENTIFIED = "unidentified"     # a plaintext connection: who it is is not known


def task_label(task: str) -> str:
    """"/job:ps/replica:0/task:0" -> "ps-0" (the name a task's CURVE key has)."""
    parts = dict(p.split(":", 1) for p in task.strip("/").split("/") if ":" in p)
    return f"{parts.get('job', '?')}-{parts.get('task', '?')}"


class Latency:
    """A histogram's counts, kept as plain numbers (see ``ServerMetrics``)."""

    __slots__ = ("counts", "sum")

    def __init__(self) -> None:
        self.counts = [0] * (len(LATENCY_BUCKETS) + 1)   # the last: above every bound (+Inf)
        self.sum = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect_left(LATENCY_BUCKETS, seconds)] += 1   # le: first bound >= seconds
        self.sum += seconds

    def buckets(self) -> list[tuple[str, float]]:
        """Cumulative (le, count) pairs, as the text format has them."""
        out, running = [], 0
        for bound, count in zip([*map(str, LATENCY_BUCKETS), "+Inf"], self.counts):
            running += count
            out.append((bound, float(running)))
        return out


class PeerTraffic:
    """The bytes and ZeroMQ messages to and from one peer label."""

    __slots__ = ("sent_bytes", "sent_messages", "received_bytes", "received_messages", "pings")

    def __init__(self) -> None:
        self.sent_bytes = self.sent_messages = self.received_bytes = self.received_messages = 0
        self.pings: Latency | None = None   # app-level Ping round trips, once there was one

    def pinged(self, seconds: float) -> None:
        """A Ping's round trip: ``Channel`` pings a peer silent for half the liveness bound
        while a call to it waits (a long step), so there are samples only then."""
        if self.pings is None:
            self.pings = Latency()
        self.pings.observe(seconds)

    def sent(self, sends: list[list[Any]]) -> None:
        """ZeroMQ messages sent (one per multipart; a streamed message is several). Frames are
        bytes, flat byte memoryviews or zmq.Frames: ``len`` is their size in bytes."""
        self.sent_messages += len(sends)
        for frames in sends:
            self.sent_bytes += sum(map(len, frames))

    def received(self, frames: list[Any]) -> None:
        """One ZeroMQ message received."""
        self.received_messages += 1
        self.received_bytes += sum(map(len, frames))


class ListenerMeter:
    """What one listener counts: traffic by the sender's label, refused requests."""

    __slots__ = ("_metrics", "_by_peer", "_unidentified")

    def __init__(self, metrics: ServerMetrics) -> None:
        self._metrics = metrics
        self._by_peer: dict[bytes, PeerTraffic] = {}   # CURVE connections only: forgotten as they go
        self._unidentified: PeerTraffic | None = None   # made at its first message (no 0 series)

    def _plaintext(self) -> PeerTraffic:
        if self._unidentified is None:
            self._unidentified = self._metrics.traffic(UNIDENTIFIED)
        return self._unidentified

    def received(self, peer: bytes, sender: Any, frames: list[Any]) -> None:
        """A message from routing id ``peer``; ``sender``: its CURVE identity, or None."""
        if sender is None:
            self._plaintext().received(frames)
            return
        traffic = self._by_peer.get(peer)
        if traffic is None:
            traffic = self._by_peer[peer] = self._metrics.traffic(self._metrics.sender_label(sender))
        traffic.received(frames)

    def sent(self, peer: Any, sends: list[list[Any]]) -> None:
        traffic = self._by_peer.get(peer)
        (traffic if traffic is not None else self._plaintext()).sent(sends)

    def forget(self, peer: bytes) -> None:
        """``peer``'s connection closed."""
        self._by_peer.pop(peer, None)

    def refused(self, error: BaseException) -> None:
        """A request refused before or by its handler (malformed, unknown, not allowed...)."""
        _count(self._metrics.refused, type(error).__name__)


def _count(table: dict[str, int], key: str) -> None:
    table[key] = table.get(key, 0) + 1


class ServerMetrics:
    """One server's metrics and their HTTP endpoint.

    Why plain numbers: prometheus_client's Counter and Histogram take a lock per update
    (~1 µs each, several per step); every update here happens on the server's loop thread,
    so the counts are plain ints, turned into metric families only when a scrape asks
    (``collect``, on the HTTP thread: it reads numbers, which the GIL keeps whole)."""

    def __init__(self, task: str, cluster_tasks: list[str]) -> None:
        self.task = task_label(task)
        self._known = {task_label(t) for t in cluster_tasks}   # the peer labels a task key may get
        self.steps: dict[str, Latency] = {}            # kind -> its steps that succeeded
        self.step_failures: dict[str, int] = {}        # error class -> steps
        self.run_graph = Latency()
        self.refused: dict[str, int] = {}              # error class -> requests
        self._peers: dict[str, PeerTraffic] = {}
        self.registry = registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=registry)   # process_resident_memory_bytes, cpu, fds
        registry.register(self)   # ``collect`` below
        self._gauges: list[Gauge] = []
        self._http: Any = None

    def traffic(self, peer: str) -> PeerTraffic:
        """The counters of peer label ``peer`` (one object per label)."""
        traffic = self._peers.get(peer)
        if traffic is None:
            traffic = self._peers[peer] = PeerTraffic()
        return traffic

    def peer_traffic(self, task: str) -> PeerTraffic:
        """The counters of the cluster's task ``task`` ("/job:ps/replica:0/task:0")."""
        return self.traffic(task_label(task))

    def listener_meter(self) -> ListenerMeter:
        return ListenerMeter(self)

    def sender_label(self, sender: Any) -> str:
        """A CURVE sender's label: its task when it is a task of this cluster, else "client"."""
        if sender.is_task and sender.name in self._known:
            return str(sender.name)
        return CLIENT

    def gauge(self, name: str, help: str, read: Callable[[], float]) -> None:
        """A gauge read at scrape time (nothing to update on the step path)."""
        gauge = Gauge(name, help, ["task"], registry=self.registry)
        gauge.labels(task=self.task).set_function(read)
        self._gauges.append(gauge)

    # ---- the step path's hooks --------------------------------------------------------------
    def watch_step(self, step: Any, started: float, kind: Callable[[], str]) -> None:
        """Count a RunStep when its outcome settles (at once if it has)."""
        def done(outcome: Any) -> None:
            reason = _failure(outcome)
            if reason is None:
                label = kind()
                latency = self.steps.get(label)
                if latency is None:
                    latency = self.steps[label] = Latency()
                latency.observe(time.perf_counter() - started)
            else:
                _count(self.step_failures, reason)
        step.add_done_callback(done)

    def watch_run_graph(self, outputs: Any, started: float) -> None:
        """Time a RunGraph's partition when its outcome settles."""
        observe = self.run_graph.observe
        outputs.add_done_callback(lambda _: observe(time.perf_counter() - started))

    # ---- a scrape ---------------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        """The counters and histograms, as prometheus_client's families (its Collector API)."""
        task = self.task
        steps = CounterMetricFamily("zmtf_steps", "RunSteps this master finished successfully",
                                    labels=["task", "kind"])
        latency = HistogramMetricFamily("zmtf_step_seconds", "RunStep latency on this master, "
                                        "from its dispatch to its outcome", labels=["task", "kind"])
        for kind, tally in list(self.steps.items()):
            buckets = tally.buckets()
            steps.add_metric([task, kind], buckets[-1][1])
            latency.add_metric([task, kind], buckets, tally.sum)
        yield steps
        yield latency
        yield _by_reason("zmtf_step_failures", "RunSteps that failed, by error class", task,
                         self.step_failures)
        run_graph = HistogramMetricFamily("zmtf_run_graph_seconds", "latency of the partitions "
                                          "this worker ran for its masters' RunGraph requests",
                                          labels=["task"])
        run_graph.add_metric([task], self.run_graph.buckets(), self.run_graph.sum)
        yield run_graph
        peers = list(self._peers.items())
        for field, name, help in (
                ("sent_bytes", "zmtf_peer_sent_bytes", "bytes sent to a peer (requests to "
                 "tasks, replies to callers)"),
                ("received_bytes", "zmtf_peer_received_bytes", "bytes received from a peer"),
                ("sent_messages", "zmtf_peer_sent_messages", "ZeroMQ messages sent to a peer"),
                ("received_messages", "zmtf_peer_received_messages", "ZeroMQ messages received "
                 "from a peer")):
            family = CounterMetricFamily(name, help, labels=["task", "peer"])
            for peer, traffic in peers:
                family.add_metric([task, peer], getattr(traffic, field))
            yield family
        pings = HistogramMetricFamily("zmtf_peer_ping_rtt_seconds", "round trip of the app-level "
                                      "Ping a task sends a peer that was silent for half the "
                                      "liveness bound while a call to it waited",
                                      labels=["task", "peer"])
        for peer, traffic in peers:
            if traffic.pings is not None:
                pings.add_metric([task, peer], traffic.pings.buckets(), traffic.pings.sum)
        yield pings
        yield _by_reason("zmtf_refused_requests", "requests refused (malformed, unknown, over a "
                         "quota, not allowed...), by error class", task, self.refused)

    def describe(self) -> list[Metric]:
        return []   # families are known at scrape time only (no names checked at register)

    # ---- the endpoint -----------------------------------------------------------------------
    def serve(self, address: str, port: int) -> None:
        """Serve the text format on http://address:port/metrics (prometheus_client's server)."""
        try:
            self._http = start_http_server(port, address, registry=self.registry)
        except OSError as error:
            raise UnavailableError(None, None, f"cannot serve metrics on {address}:{port}: "
                                   f"{error.strerror or error}; is another server already "
                                   f"using that port? (--metrics-port)") from None

    def close(self) -> None:
        if self._http is not None:
            server, thread = self._http
            self._http = None
            server.shutdown()
            server.server_close()
            thread.join(5)


def _by_reason(name: str, help: str, task: str, counts: dict[str, int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, help, labels=["task", "reason"])
    for reason, count in list(counts.items()):
        family.add_metric([task, reason], count)
    return family


class MeteredServer(Protocol):
    """What the metrics read of a server (a ServerCore; a protocol, so that this module,
    which the transport's type hints name, does not name the server back)."""

    task: str
    cluster: ClusterSpec
    options: ServerOptions
    budget: MemoryBudget

    def open_sessions(self) -> list[str]: ...

    def requests_in_flight(self) -> int: ...


def for_server(core: MeteredServer) -> ServerMetrics:
    """A starting server's metrics, served on its metrics_address:metrics_port."""
    cluster = core.cluster
    metrics = ServerMetrics(core.task, [cluster.device_name(j, i) for j, i, _ in cluster.all_tasks()])
    metrics.gauge("zmtf_open_sessions", "sessions open on this master",
                  lambda: len(core.open_sessions()))
    metrics.gauge("zmtf_requests_in_flight", "requests this task is serving that have not "
                  "replied yet", core.requests_in_flight)
    budget = core.budget
    metrics.gauge("zmtf_inflight_held_bytes", "bytes held for requests in flight (inbound "
                  "streams, step outputs), counted against max_inflight_bytes",
                  lambda: budget.held)
    metrics.gauge("zmtf_inflight_limit_bytes", "max_inflight_bytes: the most that may be held",
                  lambda: budget.limit)
    options = core.options
    metrics.serve(options.metrics_address, options.metrics_port)
    log.info("%s serves Prometheus metrics on http://%s:%d/metrics (no authentication)",
             core.task, options.metrics_address, options.metrics_port)
    if not is_local_only(f"{options.metrics_address}:{options.metrics_port}"):
        log.warning("%s: the metrics endpoint on %s has no authentication: anyone who reaches "
                    "it reads this task's metrics (peers, traffic, errors)", core.task,
                    options.metrics_address)
    return metrics


def _failure(outcome: Any) -> str | None:
    """The error class a settled outcome failed with ("CancelledError" when cancelled), or
    None when it succeeded."""
    if outcome.cancelled():
        return "CancelledError"
    error = outcome.exception()
    return None if error is None else type(error).__name__

"""The lines an operator follows: one line per event of a task's life, naming the tasks.

A server logs its start (address, devices, security, then one line of op policy and
quotas), each session it creates and closes (its short handle, the client key under CURVE,
the graph's size), each failed step (error class, step id, the task at fault), each peer
whose connection it lost and got back, and each key its CURVE handshake refused. Nothing
here runs when a step succeeds: the step path stays silent.

Lines that a peer or a failing loop can repeat go through ``PeerLogLimiter`` (one per task
and error class, or per address, per interval; the next one counts those held back), and
every field that came from the network goes through ``clip``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Sequence

from zmtf.framework.errors import CancelledError
from zmtf.framework.log_limits import DEFAULT_INTERVAL_SECS, PeerLogLimiter, clip
from zmtf.wire.codec import packed_size

server_log = logging.getLogger("zmtf.server")
master_log = logging.getLogger("zmtf.master")
transport_log = logging.getLogger("zmtf.transport")

SHORT_HANDLE = 8   # characters of a session handle in a log line (a uuid4's hex: unique enough)


def short(handle: str) -> str:
    """A session handle (one this master made: a uuid4's hex) as logged: its first characters."""
    return handle[:SHORT_HANDLE]


# ---- server start ---------------------------------------------------------------------------
def policy_line(task: str, allow_ops: frozenset[str], file_root: str | None, allow_reset: bool,
                options: Any) -> str:
    """The op policy and quotas in force, in one line (``options``: the ServerOptions)."""
    allowed = ", ".join(sorted(allow_ops)) or "none"
    files = f"under {file_root}" if file_root else "refused"
    def limit(value: int) -> str:
        return f"{value:,}" if value else "no limit"
    return (f"{task} op policy: file ops {files}, extra ops allowed: {allowed}, Session.reset by "
            f"clients {'allowed' if allow_reset else 'refused'}; quotas: graphs up to "
            f"{limit(options.max_graph_nodes)} nodes and {limit(options.max_graph_bytes)} bytes, "
            f"{limit(options.max_sessions_per_client)} sessions per client key, "
            f"{limit(options.max_connections)} connections, "
            f"{limit(options.max_inflight_bytes) if options.max_inflight_bytes else 'half the memory'} "
            f"in flight")


# ---- sessions -------------------------------------------------------------------------------
def graph_size(graph: Any, arrays: Any) -> str:
    """A graph off the wire as "N nodes, B bytes" (its encoding and its constants)."""
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    count = len(nodes) if isinstance(nodes, list) else 0
    tensors = sum(int(getattr(a, "nbytes", 0)) for a in arrays) if isinstance(arrays, list) else 0
    try:
        size = packed_size(graph) + tensors
    except Exception:  # noqa: BLE001 - a size for a log line: never fail the session for it
        size = tensors
    return f"{count:,} nodes, {size:,} bytes"


#: sessions per interval with lines of their own; beyond, one line per interval counts the rest
#: (anyone who reaches a master may open sessions in a loop: the log stays bounded)
SESSION_LINES = 8


class SessionLines:
    """"created session" and "closed session" lines: one per session, up to SESSION_LINES
    sessions per kind and interval (PeerLogLimiter with the session as its peer)."""

    def __init__(self, task: str, interval: float = DEFAULT_INTERVAL_SECS) -> None:
        self.task = task
        self._limiter = PeerLogLimiter(server_log, interval, max_peers=SESSION_LINES)

    def created(self, handle: str, client: Any, size: str) -> None:
        self._limiter.log(logging.INFO, short(handle), "created", "%s created session %s%s: "
                          "graph of %s", self.task, short(handle),
                          f" for {client}" if client is not None else "", size)

    def closed(self, handle: str, why: str = "its client closed it") -> None:
        self._limiter.log(logging.INFO, short(handle), "closed", "%s closed session %s: %s",
                          self.task, short(handle), why)


# ---- steps ----------------------------------------------------------------------------------
class StepFailures:
    """Failed steps, one line per (task at fault, error class) per ``interval`` s; the next
    line of that kind counts the failures held back (a failing loop logs a few lines)."""

    def __init__(self, task: str, interval: float = DEFAULT_INTERVAL_SECS) -> None:
        self.task = task
        self._limiter = PeerLogLimiter(master_log, interval)

    @property
    def interval(self) -> float:
        return self._limiter.interval

    @interval.setter
    def interval(self, seconds: float) -> None:
        self._limiter.interval = seconds

    def failed(self, session: str, step_id: int, error: BaseException, at_fault: str | None) -> None:
        """A step failed (not: cancelled by its client or by closing its session)."""
        if isinstance(error, (asyncio.CancelledError, CancelledError)):
            return
        kind = type(error).__name__
        where = at_fault or self.task
        message = getattr(error, "message", None) or str(error)
        # INFO, as every line here but refusals: a script's own in-process server must not
        # print its expected errors (OutOfRangeError ends an input loop) through Python's
        # last-resort WARNING handler; an operator's server logs INFO by default
        self._limiter.log(logging.INFO, where, kind, "step %d of session %s failed on %s: %s: %s",
                          step_id, short(session), where, kind, clip(message))


# ---- peers ----------------------------------------------------------------------------------
def connection_changed(peer: str, endpoint: str, was_up: bool, up: bool, lost_once: bool) -> None:
    """A channel's connection to ``peer`` dropped, or came back after a drop: one line each
    (zmq reconnects on its own; the attempts in between log nothing)."""
    if was_up and not up:
        transport_log.info("lost connection to %s at %s; calls to it fail with "
                           "UnavailableError until it is back", peer, endpoint)
    elif up and not was_up and lost_once:
        transport_log.info("reconnected to %s at %s", peer, endpoint)


# ---- handshakes -----------------------------------------------------------------------------
class RefusedKeys:
    """CURVE keys the ZAP handler refused: one line per peer address per interval."""

    def __init__(self, interval: float = DEFAULT_INTERVAL_SECS) -> None:
        self.tasks: list[str] = []   # the servers of the Context whose handshakes these are
        self._limiter = PeerLogLimiter(server_log, interval)

    def set_interval(self, seconds: float) -> None:
        self._limiter.interval = seconds

    def refused(self, address: str, key: bytes | str, directory: Any) -> None:
        text = key.decode("ascii", "replace") if isinstance(key, bytes) else key
        self._limiter.log(logging.WARNING, address, "refused key",
                          "%s refused a CURVE handshake from %s: key %s is not in the cluster's "
                          "key directory %s (python -m zmtf.keys add-client DIR NAME admits a "
                          "client; restart the servers after)", _names(self.tasks), clip(address),
                          clip(text, 64), directory)


#: libzmq's ZMQ_PROTOCOL_ERROR_ZMTP_* values of a failed handshake that mean "not one of ours"
PROTOCOL_ERROR_CRYPTOGRAPHIC = 0x11000001       # a CURVE key made for another server key
PROTOCOL_ERROR_MECHANISM_MISMATCH = 0x11000002  # a plaintext (NULL) client at a CURVE server
REFUSED_HANDSHAKES = {
    PROTOCOL_ERROR_MECHANISM_MISMATCH: "a plaintext client (this server requires CURVE: the "
    "client must set ZMTF_CURVE_KEY to a credential of this cluster)",
    PROTOCOL_ERROR_CRYPTOGRAPHIC: "a CURVE key made for another cluster's server key (check the "
    "client's ZMTF_CURVE_KEY, or this server's --curve-dir)",
}


def handshake_refused(limiter: PeerLogLimiter, endpoint: str, error_code: int) -> None:
    """A CURVE listener's handshake failed before ZAP (no key to check, so no address is
    known: libzmq's monitor gives the protocol error only): one line per kind per interval."""
    what = REFUSED_HANDSHAKES.get(error_code)
    if what is not None:
        limiter.log(logging.WARNING, None, f"handshake {error_code:#x}",
                    "%s refused a connection from %s", endpoint, what)


def _names(tasks: Sequence[str]) -> str:
    return ", ".join(tasks) or "this server"


__all__ = ["REFUSED_HANDSHAKES", "RefusedKeys", "StepFailures", "connection_changed", "graph_size",
           "handshake_refused", "policy_line", "SessionLines", "short"]

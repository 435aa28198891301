"""Connection state of zmtf's sockets, decided from ZeroMQ monitor events. No sockets here.

A zmq socket tells about its connections only through a monitor socket, whose messages
are an event number, a value (a file descriptor, an errno) and an endpoint. The shells in
``distributed/`` read those frames and hand them here; this module says what they mean:

* ``ClientConnection``: a channel's one connection to its server. Connected yet? Did the
  CURVE handshake fail (and what to tell the user)? Did a live connection drop?
* ``PeerTable``: which connection each peer of a ROUTER came by, so that a closed
  connection names the peer whose requests in flight must be cancelled.

The event numbers are libzmq's (``ZMQ_EVENT_*`` in zmq.h, part of its ABI); they are
written out here because ``wire`` does not import zmq.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from zmtf.framework.errors import OpError, UnauthenticatedError, UnavailableError

EVENT_CONNECTED = 0x0001
EVENT_ACCEPTED = 0x0020
EVENT_ACCEPT_FAILED = 0x0040
EVENT_DISCONNECTED = 0x0200
EVENT_HANDSHAKE_FAILED_NO_DETAIL = 0x0800
EVENT_HANDSHAKE_SUCCEEDED = 0x1000
EVENT_HANDSHAKE_FAILED_PROTOCOL = 0x2000
EVENT_HANDSHAKE_FAILED_AUTH = 0x4000

HANDSHAKE_FAILED = frozenset({EVENT_HANDSHAKE_FAILED_NO_DETAIL, EVENT_HANDSHAKE_FAILED_PROTOCOL,
                              EVENT_HANDSHAKE_FAILED_AUTH})
#: the outcomes of a CURVE handshake, as a monitor's event mask
HANDSHAKE_EVENTS = (EVENT_HANDSHAKE_SUCCEEDED | EVENT_HANDSHAKE_FAILED_NO_DETAIL
                    | EVENT_HANDSHAKE_FAILED_PROTOCOL | EVENT_HANDSHAKE_FAILED_AUTH)
#: the events a client's monitor asks for: connection, loss, and the handshake's outcome
CLIENT_EVENTS = EVENT_CONNECTED | EVENT_DISCONNECTED | HANDSHAKE_EVENTS
#: the events a server's monitor asks for: a peer's connection closed
SERVER_EVENTS = EVENT_DISCONNECTED
#: ... and those a capped server's asks for too: a connection opened, or could not be
#: accepted (the descriptor table is full); see wire.connection_cap
CAPPED_SERVER_EVENTS = SERVER_EVENTS | EVENT_ACCEPTED | EVENT_ACCEPT_FAILED

#: the variable that names a cluster's CURVE key directory (see distributed.security)
CURVE_DIR_ENV = "ZMTF_CURVE_DIR"   # a server's cluster key directory
CURVE_KEY_ENV = "ZMTF_CURVE_KEY"   # a client's own credential file

_EVENT_HEADER = struct.Struct("=Hi")   # uint16 event, int32 value, native byte order (libzmq)


@dataclass(frozen=True, slots=True)
class MonitorEvent:
    """One message of a zmq monitor socket (monitor protocol version 1)."""

    kind: int        # an EVENT_* number
    value: int       # for the events above: the connection's file descriptor, or an errno
    endpoint: bytes


def decode_monitor_event(frames: list[bytes]) -> MonitorEvent:
    """A monitor message's two frames -> MonitorEvent; ValueError if they are not one."""
    if len(frames) != 2 or len(frames[0]) != _EVENT_HEADER.size:
        raise ValueError(f"not a zmq monitor event: {len(frames)} frame(s), the first of "
                         f"{len(frames[0]) if frames else 0} bytes (expected 2 frames, the first "
                         f"of {_EVENT_HEADER.size})")
    kind, value = _EVENT_HEADER.unpack(frames[0])
    return MonitorEvent(kind, value, bytes(frames[1]))


@dataclass(frozen=True, slots=True)
class Refused:
    """The server refused this client (CURVE): every call fails with this reason."""

    reason: str


@dataclass(frozen=True, slots=True)
class Lost:
    """A live connection dropped: the calls waiting on it fail (UnavailableError)."""


class ClientConnection:
    """One client's connection to its server, as its monitor reports it.

    A plaintext connection is up at EVENT_CONNECTED, and after a loss only once a handshake
    succeeded: a stopped process's kernel still accepts the TCP connection, but nothing
    answers the greeting, so that peer is not back. A CURVE one (``secured``) is up only
    once its handshake succeeded, since the server may still refuse the key. An inproc://
    connection has no monitor and is up from the start (``connected=True``).
    """

    __slots__ = ("peer", "endpoint", "secured", "connected", "refused", "lost_once", "lost_at")

    def __init__(self, peer: str, endpoint: str, secured: bool, connected: bool = False) -> None:
        self.peer = peer
        self.endpoint = endpoint
        self.secured = secured
        self.connected = connected
        self.refused: str | None = None   # why the last handshake failed, until one succeeds
        self.lost_once = False            # a live connection dropped once (see the class doc)
        self.lost_at: float | None = None  # when the live connection dropped, until it is back

    def on_event(self, kind: int, now: float = 0.0) -> Refused | Lost | None:
        """Take one monitor event, seen at ``now`` (the shell's monotonic clock); say what the
        shell must do about the calls in flight."""
        change = self._take(kind)
        if self.connected:
            self.lost_at = None
        elif type(change) is Lost:
            self.lost_at = now
        return change

    def gone_for(self, now: float, liveness: float, deadline: float) -> float | None:
        """How long ago the live connection dropped, if a call waiting for it should fail now
        naming the peer: the peer had the liveness bound to come back (a restarted task does),
        or the call's own deadline passed first. None: keep waiting (or it never dropped)."""
        lost_at = self.lost_at
        if lost_at is None or self.connected:
            return None
        return now - lost_at if now >= lost_at + liveness or now >= deadline else None

    def error_for(self, change: Refused | Lost) -> OpError:
        """The error every call in flight fails with when the connection changed so."""
        if type(change) is Refused:
            return UnauthenticatedError(None, None, change.reason)
        return UnavailableError(None, None, f"lost the connection to {self.peer} at "
                                f"{self.endpoint}; the task may have died or been stopped")

    def _take(self, kind: int) -> Refused | Lost | None:
        if kind == EVENT_CONNECTED:
            if not self.secured and not self.lost_once:
                self.connected = True
        elif kind == EVENT_HANDSHAKE_SUCCEEDED:
            self.connected, self.refused = True, None
        elif kind == EVENT_HANDSHAKE_FAILED_NO_DETAIL and self.lost_once and not self.secured:
            # a plaintext peer that served us before: the greeting went unanswered (it is
            # stopped) or the link closed mid-handshake; not a refusal
            return self._lost()
        elif kind in HANDSHAKE_FAILED:
            self.connected = False
            self.refused = refusal(kind, self.peer, self.endpoint, self.secured)
            return Refused(self.refused)
        elif kind == EVENT_DISCONNECTED:
            return self._lost()
        return None

    def _lost(self) -> Lost | None:
        if not self.connected:
            return None
        self.connected, self.lost_once = False, True
        return Lost()


#: a handshake that ended with no detail may also have been cut by the server's cap
AT_CAP_HINT = ("; or the server closed the connection at its cap of open connections "
               "(max_connections: its log says so)")


def refusal(kind: int, peer: str, endpoint: str, secured: bool) -> str:
    """What to tell the user when a handshake failed (event ``kind``)."""
    if kind == EVENT_HANDSHAKE_FAILED_AUTH:
        return (f"{peer} at {endpoint} refused this process's CURVE key: it is not among the "
                f"server's authorized keys ({CURVE_KEY_ENV} must name a credential that the cluster's "
                f"key directory admits: python -m zmtf.keys add-client DIR NAME)")
    hint = AT_CAP_HINT if kind == EVENT_HANDSHAKE_FAILED_NO_DETAIL else ""
    if secured:
        return (f"the CURVE handshake with {peer} at {endpoint} failed: the server does not use "
                f"the same cluster key (or speaks plaintext); check {CURVE_KEY_ENV} here and "
                f"--curve-dir there{hint}")
    return (f"the handshake with {peer} at {endpoint} failed: the server requires CURVE; set "
            f"{CURVE_KEY_ENV} to this client's credential file{hint}")


#: the descriptor a peer is recorded on when libzmq does not say which
UNKNOWN_FD = -1


class PeerTable:
    """Which connection each peer of a ROUTER came by.

    A ROUTER names no peer when a connection closes: its monitor gives the connection's file
    descriptor, and each message gives the descriptor it came from (SRCFD). The shell must
    hand over the monitor's events before it records a new peer, so that a descriptor reused
    by a new connection is never mistaken for the closed one.
    """

    __slots__ = ("fd_of", "_peer_on")

    def __init__(self) -> None:
        #: peer -> the descriptor its messages came by; read it, change it through ``seen``.
        #: (A plain dict, so that the shell asks ``peer in fd_of`` per message without a call.)
        self.fd_of: dict[bytes, int] = {}
        self._peer_on: dict[int, bytes] = {}   # descriptor -> the peer on it

    def seen(self, peer: bytes, fd: int | None) -> None:
        """A message from ``peer`` arrived on connection ``fd``: a new peer, or one that
        reconnected (a client keeps its routing id; its old connection's close, maybe not
        reported yet, is then not this peer's). None: libzmq did not say which (it never
        does for a ZMTP 1.0/2.0 peer, which zmtf refuses at the handshake): the peer is known
        from now on, but not watched."""
        old = self.fd_of.get(peer)
        if old is not None and self._peer_on.get(old) == peer:
            del self._peer_on[old]
        self.fd_of[peer] = UNKNOWN_FD if fd is None else fd
        if fd is not None:
            self._peer_on[fd] = peer

    def on_event(self, event: MonitorEvent) -> bytes | None:
        """Take one monitor event; the peer whose connection it closed, if one is known."""
        if event.kind != EVENT_DISCONNECTED:
            return None
        peer = self._peer_on.pop(event.value, None)
        if peer is not None:
            del self.fd_of[peer]
        return peer


__all__ = [
    "AT_CAP_HINT", "CAPPED_SERVER_EVENTS", "CLIENT_EVENTS", "CURVE_DIR_ENV", "CURVE_KEY_ENV", "ClientConnection", "EVENT_ACCEPTED", "EVENT_ACCEPT_FAILED",
    "EVENT_CONNECTED", "EVENT_DISCONNECTED",
    "EVENT_HANDSHAKE_FAILED_AUTH", "EVENT_HANDSHAKE_FAILED_NO_DETAIL",
    "EVENT_HANDSHAKE_FAILED_PROTOCOL", "EVENT_HANDSHAKE_SUCCEEDED", "HANDSHAKE_EVENTS",
    "HANDSHAKE_FAILED", "Lost",
    "MonitorEvent", "PeerTable", "Refused", "SERVER_EVENTS", "UNKNOWN_FD", "decode_monitor_event", "refusal",
]

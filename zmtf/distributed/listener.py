"""Listener: a ROUTER socket that serves requests on the event loop.

Each request is decoded (``wire.codec``, through ``reactor.receive``), handed to the
server's handler, and its reply sent back to the peer that asked, now if the handler
finished inline, else when its outcome settles. A peer whose connection closes has its
requests in flight cancelled, as TF's gRPC master cancels the step of a dropped call: a
dequeue waiting for that client must not take an element nobody will receive; and the
server hears of it (``on_gone``), to collect the sessions of a client that is gone.
A client keeps its routing id when it reconnects (``sockets.identify_client``): the new
connection takes the peer over (ROUTER_HANDOVER), and the old one's close is not the peer's.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING, Any, Callable, Hashable

import zmq

from zmtf.distributed import identities, operator_log, security, shared_memory
from zmtf.distributed.bind_errors import bind_failure
from zmtf.distributed.connection_guard import ConnectionGuard
from zmtf.distributed.futures import Deferred, is_outcome, outcome
from zmtf.distributed.reactor import IdleSweep, Reactor, receive
from zmtf.distributed.task_stats import Traffic
from zmtf.distributed.sockets import (
    OFF_LOOP_DECODE_BYTES, close_monitor, configure_socket, new_streams, next_monitor_event,
    send_frames,
)
from zmtf.framework.errors import UnavailableError
from zmtf.framework.log_limits import DEFAULT_INTERVAL_SECS, PeerLogLimiter, clip
from zmtf.framework.memory_budget import MemoryBudget
from zmtf.wire import codec, messages
from zmtf.wire.connection_state import (
    CAPPED_SERVER_EVENTS, EVENT_HANDSHAKE_FAILED_PROTOCOL, SERVER_EVENTS, UNKNOWN_FD, MonitorEvent,
    PeerTable,
)

if TYPE_CHECKING:   # prometheus_client loads only in a server with metrics on
    from zmtf.distributed.metrics import ListenerMeter

log = logging.getLogger("zmtf.transport")

#: (a request, who sent it: its CURVE identity, None without CURVE; the routing id of the
#: peer that sent it) -> its reply, None (no reply), or a coroutine, Deferred or future
#: settling with it
Handler = Callable[[Any, "identities.Sender | None", bytes], Any]
#: A ZAP domain on a plaintext listener: libzmq then refuses ZMTP 1.0/2.0 peers at their
#: greeting (it speaks those old versions otherwise, and their messages carry no SRCFD); a
#: ZMTP 3 peer with no keys still gets in (no ZAP handler: allowed; pyzmq's: NULL allowed).
PLAINTEXT_ZAP_DOMAIN = b"zmtf-plaintext"
#: connections the kernel queues before the listener accepts them (libzmq's default: 100).
#: A burst of connections beyond the queue makes the kernel drop new SYNs, and a client's
#: connect then waits a second for its retry: a flood of idle connections fits in this one.
LISTEN_BACKLOG = 1024
_SRCFD = int(zmq.SRCFD)
#: sent to a peer only to learn whether it is connected now: a reply to no call, dropped
_PROBE = codec.encode(messages.Ok(id=0))


def _source_fd(identity: zmq.Frame) -> int | None:
    """The descriptor of the connection a message came by; None where libzmq knows none (a
    ZMTP 1.0/2.0 peer, refused at its greeting)."""
    try:
        return int(identity.get(_SRCFD))
    except zmq.ZMQError:
        return None


class _PeerWatch:
    """Feeds a ROUTER's monitor events into its PeerTable; ``gone(peer)`` for each peer
    whose connection closed."""

    __slots__ = ("_monitor", "table", "_gone", "_guard", "_refused")

    def __init__(self, sock: zmq.Socket, loop: asyncio.AbstractEventLoop,
                 gone: Callable[[bytes], None], guard: ConnectionGuard | None = None,
                 refused: Callable[[MonitorEvent], None] | None = None) -> None:
        events = SERVER_EVENTS if guard is None else CAPPED_SERVER_EVENTS
        self._refused = refused   # a CURVE listener's failed handshakes (operator_log)
        if refused is not None:
            events |= EVENT_HANDSHAKE_FAILED_PROTOCOL
        self._monitor: zmq.Socket | None = sock.get_monitor_socket(events)
        self.table = PeerTable()
        self._gone = gone
        self._guard = guard
        loop.add_reader(self._monitor.FD, self.read_monitor)
        # libzmq signals the FD only once a read found the monitor empty: read it once now,
        # or the first connection's ACCEPTED waits for another event
        self.read_monitor()

    def seen(self, peer: bytes, fd: int | None) -> None:
        """The first message from ``peer`` on connection ``fd`` (None: unknown)."""
        self.read_monitor()   # connections that closed before this one opened go first
        self.table.seen(peer, fd)
        if fd is not None and self._guard is not None:
            self._guard.sent(fd)

    def read_monitor(self) -> None:
        while self._monitor is not None:
            try:
                event = next_monitor_event(self._monitor)
            except zmq.ZMQError:
                return
            if event is None:
                return
            if self._guard is not None:
                self._guard.on_event(event)
            if event.kind == EVENT_HANDSHAKE_FAILED_PROTOCOL and self._refused is not None:
                self._refused(event)
                continue
            peer = self.table.on_event(event)
            if peer is not None:
                self._gone(peer)

    def close(self, loop: asyncio.AbstractEventLoop, sock: zmq.Socket) -> None:
        if self._monitor is not None:
            loop.remove_reader(self._monitor.FD)
            close_monitor(sock, self._monitor)
            self._monitor = None


class Listener:
    """A ROUTER socket that serves requests: ``handler(message, sender)`` returns a reply or a
    coroutine. ``sender`` is the identity of the request's CURVE key (None on a plaintext or
    inproc:// socket, which has none)."""

    def __init__(self, ctx: zmq.Context, endpoint: str, handler: Handler,
                 loop: asyncio.AbstractEventLoop, keys: security.Credential | None = None,
                 prepare_reply: Callable[[Any], Any] | None = None,
                 handshake_secs: float = 0.0, max_connections: int = 0,
                 budget: MemoryBudget | None = None,
                 stream_idle_secs: float | None = None,
                 peer_log_secs: float = DEFAULT_INTERVAL_SECS,
                 on_gone: Callable[[bytes], Any] | None = None,
                 traffic: Traffic | None = None,
                 meter: ListenerMeter | None = None) -> None:
        """``handshake_secs``: close a connection whose ZeroMQ handshake takes longer (0:
        libzmq's 30 s); ``max_connections``: the cap of ``connection_guard`` (0: none);
        ``budget``: what inbound streams are charged to (quotas); ``on_gone``: told of each
        peer whose connection closed; ``traffic``: what its messages are counted into (its
        server's ``task_stats``); ``meter``: its Prometheus metrics (None: metrics off)."""
        self._handler = handler
        #: a ``faults.Gate`` while a test harness injects a fault; None otherwise (hot path:
        #: one attribute check per request and per reply)
        self.fault: Any = None
        self._meter = meter
        self._refusals = PeerLogLimiter(log, peer_log_secs)   # one line per peer and kind
        self._on_gone = on_gone
        self._prepare_reply = prepare_reply   # e.g. copy what must not be shared in-process
        self._loop = loop
        # requests being served (tasks, futures, Deferreds) -> the peer that asked, so that
        # a peer's requests can be cancelled when its connection closes
        self._tasks: dict[Any, bytes] = {}
        sock = ctx.socket(zmq.ROUTER)
        configure_socket(sock)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.BACKLOG, LISTEN_BACKLOG)
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)   # a client that reconnects keeps its routing id
        if handshake_secs > 0:
            sock.setsockopt(zmq.HANDSHAKE_IVL, max(1, int(handshake_secs * 1000)))
        self._secured = keys is not None and security.applies(endpoint)
        if self._secured:
            security.secure_server(sock, keys)   # type: ignore[arg-type]
        elif not endpoint.startswith("inproc://"):
            sock.zap_domain = PLAINTEXT_ZAP_DOMAIN
        try:
            sock.bind(endpoint)
        except zmq.ZMQError as error:
            sock.close(linger=0)
            raise bind_failure(endpoint, "", error.errno, error.strerror) from None
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT) or endpoint
        self._sweep = IdleSweep(loop)
        self._streams = new_streams(self._stream_expired, self._sweep.arm,   # by peer identity
                                    budget, stream_idle_secs)
        self._sweep.streams = self._streams
        self._shared = shared_memory.writer_for(endpoint)   # None: off, or inproc://
        # in-process peers (inproc://) leave with this process: no connections to watch
        self._peers: _PeerWatch | None = None
        if not endpoint.startswith("inproc://"):
            guard = ConnectionGuard(self.endpoint, max_connections) if max_connections else None
            refused = (lambda event: operator_log.handshake_refused(
                self._refusals, self.endpoint, event.value)) if self._secured else None
            self._peers = _PeerWatch(sock, loop, self._peer_gone, guard, refused)
        self._reactor = Reactor(sock, loop, self._on_frames, traffic=traffic)

    def _on_frames(self, frames: list[zmq.Frame]) -> None:
        identity, body = frames[0], frames[1:]
        peer = identity.bytes
        if self._peers is not None:
            fd = _source_fd(identity)
            if self._peers.table.fd_of.get(peer) != (UNKNOWN_FD if fd is None else fd):
                self._peers.seen(peer, fd)   # a new peer, or one that reconnected
        # the key it authenticated with, as libzmq attaches it to each message (ZAP User-Id)
        sender = identities.sender(identity.get(security.USER_ID)) if self._secured else None
        if self._meter is not None:
            self._meter.received(peer, sender, body)

        def deliver(message: Any, error: BaseException | None, message_id: int) -> None:
            if error is not None:
                if self._meter is not None:
                    self._meter.refused(error)
                self._log_refusal(identity, error)
                self._reply(peer, messages.error_reply(message_id, error))
            else:
                self._serve(peer, message, sender)

        if sum(map(len, body)) < OFF_LOOP_DECODE_BYTES:   # small: decoded here, on the loop
            self._streams.feed(peer, body, deliver)
        else:
            receive(self._loop, self._streams, peer, body, deliver)

    def _log_refusal(self, identity: zmq.Frame, error: BaseException) -> None:
        """A message refused before it reached a handler (malformed, unknown, over a quota):
        one line per peer address and kind of error per interval, the rest counted."""
        try:
            peer: Any = identity.get("Peer-Address")   # its IP: a reconnect is the same peer
        except (zmq.ZMQError, KeyError, ValueError):
            peer = identity.bytes.hex()   # inproc:// has no address
        self._refusals.log(logging.WARNING, peer, type(error).__name__,
                           "refused a message from peer %s: %s", clip(peer, 64),
                           clip(getattr(error, "message", str(error)), 300))

    def _peer_gone(self, peer: bytes) -> None:
        self._streams.forget(peer)
        if self._meter is not None:
            self._meter.forget(peer)
        requests = [request for request, asker in self._tasks.items() if asker == peer]
        if requests:
            log.info("a peer disconnected with %d request(s) in flight; they are cancelled "
                     "(as TF cancels the step of a dropped call)", len(requests))
        for request in requests:
            request.cancel()
        if self._on_gone is not None:
            self._on_gone(peer)

    def connected_peers(self) -> list[bytes]:
        """The peers whose connection is open, as far as their messages told."""
        return list(self._peers.table.fd_of) if self._peers is not None else []

    def reachable(self, peer: bytes) -> bool:
        """Whether ``peer`` is connected now (it may have reconnected without sending
        anything): a message that no call of its waits for is sent to it, which only a
        connected peer can be sent (ROUTER_MANDATORY)."""
        try:
            send_frames(self._reactor.sock, [peer, *_PROBE])
        except zmq.Again:
            return True
        except zmq.ZMQError as error:
            if error.errno == zmq.EHOSTUNREACH:
                return False
            raise
        return True

    def _stream_expired(self, identity: Hashable, error: BaseException, message_id: int) -> None:
        """A peer's stream stalled: tell that peer (a reply to one that has gone is dropped)."""
        if self._meter is not None:
            self._meter.refused(error)
        self._reply(identity, messages.error_reply(message_id, error))

    def _serve(self, identity: bytes, message: Any, sender: identities.Sender | None,
               let_through: bool = False) -> None:
        if self.fault is not None and not let_through and self.fault.request(
                identity, message, lambda: self._serve(identity, message, sender, True)):
            return   # lost, held or delayed by an injected fault (zmtf.testing)
        try:
            result = self._handler(message, sender, identity)
        except Exception as error:  # noqa: BLE001 - becomes the caller's typed error
            if self._meter is not None:
                self._meter.refused(error)
            self._reply(identity, messages.error_reply(message.id, error))
            return
        if type(result) is not Deferred:
            if result is None or isinstance(result, messages.Message):   # the reply itself
                if result is not None:
                    self._reply(identity, result)
                return
            if asyncio.iscoroutine(result):
                result = self._loop.create_task(result)
            elif not is_outcome(result):
                self._reply(identity, result)   # not a message: fails as an error reply
                return
        # a Deferred (settled by callbacks, so no task is made for it) or a future
        if result.settled if type(result) is Deferred else result.done():
            # finished inline (a small step): reply now, not next turn
            self._settled(identity, message.id, result)
            return
        self._tasks[result] = identity
        result.add_done_callback(functools.partial(self._settled, identity, message.id))

    def _settled(self, identity: Any, message_id: int, done: Any) -> None:
        cancelled, value, error = outcome(done)
        if not cancelled:   # cancelled: the server is closing, or the client gave up: nobody waits
            reply = messages.error_reply(message_id, error) if error is not None else value
            if reply is not None:
                try:
                    self._reply(identity, reply)   # the caller waits for this; the table can wait
                except UnavailableError:
                    pass   # the server is stopping: nobody to answer
        self._tasks.pop(done, None)

    def _reply(self, identity: Any, reply: Any, let_through: bool = False) -> None:
        if self.fault is not None and not let_through and self.fault.reply(
                identity, reply, lambda: self._reply(identity, reply, True)):
            return   # lost, held or delayed by an injected fault (zmtf.testing)
        if self._prepare_reply is not None:
            reply = self._prepare_reply(reply)
        try:
            shared = self._shared
            sends = codec.encode_messages(
                reply, shared=shared if shared is not None and identity in self._streams.local_peers
                else None)
        except Exception as error:  # noqa: BLE001 - a reply that cannot travel fails its request
            sends = codec.encode_messages(messages.error_reply(reply.id, error))  # (or it hangs)
        if self._meter is not None:
            self._meter.sent(identity, sends)
        if len(sends) == 1:   # one multipart, not a stream
            self._reactor.send([[identity, *sends[0]]])
        else:
            self._reactor.send([[identity, *frames] for frames in sends])

    @property
    def closed(self) -> bool:
        return self._reactor.closed

    def in_flight(self) -> int:
        """Requests being served that have not replied yet (read by metrics)."""
        return len(self._tasks)

    async def close(self) -> None:
        serving = list(self._tasks)
        for request in serving:
            request.cancel()
        tasks = [r for r in serving if asyncio.isfuture(r)]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self._sweep.cancel()
        self._streams.drop()
        if self._peers is not None:
            self._peers.close(self._loop, self._reactor.sock)
        self._reactor.close()

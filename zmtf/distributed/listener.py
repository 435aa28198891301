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
from typing import Any, Callable, Hashable

import zmq

from zmtf.distributed import security
from zmtf.distributed.futures import Deferred, is_outcome, outcome
from zmtf.distributed.reactor import IdleSweep, Reactor, receive
from zmtf.distributed.sockets import (
    OFF_LOOP_DECODE_BYTES, close_monitor, configure_socket, new_streams, next_monitor_event,
    send_frames,
)
from zmtf.framework.errors import UnavailableError
from zmtf.wire import codec, messages
from zmtf.wire.connection_state import SERVER_EVENTS, PeerTable

log = logging.getLogger("zmtf.transport")

#: (a request, the routing id of the peer that sent it) -> its reply, None (no reply), or a
#: coroutine, Deferred or future settling with it
Handler = Callable[[Any, bytes], Any]
_SRCFD = int(zmq.SRCFD)
#: sent to a peer only to learn whether it is connected now: a reply to no call, dropped
_PROBE = codec.encode(messages.Ok(id=0))


class _PeerWatch:
    """Feeds a ROUTER's monitor events into its PeerTable; ``gone(peer)`` for each peer
    whose connection closed."""

    __slots__ = ("_monitor", "table", "_gone")

    def __init__(self, sock: zmq.Socket, loop: asyncio.AbstractEventLoop,
                 gone: Callable[[bytes], None]) -> None:
        self._monitor: zmq.Socket | None = sock.get_monitor_socket(SERVER_EVENTS)
        self.table = PeerTable()
        self._gone = gone
        loop.add_reader(self._monitor.FD, self.read_monitor)

    def seen(self, peer: bytes, fd: int) -> None:
        """The first message from ``peer`` on connection ``fd``."""
        self.read_monitor()   # connections that closed before this one opened go first
        self.table.seen(peer, fd)

    def read_monitor(self) -> None:
        while self._monitor is not None:
            try:
                event = next_monitor_event(self._monitor)
            except zmq.ZMQError:
                return
            if event is None:
                return
            peer = self.table.on_event(event)
            if peer is not None:
                self._gone(peer)

    def close(self, loop: asyncio.AbstractEventLoop, sock: zmq.Socket) -> None:
        if self._monitor is not None:
            loop.remove_reader(self._monitor.FD)
            close_monitor(sock, self._monitor)
            self._monitor = None


class Listener:
    """A ROUTER socket that serves requests: ``handler(message)`` returns a reply or a coroutine."""

    def __init__(self, ctx: zmq.Context, endpoint: str, handler: Handler,
                 loop: asyncio.AbstractEventLoop, keys: security.CurveKeys | None = None,
                 prepare_reply: Callable[[Any], Any] | None = None,
                 on_gone: Callable[[bytes], Any] | None = None) -> None:
        self._handler = handler
        self._on_gone = on_gone   # told of each peer whose connection closed
        self._prepare_reply = prepare_reply   # e.g. copy what must not be shared in-process
        self._loop = loop
        # requests being served (tasks, futures, Deferreds) -> the peer that asked, so that
        # a peer's requests can be cancelled when its connection closes
        self._tasks: dict[Any, bytes] = {}
        sock = ctx.socket(zmq.ROUTER)
        configure_socket(sock)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        sock.setsockopt(zmq.ROUTER_HANDOVER, 1)   # a client that reconnects keeps its routing id
        if keys is not None and security.applies(endpoint):
            security.secure_server(sock, keys)
        try:
            sock.bind(endpoint)
        except zmq.ZMQError as error:
            sock.close(linger=0)
            raise UnavailableError(None, None, f"cannot listen on {endpoint}: {error.strerror}; is "
                                   f"another server already using it?") from None
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT) or endpoint
        self._sweep = IdleSweep(loop)
        self._streams = new_streams(self._stream_expired, self._sweep.arm)   # by peer identity
        self._sweep.streams = self._streams
        # in-process peers (inproc://) leave with this process: no connections to watch
        self._peers = (None if endpoint.startswith("inproc://")
                       else _PeerWatch(sock, loop, self._peer_gone))
        self._reactor = Reactor(sock, loop, self._on_frames)

    def _on_frames(self, frames: list[zmq.Frame]) -> None:
        identity, body = frames[0], frames[1:]
        peer = identity.bytes
        if self._peers is not None:
            fd = identity.get(_SRCFD)
            if self._peers.table.fd_of.get(peer) != fd:   # a new peer, or one that reconnected
                self._peers.seen(peer, fd)

        def deliver(message: Any, error: BaseException | None, message_id: int) -> None:
            if error is not None:
                self._reply(peer, messages.error_reply(message_id, error))
            else:
                self._serve(peer, message)

        if sum(map(len, body)) < OFF_LOOP_DECODE_BYTES:   # small: decoded here, on the loop
            self._streams.feed(peer, body, deliver)
        else:
            receive(self._loop, self._streams, peer, body, deliver)

    def _peer_gone(self, peer: bytes) -> None:
        self._streams.forget(peer)
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
        self._reply(identity, messages.error_reply(message_id, error))

    def _serve(self, identity: Any, message: Any) -> None:
        try:
            result = self._handler(message, identity)
        except Exception as error:  # noqa: BLE001 - becomes the caller's typed error
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

    def _reply(self, identity: Any, reply: Any) -> None:
        if self._prepare_reply is not None:
            reply = self._prepare_reply(reply)
        try:
            sends = codec.encode_messages(reply)
        except Exception as error:  # noqa: BLE001 - a reply that cannot travel fails its request
            sends = codec.encode_messages(messages.error_reply(reply.id, error))  # (or it hangs)
        if len(sends) == 1:   # one multipart, not a stream
            self._reactor.send([[identity, *sends[0]]])
        else:
            self._reactor.send([[identity, *frames] for frames in sends])

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

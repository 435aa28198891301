"""BlockingChannel: a DEALER socket used from one plain thread, for the sync Session.

The sync Session's calls go through this instead of hopping to an event loop thread and
back (that hop cost ~150 us per run). Same frames, same codec, same typed errors as
``channel.Channel``: UnavailableError when nothing listens or the peer goes away,
DeadlineExceededError when it does not answer in time, the peer's own error class for an
ErrorReply. One socket per calling thread (zmq sockets are not thread-safe): ``close()``
from another thread while a call is in flight is deferred to the end of that call.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable

import zmq

from zmtf.distributed import liveness, security, shared_memory
from zmtf.distributed.channel import (
    CALL_IDS, lost_error, no_reply_error, stuck_error, unreachable_error,
)
from zmtf.distributed.sockets import (
    NOBLOCK, close_monitor, configure_socket, heartbeats, identify_client, new_streams,
    next_connection_change, poll, recv_frames, send_frames,
)
from zmtf.framework.errors import CancelledError, UnavailableError
from zmtf.wire import codec, messages
from zmtf.wire.calls import Calls
from zmtf.wire.connection_state import CLIENT_EVENTS, ClientConnection, Refused


class BlockingChannel:
    """Request/reply to one peer from the calling thread, with deadlines."""

    def __init__(self, ctx: zmq.Context, endpoint: str, peer: str = "",
                 keys: security.Credential | None = None, served_before: bool = False) -> None:
        self.endpoint = endpoint
        self.peer = peer or endpoint
        secured = keys is not None and security.applies(endpoint)
        remote = not endpoint.startswith("inproc://")
        self._connection = ClientConnection(self.peer, endpoint, secured, connected=not remote)
        self._sock = ctx.socket(zmq.DEALER)
        configure_socket(self._sock)
        identify_client(self._sock)
        if secured:
            security.secure_client(self._sock, keys)  # type: ignore[arg-type]
        self._monitor: zmq.Socket | None = None
        self._liveness = liveness.liveness_seconds()
        # a peer that served this client before (another thread's socket reached it) and is
        # not reached within the liveness bound is gone: no wait until the call's deadline
        self._reach_by = time.monotonic() + self._liveness if served_before else math.inf
        if remote:  # monitor before connect, or a fast CONNECTED event is lost
            heartbeats(self._sock, self._liveness)
            self._monitor = self._sock.get_monitor_socket(CLIENT_EVENTS)
        self._sock.connect(endpoint)
        # what a wait polls (zmq.zmq_poll itself: zmq.Poller.poll is a Python layer over it)
        self._poll_items = [(self._sock, zmq.POLLIN)]
        self._monitor_item: list[tuple[Any, int]] = [(self._monitor, zmq.POLLIN)]
        if self._monitor is not None:
            self._poll_items.append((self._monitor, zmq.POLLIN))
        # the call in flight (one at a time: one thread), by id: a late reply to a call given
        # up on earlier matches nothing and is dropped
        self._calls = Calls(ids=CALL_IDS)
        self._outcome: tuple[Any, BaseException | None] | None = None   # (reply, error) of it
        # replies big enough to come streamed; one stalled for IDLE_SECONDS fails its call
        self._streams = new_streams(on_expired=self._stream_expired)
        self._shared = shared_memory.writer_for(endpoint)   # None: off, or inproc://
        self._state = threading.Lock()   # guards busy/closed: close() may come from another thread
        self._busy = False
        self._close_requested = False

    def call(self, message: Any, timeout: float,
             on_cancel: Callable[[int], Any] | None = None,
             connect_timeout: float | None = None) -> Any:
        """Send ``message`` and wait for its reply within ``timeout`` s (not connected yet:
        within ``connect_timeout`` s, when given, to connect first); Ctrl-C sends
        ``on_cancel(id)`` first."""
        with self._state:
            if self._sock.closed or self._close_requested:
                raise CancelledError(None, None, f"the session to {self.peer} has been closed; "
                                     f"open a new Session to run more steps")
            self._busy = True
        try:
            return self._call(message, timeout, on_cancel, connect_timeout)
        finally:
            with self._state:
                self._busy = False
                deferred = self._close_requested
            if deferred:
                self._close_now()

    def _call(self, message: Any, timeout: float, on_cancel: Callable[[int], Any] | None,
              connect_timeout: float | None) -> Any:
        deadline = time.monotonic() + timeout
        if self._monitor is not None and poll(self._monitor_item, 0):
            self._catch_up()   # what happened to the connection while no call was in flight
        if not self._connection.connected:   # (a later disconnect shows in the poll below)
            if connect_timeout is None:
                self._wait_connected(deadline, timeout, message)
            else:
                self._wait_connected(time.monotonic() + connect_timeout, connect_timeout, message)
        call_id = self._calls.new_call(deadline, (timeout, type(message)))
        try:
            shared = self._shared if None in self._streams.local_peers else None
            sends = codec.encode_messages(message, id=call_id, shared=shared)
            for copy in shared_memory.take_copies():   # (called from a coroutine: a loop runs)
                copy.result()
            for frames in sends:
                send_frames(self._sock, frames, blocking=True)
            reply = self._poll_reply(deadline)
        except KeyboardInterrupt:
            self._calls.match(call_id)   # forgotten: its reply, if one comes, is dropped
            self._outcome = None         # (one may have come just now: not the next call's)
            if on_cancel is not None:
                self._sock.send_multipart(codec.encode(on_cancel(call_id), id=next(CALL_IDS)))
            raise
        except zmq.ZMQError as error:   # the server of this process stopped: its context is gone
            self._calls.match(call_id)
            self._outcome = None
            raise UnavailableError(None, None, f"the connection to {self.peer} at {self.endpoint} "
                                   f"was closed during the call ({error}); its server stopped") from None
        except BaseException:
            self._calls.match(call_id)   # (a reply or its deadline has removed it already)
            self._outcome = None
            raise
        if isinstance(reply, messages.ErrorReply):
            messages.raise_error(reply)
        return reply

    def _deliver(self, reply: Any, error: BaseException | None, message_id: int) -> None:
        if self._calls.match(message_id) is not None:   # the call in flight, not a late reply
            self._outcome = (reply, error)

    def _events(self) -> None:
        if self._monitor is not None:
            change = next_connection_change(self._monitor, self._connection)
            if change is not None:
                raise self._connection.error_for(change)

    def _catch_up(self) -> None:
        """Take the monitor's events that came between calls: a connection that dropped and
        came back meanwhile (a pause, a blink) fails no call; one still down is waited for."""
        assert self._monitor is not None
        while True:
            change = next_connection_change(self._monitor, self._connection)
            if change is None:
                return
            if type(change) is Refused:
                raise self._connection.error_for(change)

    def _wait_connected(self, deadline: float, timeout: float, message: Any) -> None:
        self._events()
        while not self._connection.connected:
            now = time.monotonic()
            gone_for = self._connection.gone_for(now, self._liveness, deadline)
            if gone_for is not None:
                raise lost_error(self.peer, self.endpoint, gone_for, self._liveness, type(message))
            if self._connection.lost_at is None and now >= self._reach_by:
                raise UnavailableError(
                    None, None, f"cannot reach {self.peer} at {self.endpoint} within the "
                    f"liveness bound ({self._liveness:g} s), though it served this session before "
                    f"({type(message).__name__} not sent); the task died, was stopped, or the "
                    f"network between us is down")
            if now >= deadline:
                raise unreachable_error(self.peer, self.endpoint, timeout, type(message))
            if self._monitor is not None:
                self._monitor.poll(5)
            self._events()

    def _poll_reply(self, deadline: float) -> Any:
        """Wait for the reply to the call in flight (its ``deadline`` is the table's only
        one); the reply, or the error it was delivered with. A server silent for half the
        liveness bound gets a Ping, which its event loop answers: none within the bound,
        and the call fails naming it (its loop is stuck; heartbeats come from its I/O
        thread). A reply that comes at once costs none of this."""
        calls = self._calls
        half = self._liveness / 2
        quiet_since = time.monotonic()   # when the server last sent anything
        pinged_at = None
        while self._outcome is None:
            now = time.monotonic()
            left = deadline - now
            if left <= 0:   # a reply half-streamed by now finishes later and is dropped then
                (_, (timeout, kind)), = calls.expire(now)
                raise no_reply_error(self.peer, self.endpoint, timeout, kind)
            if now - quiet_since >= half and self._monitor is not None:
                if pinged_at is None:   # its Pong matches no call: it only breaks the silence
                    self._sock.send_multipart(codec.encode(messages.Ping(id=0), id=next(CALL_IDS)))
                    pinged_at = now
                elif now - pinged_at >= self._liveness and self._connection.connected:
                    (_, _), = calls.take_all()
                    self._streams.drop()
                    raise stuck_error(self.peer, self.endpoint, self._liveness)
            ready = dict(poll(self._poll_items, int(min(left, 1.0, half) * 1000)))
            if self._monitor is not None and self._monitor in ready:
                try:
                    self._events()
                except UnavailableError:
                    self._streams.drop()
                    raise
            if self._sock not in ready:
                self._streams.sweep()   # a reply stalled mid-stream fails the call (or not yet)
                continue
            quiet_since, pinged_at = now, None
            while self._outcome is None:   # drain: a streamed reply is many messages
                try:
                    frames = recv_frames(self._sock, NOBLOCK)
                except zmq.Again:
                    break
                self._streams.feed(None, frames, self._deliver)
        reply, error = self._outcome
        self._outcome = None   # the reply is not kept past this call
        if error is not None:
            raise error
        return reply

    def _stream_expired(self, _peer: Any, error: BaseException, message_id: int) -> None:
        self._deliver(None, error, message_id)

    def close(self) -> bool:
        """Close now, or (when a call is in flight on its thread) when that call ends: False."""
        with self._state:
            self._close_requested = True
            if self._busy:
                return False
        self._close_now()
        return True

    @property
    def closed(self) -> bool:
        return self._sock.closed

    def _close_now(self) -> None:
        if self._monitor is not None:
            close_monitor(self._sock, self._monitor)
            self._monitor = None
        if not self._sock.closed:
            self._sock.close(linger=0)

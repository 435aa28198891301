"""BlockingChannel: a DEALER socket used from one plain thread, for the sync Session.

The sync Session's calls go through this instead of hopping to an event loop thread and
back (that hop cost ~150 us per run). Same frames, same codec, same typed errors as
``transport.Channel``: UnavailableError when nothing listens or the peer goes away,
DeadlineExceededError when it does not answer in time, the peer's own error class for an
ErrorReply. One socket per calling thread (zmq sockets are not thread-safe): ``close()``
from another thread while a call is in flight is deferred to the end of that call.
"""

from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Callable

import zmq
from zmq.utils.monitor import recv_monitor_message

from zmtf.distributed import security
from zmtf.distributed.transport import configure_socket, new_streams, recv_frames, send_frames
from zmtf.framework.errors import (
    CancelledError, DeadlineExceededError, UnauthenticatedError,
    UnavailableError,
)
from zmtf.wire import codec, messages

_ids = itertools.count(1)


class BlockingChannel:
    """Request/reply to one peer from the calling thread, with deadlines."""

    def __init__(self, ctx: zmq.Context, endpoint: str, peer: str = "",
                 keys: security.CurveKeys | None = None) -> None:
        self.endpoint = endpoint
        self.peer = peer or endpoint
        self._secured = keys is not None and security.applies(endpoint)
        self._sock = ctx.socket(zmq.DEALER)
        configure_socket(self._sock)
        self._monitor: zmq.Socket | None = None
        self._connected = endpoint.startswith("inproc://")
        if self._secured:
            security.secure_client(self._sock, keys)  # type: ignore[arg-type]
        if not self._connected:  # monitor before connect, or a fast CONNECTED event is lost
            self._monitor = self._sock.get_monitor_socket(
                zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | security.HANDSHAKE_EVENTS)
        self._sock.connect(endpoint)
        # what a wait polls (zmq.zmq_poll itself: zmq.Poller.poll is a Python layer over it)
        self._poll_items = [(self._sock, zmq.POLLIN)]
        if self._monitor is not None:
            self._poll_items.append((self._monitor, zmq.POLLIN))
        # replies big enough to come streamed; one stalled for IDLE_SECONDS fails its call
        self._streams = new_streams(on_expired=self._stream_expired)
        self._deliver: Callable[[Any, BaseException | None, int], None] | None = None
        self._state = threading.Lock()   # guards busy/closed: close() may come from another thread
        self._busy = False
        self._close_requested = False

    def call(self, message: Any, timeout: float,
             on_cancel: Callable[[int], Any] | None = None) -> Any:
        """Send ``message`` and wait for its reply; Ctrl-C sends ``on_cancel(id)`` first."""
        with self._state:
            if self._sock.closed or self._close_requested:
                raise CancelledError(None, None, f"the session to {self.peer} has been closed; "
                                     f"open a new Session to run more steps")
            self._busy = True
        try:
            return self._call(message, timeout, on_cancel)
        finally:
            with self._state:
                self._busy = False
                deferred = self._close_requested
            if deferred:
                self._close_now()

    def _call(self, message: Any, timeout: float, on_cancel: Callable[[int], Any] | None) -> Any:
        call_id = next(_ids)
        deadline = time.monotonic() + timeout
        if not self._connected:   # a disconnect shows up as a readable monitor while polling
            self._wait_connected(deadline, timeout, message)
        for frames in codec.encode_messages(message, id=call_id):
            send_frames(self._sock, frames, blocking=True)
        outcome: list[Any] = []

        def deliver(reply: Any, error: BaseException | None, message_id: int) -> None:
            if message_id == call_id:   # replies to calls given up on earlier are dropped
                outcome.append((reply, error))

        self._deliver = deliver
        try:
            reply = self._poll_reply(outcome, deliver, deadline, timeout, message)
        except KeyboardInterrupt:
            if on_cancel is not None:
                self._sock.send_multipart(codec.encode(on_cancel(call_id), id=next(_ids)))
            raise
        finally:
            self._deliver = None   # the closure holds the reply: not kept past this call
        if isinstance(reply, messages.ErrorReply):
            messages.raise_error(reply)
        return reply

    def _events(self) -> None:
        while self._monitor is not None:
            try:
                event = recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            kind = event["event"]
            if kind == zmq.EVENT_CONNECTED and not self._secured:
                self._connected = True
            elif kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._connected = True
            elif security.handshake_failed(kind):
                self._connected = False
                raise UnauthenticatedError(None, None, security.refusal(
                    kind, self.peer, self.endpoint, self._secured))
            elif kind == zmq.EVENT_DISCONNECTED and self._connected:
                self._connected = False
                raise UnavailableError(None, None, f"lost the connection to {self.peer} at "
                                       f"{self.endpoint}; the task may have died or been stopped")

    def _wait_connected(self, deadline: float, timeout: float, message: Any) -> None:
        self._events()
        while not self._connected:
            if time.monotonic() >= deadline:
                raise UnavailableError(
                    None, None, f"cannot reach {self.peer} at {self.endpoint} within {timeout:.1f} s "
                    f"({type(message).__name__}): no server is listening there. Start it (e.g. "
                    f"'python -m zmtf.server --cluster ... --job ... --task ...') or fix the address.")
            if self._monitor is not None:
                self._monitor.poll(5)
            self._events()

    def _poll_reply(self, outcome: list[Any], deliver: Callable[..., None], deadline: float,
                    timeout: float, message: Any) -> Any:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:   # a reply half-streamed by now finishes later and is dropped then
                raise DeadlineExceededError(
                    None, None, f"no reply from {self.peer} at {self.endpoint} within {timeout:.1f} s "
                    f"({type(message).__name__}); is its server running and responsive?")
            ready = dict(zmq.zmq_poll(self._poll_items, int(min(left, 1.0) * 1000)))
            if self._monitor is not None and self._monitor in ready:
                try:
                    self._events()
                except UnavailableError:
                    self._streams.drop()
                    raise
            if self._sock not in ready:
                self._streams.sweep()   # a reply stalled mid-stream fails the call (or not yet)
                if outcome:
                    raise outcome[0][1]
                continue
            while not outcome:   # drain: a streamed reply is many messages
                try:
                    frames = recv_frames(self._sock, zmq.NOBLOCK)
                except zmq.Again:
                    break
                self._streams.feed(None, frames, deliver)
            if outcome:
                reply, error = outcome[0]
                if error is not None:
                    raise error
                return reply

    def _stream_expired(self, _peer: Any, error: BaseException, message_id: int) -> None:
        if self._deliver is not None:
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
            if not self._sock.closed:
                self._sock.disable_monitor()
            self._monitor.close(linger=0)
            self._monitor = None
        if not self._sock.closed:
            self._sock.close(linger=0)

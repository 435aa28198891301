"""The event loop's side of zmtf's sockets and deadlines.

``Reactor`` drains a plain zmq socket from ``loop.add_reader(sock.FD)`` with NOBLOCK
receives. zmq.asyncio is not used: it makes a future per receive, and was about half as
fast here. libzmq's FD is edge-triggered, so after every send the socket is checked again
for pending input, or a wake-up would be lost.

``Deadlines`` keeps one loop timer at the earliest deadline of a ``wire.calls.Calls``
table, however many deadlines are pending: asyncio's own timers cost a heap entry and a
cancellation each, and nearly every deadline here is cancelled long before it is due.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import weakref
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable

import zmq

from zmtf.distributed import shared_memory
from zmtf.distributed.sockets import (
    NOBLOCK, OFF_LOOP_DECODE_BYTES, POLLIN, decode, poll, recv_frames, send_frames,
)
from zmtf.distributed.task_stats import Traffic
from zmtf.framework.errors import UnavailableError
from zmtf.framework.log_limits import PeerLogLimiter
from zmtf.wire import codec
from zmtf.wire.calls import Calls
from zmtf.wire.streams import Deliver, Streams

log = logging.getLogger("zmtf.transport")
_deadline_log = logging.getLogger("zmtf.deadlines")
_bug_log = PeerLogLimiter(log)

#: One drain handles messages for about this long (timed from its 4th message) before it
#: lets the loop run other callbacks, and comes back: the parts of a 256 MB stream, copied
#: into fresh pages, took ~0.5 s in one drain.
DRAIN_SLICE_SECONDS = 0.002
_clock = time.perf_counter


class Reactor:
    """Drains a socket whenever the loop says its FD is readable (edge-triggered), and sends
    in order, keeping what libzmq cannot take now in an outbox."""

    def __init__(self, sock: zmq.Socket, loop: asyncio.AbstractEventLoop,
                 on_frames: Callable[[list[zmq.Frame]], None],
                 on_lost: Callable[[], None] | None = None, traffic: Traffic | None = None) -> None:
        self.sock = sock
        # what it receives and sends, counted into its server's (task_stats), or its own
        self.traffic = traffic if traffic is not None else Traffic()
        self.loop = loop
        self._on_frames = on_frames
        self._on_lost = on_lost
        # frames to send, and the copies into shared memory they wait for (Futures)
        self._outbox: deque[Any] = deque()
        self._gone = b""   # the last peer found disconnected (one log line for its replies)
        self._closed = False
        self._fd = sock.FD
        loop.add_reader(self._fd, self.drain)

    def drain(self) -> None:
        sock = self.sock
        handled, started = 0, 0.0
        traffic = self.traffic
        while not self._closed:
            try:
                if not poll([(sock, POLLIN)], 0):  # nothing waiting: no zmq.Again raised
                    break
                frames = recv_frames(sock, NOBLOCK)
            except zmq.Again:
                break
            except zmq.ZMQError:
                if sock.closed:  # its Context was destroyed under it (an in-process peer stopped)
                    self._lost()
                    return
                raise
            traffic.messages_in += 1
            traffic.bytes_in += sum(map(len, frames))
            try:
                self._on_frames(frames)
            except Exception as error:  # noqa: BLE001 - one bad message must not stop the server
                # zmtf's own bug (a peer's bad input is a typed error reply): a traceback, but
                # once per kind per interval, or a peer that found it could flood the log
                _bug_log.log(logging.ERROR, None, type(error).__name__,
                             "handler failed on a message; the server keeps serving",
                             exc_info=True)
            handled += 1
            if not handled & 3:   # the clock is read every 4th message only
                now = _clock()
                if not started:
                    started = now
                elif now - started > DRAIN_SLICE_SECONDS:   # let the loop run, then go on
                    self.loop.call_soon(self.drain)
                    break
        if self._outbox:
            self._flush()

    def send(self, messages: list[list[Any]]) -> None:
        """Send ZeroMQ messages in order (a streamed message is several); what cannot go now
        waits in the outbox, ahead of anything sent later."""
        sock = self.sock
        if self._closed or sock.closed:   # closed here, or its Context destroyed (a stopped peer)
            if not self._closed:
                self._lost()
            raise UnavailableError(None, None, "the socket was closed (its peer server stopped)")
        traffic = self.traffic
        for frames in messages:   # counted as queued: one dropped later for a gone peer too
            traffic.messages_out += 1
            traffic.bytes_out += sum(map(len, frames))
        copies = shared_memory.take_copies()   # of big tensors, on threads: sent once copied
        if copies or self._outbox:
            idle = not self._outbox
            self._outbox.extend(copies)
            self._outbox.extend(messages)
            if idle:
                self._flush()
        else:
            for k, frames in enumerate(messages):
                try:
                    send_frames(sock, frames)
                except zmq.Again:
                    self._outbox.extend(messages[k:])
                    self.loop.call_later(0.001, self._flush)
                    break
                except zmq.ZMQError as error:
                    if not sock.closed and not self._unreachable(error, frames):
                        raise
                    break   # the rest of a streamed message would go nowhere either
        # libzmq's FD is edge-triggered and a send may have consumed its edge: look again
        if self._closed:
            return
        if sock.closed:
            self._lost()
        elif poll([(sock, POLLIN)], 0):
            self.loop.call_soon(self.drain)

    def _flush(self) -> None:
        while self._outbox and not self._closed:
            if isinstance(self._outbox[0], Future):
                copy = self._outbox[0]
                if not copy.done():
                    copy.add_done_callback(self._copied)
                    return
                self._outbox.popleft()
                if copy.exception() is not None:   # (a bug: copying an array cannot fail)
                    log.error("copying a tensor into shared memory failed: %s", copy.exception())
                continue
            try:
                send_frames(self.sock, self._outbox[0])
            except zmq.Again:
                self.loop.call_later(0.001, self._flush)
                return
            except zmq.ZMQError as error:
                if not self._unreachable(error, self._outbox[0]):
                    log.warning("dropped a message that could not be sent: %s", error)
            self._outbox.popleft()

    def _copied(self, _: Future[None]) -> None:
        try:
            self.loop.call_soon_threadsafe(self._send_copied)
        except RuntimeError:   # the loop has closed: nothing is sent any more
            pass

    def _send_copied(self) -> None:
        self._flush()
        # as after any send: it may have consumed the FD's edge, so look for input again
        if not self._closed and not self.sock.closed and poll([(self.sock, POLLIN)], 0):
            self.drain()

    def _unreachable(self, error: zmq.ZMQError, frames: list[Any]) -> bool:
        """True when a ROUTER's reply is addressed to a peer that has disconnected (a client
        killed mid-step): nobody waits for it, so it is dropped with one line per peer."""
        if error.errno != zmq.EHOSTUNREACH:
            return False
        peer = bytes(frames[0])
        if peer != self._gone:
            self._gone = peer
            log.info("dropped a reply to a peer that has disconnected (it was not waiting "
                     "any more; a client stopped mid-call)")
        return True

    @property
    def closed(self) -> bool:
        """True once closed here, or once its Context was destroyed (a stopped in-process peer)."""
        if not self._closed and self.sock.closed:
            self._lost()
        return self._closed

    def _lost(self) -> None:
        self.close()
        if self._on_lost is not None:
            self._on_lost()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.loop.remove_reader(self._fd)
            if not self.sock.closed:
                self.sock.close(linger=0)


def receive(loop: asyncio.AbstractEventLoop, streams: Streams, peer: Any, frames: list[Any],
            deliver: Deliver) -> None:
    """Decode one received ZeroMQ message and pass on ``(message, error, id)``: streamed
    parts on the loop (one part at a time), a big unstreamed multipart on a thread."""
    if sum(map(len, frames)) < OFF_LOOP_DECODE_BYTES or streams.mid_stream(peer):
        streams.feed(peer, frames, deliver)
        return

    def done(future: asyncio.Future) -> None:
        error = future.exception()
        if error is not None:
            deliver(None, error, codec.peek_id(frames))
        else:
            message = future.result()
            deliver(message, None, message.id)

    loop.run_in_executor(None, decode, frames).add_done_callback(done)


class IdleSweep:
    """Sweeps a socket's open streams on a loop timer while any is open: a socket that
    receives nothing more (its peer died mid-stream) still drops the stream and frees its
    buffer within 1.5 x ``idle_seconds``. Armed when a stream opens, so that sockets that
    carry only small messages have no timer at all."""

    __slots__ = ("_loop", "streams", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self.streams: Streams | None = None
        self._timer: asyncio.TimerHandle | None = None

    def arm(self) -> None:
        if self._timer is None and self.streams is not None:
            self._timer = self._loop.call_later(self.streams.idle_seconds / 2, self._run)

    def _run(self) -> None:
        self._timer = None
        self.streams.sweep()   # type: ignore[union-attr]
        if len(self.streams):   # type: ignore[arg-type]
            self.arm()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class DeadlineTimer:
    """One loop timer at the earliest deadline of a ``Calls`` table.

    Call ``armed(when)`` after each ``new_call`` whose deadline is before ``at`` (a plain
    attribute, so that the hot path compares without a call): only then does the timer
    move. When it fires, the calls past their deadline go to ``on_expired`` and the timer is
    set for the next one. Answering a call does not touch the timer; it fires, finds
    nothing due, and re-arms (calls are answered long before their deadline, almost always).
    """

    __slots__ = ("_loop", "_calls", "_on_expired", "_timer", "at")

    def __init__(self, loop: asyncio.AbstractEventLoop, calls: Calls,
                 on_expired: Callable[[list[tuple[int, Any]]], None]) -> None:
        self._loop = loop
        self._calls = calls
        self._on_expired = on_expired
        self._timer: asyncio.TimerHandle | None = None
        self.at = math.inf   #: when the timer fires next (math.inf: it is not set)

    def armed(self, when: float) -> None:
        """A call with deadline ``when`` (the loop's clock: time.monotonic) was added."""
        if when < self.at:
            if self._timer is not None:
                self._timer.cancel()
            self.at = when
            self._timer = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._timer, self.at = None, math.inf
        calls = self._calls
        expired = calls.expire(time.monotonic())
        following = calls.next_deadline()
        if following < math.inf:
            self.armed(following)
        if expired:
            self._on_expired(expired)

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer, self.at = None, math.inf


class Deadline:
    """A pending deadline of ``Deadlines``: ``cancel()`` it when its request or step ends first."""

    __slots__ = ("callback", "args", "_calls", "call_id")

    def __init__(self, callback: Callable[..., Any], args: tuple, calls: Calls) -> None:
        self.callback: Callable[..., Any] | None = callback
        self.args = args
        self._calls = calls
        self.call_id = 0   # its id in ``calls``, set once it is registered there

    def cancel(self) -> None:
        if self.callback is not None:
            self.callback = self.args = None  # type: ignore[assignment]
            self._calls.match(self.call_id)   # forgotten: its heap entry goes stale


class Deadlines:
    """Callbacks at deadlines, on one event loop (see ``deadlines_for``): a worker's step
    deadlines. Everything runs on the loop's thread."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._calls = Calls()
        self._timer = DeadlineTimer(loop, self._calls, self._fire)

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> Deadline:
        """Call ``callback(*args)`` on the loop in ``delay`` s unless cancelled first."""
        when = time.monotonic() + delay   # the loop's clock (asyncio uses time.monotonic)
        entry = Deadline(callback, args, self._calls)
        entry.call_id = self._calls.new_call(when, entry)
        if when < self._timer.at:
            self._timer.armed(when)
        return entry

    @staticmethod
    def _fire(due: list[tuple[int, Deadline]]) -> None:
        for _, entry in due:
            callback, args = entry.callback, entry.args
            entry.callback = entry.args = None  # type: ignore[assignment]
            if callback is None:   # an earlier one of this batch cancelled it
                continue
            try:
                callback(*args)
            except Exception:  # noqa: BLE001 - the batch's other deadlines must still fire
                _deadline_log.exception("a deadline's callback failed")


_PER_LOOP: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Deadlines] = (
    weakref.WeakKeyDictionary())


def deadlines_for(loop: asyncio.AbstractEventLoop) -> Deadlines:
    """The loop's Deadlines (made on first use)."""
    deadlines = _PER_LOOP.get(loop)
    if deadlines is None:
        deadlines = _PER_LOOP[loop] = Deadlines(loop)
    return deadlines

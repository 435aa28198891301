"""Transport: ROUTER listeners and DEALER channels driven by the event loop's reader callbacks.

Plain zmq sockets with ``loop.add_reader(sock.FD)`` and NOBLOCK drains, not zmq.asyncio:
measured about twice as fast here (no future per receive). The zmq FD is edge-triggered,
so after every send the socket is checked again for pending input (a lost wake-up
otherwise). Frames go through ``zmtf.wire.codec`` both ways; nothing here parses them.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import math
import time
from collections import deque
from typing import Any, Awaitable, Callable

import zmq
from zmq.utils.monitor import recv_monitor_message

from zmtf.framework.errors import (
    DeadlineExceededError,
    InvalidArgumentError,
    OpError,
    UnauthenticatedError,
    UnavailableError,
)
from zmtf.distributed import security
from zmtf.distributed.futures import Deferred, is_outcome, outcome, then
from zmtf.runtime.buffer_pool import BufferPool
from zmtf.wire import codec, messages
from zmtf.wire.streams import Deliver, Expired, Streams
from zmtf.wire.tensors import CHUNK_BYTES

log = logging.getLogger("zmtf.transport")

Handler = Callable[[Any], "Any | Awaitable[Any]"]

# Unstreamed messages bigger than this are decoded on a worker thread: assembling a 256 MB
# tensor from its 1 MB parts takes tens of ms, which the event loop must not spend. zmtf
# itself streams messages this big (codec.STREAM_MIN_BYTES); their parts are copied on the
# loop one at a time as they arrive.
OFF_LOOP_DECODE_BYTES = 4 << 20
_BUFFERS = BufferPool()  # received big tensors reuse memory once their users drop them


def _allocate(dtype: Any, shape: Any) -> Any:
    return _BUFFERS.empty(tuple(shape), dtype)


def _decode(frames: list[Any]) -> Any:
    return codec.decode(frames, allocate=_allocate)


def new_streams(on_expired: Expired | None = None,
                on_open: Callable[[], None] | None = None) -> Streams:
    """Reassembly state for one socket; streamed tensors land in pooled buffers."""
    return Streams(allocate=_allocate, on_expired=on_expired, on_open=on_open)


class _IdleSweep:
    """Sweeps a socket's open streams on a loop timer while any is open: a socket that
    receives nothing more (its peer died mid-stream) still drops the stream and frees its
    buffer within 1.5 x ``idle_seconds``. Armed when a stream opens, so the hot path of
    small messages pays nothing."""

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

    loop.run_in_executor(None, _decode, frames).add_done_callback(done)


# plain ints: pyzmq's enum flags cost a conversion on every call of the hot path
_POLLIN, _NOBLOCK = int(zmq.POLLIN), int(zmq.NOBLOCK)
_SNDMORE = int(zmq.SNDMORE)
_MORE = _NOBLOCK | _SNDMORE
# pyzmq's compiled send, without the Python-level wrapper of zmq.Socket.send (which only adds
# the draft routing_id/group arguments); it honours copy_threshold all the same
_send = zmq.backend.Socket.send
# "is a message waiting?" is asked as zmq_poll([(sock, POLLIN)], 0), not getsockopt(EVENTS):
# pyzmq converts every getsockopt option to an enum first, two Python calls per check
_poll = zmq.zmq_poll


def send_frames(sock: zmq.Socket, frames: list[Any], blocking: bool = False) -> None:
    """``send_multipart(frames, copy=False)`` without its per-frame enum arithmetic; NOBLOCK
    unless ``blocking``. Only the first frame can raise zmq.Again: once it is queued, the
    rest of the message is."""
    more, end = (_SNDMORE, 0) if blocking else (_MORE, _NOBLOCK)
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        _send(sock, frame, more if i < last else end, False)


def recv_frames(sock: zmq.Socket, flags: int = 0) -> list[zmq.Frame]:
    """``recv_multipart(flags, copy=False)`` reading each frame's MORE flag instead of asking
    the socket for RCVMORE (an enum conversion per frame): 3.7 against 9 us for 7 frames."""
    frame = sock.recv(flags, copy=False)
    frames = [frame]
    while frame.more:
        frame = sock.recv(flags, copy=False)
        frames.append(frame)
    return frames


#: Frames below this are copied into the message, bigger ones sent zero-copy. A zero-copy
#: frame is released on libzmq's I/O thread through pyzmq's garbage-collector thread, which
#: then takes the GIL: an 800 KB zero-copy send stalled the event loop 240-520 us in a
#: training ps (the loop's next GIL release handed it over), against 28 us to copy it.
#: Whole 1 MiB parts of big tensors (wire.tensors.CHUNK_BYTES) still go zero-copy.
ZERO_COPY_MIN_BYTES = CHUNK_BYTES


def configure_socket(sock: zmq.Socket) -> None:
    """zmtf's options for every socket: no linger at close, no HWM drops, copy small frames."""
    sock.setsockopt(zmq.LINGER, 0)
    sock.setsockopt(zmq.SNDHWM, 0)  # queue in libzmq rather than drop; callers bound the traffic
    sock.setsockopt(zmq.RCVHWM, 0)
    sock.copy_threshold = ZERO_COPY_MIN_BYTES


#: One drain handles messages for about this long (timed from its 4th message) before it
#: lets the loop run other callbacks, and comes back: the parts of a 256 MB stream, copied
#: into fresh pages, took ~0.5 s in one drain.
DRAIN_SLICE_SECONDS = 0.002
_clock = time.perf_counter


class _Reactor:
    """Drains a socket whenever the loop says its FD is readable (edge-triggered)."""

    def __init__(self, sock: zmq.Socket, loop: asyncio.AbstractEventLoop,
                 on_frames: Callable[[list[zmq.Frame]], None],
                 on_lost: Callable[[], None] | None = None) -> None:
        self.sock = sock
        self.loop = loop
        self._on_frames = on_frames
        self._on_lost = on_lost
        self._outbox: deque[list[Any]] = deque()
        self._gone = b""   # the last peer found disconnected (one log line for its replies)
        self._closed = False
        self._fd = sock.FD
        loop.add_reader(self._fd, self.drain)

    def drain(self) -> None:
        sock = self.sock
        handled, started = 0, 0.0
        while not self._closed:
            try:
                if not _poll([(sock, _POLLIN)], 0):  # cheaper than a zmq.Again per drain
                    break
                frames = recv_frames(sock, _NOBLOCK)
            except zmq.Again:
                break
            except zmq.ZMQError:
                if sock.closed:  # its Context was destroyed under it (an in-process peer stopped)
                    self._lost()
                    return
                raise
            try:
                self._on_frames(frames)
            except Exception:  # noqa: BLE001 - one bad message must not stop the server
                log.exception("handler failed on a message; the server keeps serving")
            handled += 1
            if not handled & 3:   # every 4th message (the clock is a call): a long stream?
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
        if self._closed or sock.closed:   # the ``closed`` property, written out: every send asks
            if not self._closed:
                self._lost()
            raise UnavailableError(None, None, "the socket was closed (its peer server stopped)")
        if self._outbox:
            self._outbox.extend(messages)
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
        elif _poll([(sock, _POLLIN)], 0):
            self.loop.call_soon(self.drain)

    def _flush(self) -> None:
        while self._outbox and not self._closed:
            try:
                send_frames(self.sock, self._outbox[0])
            except zmq.Again:
                self.loop.call_later(0.001, self._flush)
                return
            except zmq.ZMQError as error:
                if not self._unreachable(error, self._outbox[0]):
                    log.warning("dropped a message that could not be sent: %s", error)
            self._outbox.popleft()

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


class _Peers:
    """Which connection each peer of a ROUTER came through, so that a peer whose connection
    closes (a client killed mid-step) has its requests in flight cancelled, as TF's gRPC
    master cancels a step whose call was dropped: a dequeue waiting for that client does not
    take an element nobody will receive.

    A ROUTER names no peer when a connection closes; its monitor gives the connection's file
    descriptor, and each message gives the descriptor it came from (SRCFD). The monitor is
    read before a new peer is recorded, so a descriptor reused by a new connection is never
    mistaken for the closed one."""

    __slots__ = ("_monitor", "fd_of", "_peer_on", "_gone")

    def __init__(self, sock: zmq.Socket, loop: asyncio.AbstractEventLoop,
                 gone: Callable[[bytes], None]) -> None:
        self._monitor: zmq.Socket | None = sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.fd_of: dict[bytes, int] = {}   # peer -> the descriptor its messages came by
        self._peer_on: dict[int, bytes] = {}
        self._gone = gone
        loop.add_reader(self._monitor.FD, self.read_monitor)

    def seen(self, peer: bytes, identity: zmq.Frame) -> None:
        """The first message from ``peer`` (its routing-id frame ``identity``)."""
        self.read_monitor()   # connections that closed before this one opened go first
        fd = identity.get(zmq.SRCFD)
        self.fd_of[peer] = fd
        self._peer_on[fd] = peer

    def read_monitor(self) -> None:
        while self._monitor is not None:
            try:
                event = recv_monitor_message(self._monitor, zmq.NOBLOCK)
            except (zmq.Again, zmq.ZMQError):
                return
            if event["event"] == zmq.EVENT_DISCONNECTED:
                peer = self._peer_on.pop(int(event["value"]), None)
                if peer is not None:
                    del self.fd_of[peer]
                    self._gone(peer)

    def close(self, loop: asyncio.AbstractEventLoop, sock: zmq.Socket) -> None:
        if self._monitor is not None:
            loop.remove_reader(self._monitor.FD)
            if not sock.closed:
                sock.disable_monitor()
            self._monitor.close(linger=0)
            self._monitor = None


class Listener:
    """A ROUTER socket that serves requests: ``handler(message)`` returns a reply or a coroutine."""

    def __init__(self, ctx: zmq.Context, endpoint: str, handler: Handler,
                 loop: asyncio.AbstractEventLoop, keys: security.CurveKeys | None = None,
                 prepare_reply: Callable[[Any], Any] | None = None) -> None:
        self._handler = handler
        self._prepare_reply = prepare_reply   # e.g. copy what must not be shared in-process
        self._loop = loop
        # requests being served (tasks, futures, Deferreds) -> the peer that asked: dict
        # operations, no call of our own per request
        self._tasks: dict[Any, bytes] = {}
        sock = ctx.socket(zmq.ROUTER)
        configure_socket(sock)
        sock.setsockopt(zmq.ROUTER_MANDATORY, 1)
        if keys is not None and security.applies(endpoint):
            security.secure_server(sock, keys)
        try:
            sock.bind(endpoint)
        except zmq.ZMQError as error:
            sock.close(linger=0)
            raise UnavailableError(None, None, f"cannot listen on {endpoint}: {error.strerror}; is "
                                   f"another server already using it?") from None
        self.endpoint = sock.getsockopt_string(zmq.LAST_ENDPOINT) or endpoint
        self._sweep = _IdleSweep(loop)
        self._streams = new_streams(self._stream_expired, self._sweep.arm)   # by peer identity
        self._sweep.streams = self._streams
        # in-process peers (inproc://) leave with this process: no connections to watch
        self._peers = None if endpoint.startswith("inproc://") else _Peers(sock, loop, self._peer_gone)
        self._reactor = _Reactor(sock, loop, self._on_frames)

    def _on_frames(self, frames: list[zmq.Frame]) -> None:
        identity, body = frames[0], frames[1:]
        peer = identity.bytes
        if self._peers is not None and peer not in self._peers.fd_of:
            self._peers.seen(peer, identity)

        def deliver(message: Any, error: BaseException | None, message_id: int) -> None:
            if error is not None:
                self._reply(peer, messages.error_reply(message_id, error))
            else:
                self._serve(peer, message)

        if sum(map(len, body)) < OFF_LOOP_DECODE_BYTES:   # receive()'s usual case, one call less
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

    def _stream_expired(self, identity: bytes, error: BaseException, message_id: int) -> None:
        """A peer's stream stalled: tell that peer (a reply to one that has gone is dropped)."""
        self._reply(identity, messages.error_reply(message_id, error))

    def _serve(self, identity: Any, message: Any) -> None:
        try:
            result = self._handler(message)
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
        # a Deferred (settled by callbacks: no task of our own on the hot path) or a future
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
                    self._reply(identity, reply)   # first: the bookkeeping can wait
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
        if len(sends) == 1:   # one multipart, not a stream: no comprehension
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


class Channel:
    """A DEALER socket to one peer: ``await call(message, timeout)`` returns the reply message.

    Failures are typed: UnavailableError when the peer cannot be reached or the connection
    drops, DeadlineExceededError when it is connected but does not answer in time, and an
    ErrorReply is raised again as the peer's error class.
    """

    _ids = itertools.count(1)

    def __init__(self, ctx: zmq.Context, endpoint: str, loop: asyncio.AbstractEventLoop,
                 peer: str = "", keys: security.CurveKeys | None = None) -> None:
        self.endpoint = endpoint
        self.peer = peer or endpoint
        self.context = ctx
        # tcp:// or ipc://: its socket is closed only by close() (an inproc one also when the
        # peer server's Context goes), so a caller may keep it without asking ``closed``
        self.remote = not endpoint.startswith("inproc://")
        self._loop = loop
        self._secured = keys is not None and security.applies(endpoint)
        self._refused: str | None = None   # why the last handshake failed, until one succeeds
        # call id -> (future of the reply, what to make of the reply or None for the message,
        # and for a request() its deadline (loop clock), timeout and message kind)
        self._pending: dict[int, tuple[Any, ...]] = {}
        # One timer, at the earliest deadline of a request(): a timer (and its cancel) per
        # request were 5 of a worker's ~140 calls per small step. Requests run to their
        # reply or are cancelled long before their deadline, almost always.
        self._expiry: asyncio.TimerHandle | None = None
        self._expiry_at = math.inf
        self._connected = endpoint.startswith("inproc://")
        self._sweep = _IdleSweep(loop)
        self._streams = new_streams(lambda _, error, message_id: self._deliver(None, error, message_id),
                                    self._sweep.arm)
        self._sweep.streams = self._streams
        sock = ctx.socket(zmq.DEALER)
        configure_socket(sock)
        if self._secured:
            security.secure_client(sock, keys)  # type: ignore[arg-type]
        self._monitor: zmq.Socket | None = None
        if not self._connected:  # monitor before connect, or a fast CONNECTED event is lost
            self._monitor = sock.get_monitor_socket(
                zmq.EVENT_CONNECTED | zmq.EVENT_DISCONNECTED | security.HANDSHAKE_EVENTS)
            self._monitor_fd = self._monitor.FD
            loop.add_reader(self._monitor_fd, self._on_monitor)
        sock.connect(endpoint)
        self._reactor = _Reactor(sock, loop, self._on_frames, self._on_socket_lost)

    def _on_socket_lost(self) -> None:
        self._fail_all(UnavailableError(
            None, None, f"the connection to {self.peer} at {self.endpoint} is gone: that "
            f"in-process server was stopped"))

    def _on_frames(self, frames: list[zmq.Frame]) -> None:
        if sum(map(len, frames)) < OFF_LOOP_DECODE_BYTES:   # receive()'s usual case, one call less
            self._streams.feed(None, frames, self._deliver)
        else:
            receive(self._loop, self._streams, None, frames, self._deliver)

    def _deliver(self, reply: Any, error: BaseException | None, message_id: int) -> None:
        entry = self._pending.pop(message_id, None)
        if entry is None:
            return
        future, unwrap = entry[0], entry[1]
        if future.settled if type(future) is Deferred else future.done():
            return   # the caller gave up on it (a request() cancelled)
        if error is not None:
            future.set_exception(error)
        elif isinstance(reply, messages.ErrorReply):
            future.set_exception(messages.error_from(reply))
        elif unwrap is not None:
            future.set_result(unwrap(reply))
        else:
            future.set_result(reply)

    def _on_monitor(self) -> None:
        monitor = self._monitor
        while monitor is not None:
            try:
                event = recv_monitor_message(monitor, zmq.NOBLOCK)
            except zmq.Again:
                return
            except zmq.ZMQError:
                return
            kind = event["event"]
            if kind == zmq.EVENT_CONNECTED and not self._secured:
                self._connected = True
            elif kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self._connected, self._refused = True, None
            elif security.handshake_failed(kind):
                self._connected = False
                self._refused = security.refusal(kind, self.peer, self.endpoint, self._secured)
                self._fail_all(UnauthenticatedError(None, None, self._refused))
            elif kind == zmq.EVENT_DISCONNECTED and self._connected:
                self._connected = False
                self._fail_all(UnavailableError(
                    None, None, f"lost the connection to {self.peer} at {self.endpoint} while "
                    f"waiting for a reply; the task may have died or been stopped"))

    def _fail_all(self, error: OpError) -> None:
        self._streams.drop()   # a reply cut off mid-stream fails with its call, below
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            if not entry[0].done():
                entry[0].set_exception(error)

    def request(self, message: Any, timeout: float,
                unwrap: Callable[[Any], Any] | None = None) -> Deferred:
        """Send ``message`` now; a Deferred of its reply, or of ``unwrap(reply)``, settled the
        moment the reply is decoded (no task, no coroutine, no extra loop iteration).

        It fails with the peer's typed error for an ErrorReply, DeadlineExceededError after
        ``timeout`` s, UnavailableError if the connection drops; cancelling it forgets the call.
        """
        if not self._connected:  # rare: first call on a new channel waits for the connection
            call = asyncio.ensure_future(self.call(message, timeout))
            return then(call, unwrap or (lambda reply: reply))
        call_id = next(self._ids)
        outcome = Deferred()
        try:   # a closed socket refuses it: no ``closed`` check of our own per request
            self._reactor.send(codec.encode_messages(message, id=call_id))
        except UnavailableError:
            raise UnavailableError(None, None, f"the connection to {self.peer} at {self.endpoint} "
                                   f"is closed ({type(message).__name__} not sent)") from None
        when = time.monotonic() + timeout   # the loop's clock (asyncio uses time.monotonic)
        self._pending[call_id] = (outcome, unwrap, when, timeout, type(message).__name__)
        if when < self._expiry_at:
            self._arm_expiry(when)
        return outcome

    def _arm_expiry(self, when: float) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        self._expiry_at = when
        self._expiry = self._loop.call_at(when, self._expire_requests)

    def _expire_requests(self) -> None:
        """Fail the requests past their deadline, forget cancelled ones, re-arm for the rest."""
        self._expiry, self._expiry_at = None, math.inf
        now, nearest = time.monotonic(), math.inf
        for call_id, entry in list(self._pending.items()):
            if len(entry) == 2:   # a call(): asyncio.wait_for keeps its deadline
                continue
            outcome, _, when, timeout, kind = entry
            if outcome.done():
                del self._pending[call_id]
            elif when <= now:
                del self._pending[call_id]
                outcome.set_exception(DeadlineExceededError(
                    None, None, f"no reply from {self.peer} at {self.endpoint} within {timeout:.1f} s "
                    f"({kind}); is its server running and responsive?"))
            elif when < nearest:
                nearest = when
        if nearest < self._expiry_at:
            self._arm_expiry(nearest)

    async def call(self, message: Any, timeout: float,
                   on_cancel: Callable[[int], Any] | None = None) -> Any:
        """Send ``message`` (its id is assigned here) and await the reply within ``timeout`` s.

        If the caller is cancelled after sending, ``on_cancel(id)`` may return a message that
        is sent at once, without waiting for a reply (a CancelStep for the peer).
        """
        if self.closed:
            raise UnavailableError(None, None, f"the connection to {self.peer} at {self.endpoint} "
                                   f"is closed ({type(message).__name__} not sent)")
        call_id = next(self._ids)
        future: asyncio.Future = self._loop.create_future()
        self._pending[call_id] = (future, None)
        sent = False
        try:
            if not self._connected:
                await self._wait_connected(timeout, message)
            self._reactor.send(codec.encode_messages(message, id=call_id))
            sent = True
            return await asyncio.wait_for(future, timeout)
        except asyncio.CancelledError:
            if sent and on_cancel is not None:
                self.send_only(on_cancel(call_id))
            raise
        except asyncio.TimeoutError:
            raise DeadlineExceededError(
                None, None, f"no reply from {self.peer} at {self.endpoint} within {timeout:.1f} s "
                f"({type(message).__name__}); is its server running and responsive?") from None
        finally:
            self._pending.pop(call_id, None)

    @property
    def closed(self) -> bool:
        return self._reactor.closed

    def send_only(self, message: Any) -> None:
        """Send a message whose reply nobody waits for (its reply is dropped on arrival)."""
        self._reactor.send(codec.encode_messages(message, id=next(self._ids)))

    async def _wait_connected(self, timeout: float, message: Any) -> None:
        deadline = self._loop.time() + timeout
        self._on_monitor()  # the monitor FD is edge-triggered: read what may be queued already
        while not self._connected:
            if self._refused is not None:
                raise UnauthenticatedError(None, None, self._refused)
            if self._loop.time() >= deadline:
                raise UnavailableError(
                    None, None, f"cannot reach {self.peer} at {self.endpoint} within {timeout:.1f} s "
                    f"({type(message).__name__}): no server is listening there. Start it (e.g. "
                    f"'python -m zmtf.server --cluster ... --job ... --task ...') or fix the address.")
            await asyncio.sleep(0.002)
            self._on_monitor()

    def close(self) -> None:
        self._fail_all(UnavailableError(None, None, f"channel to {self.peer} was closed"))
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry, self._expiry_at = None, math.inf
        self._sweep.cancel()
        if self._monitor is not None:
            self._loop.remove_reader(self._monitor_fd)
            if not self._reactor.sock.closed:
                self._reactor.sock.disable_monitor()
            if not self._monitor.closed:
                self._monitor.close(linger=0)
            self._monitor = None
        self._reactor.close()

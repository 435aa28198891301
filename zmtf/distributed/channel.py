"""Channel: a DEALER socket to one peer, on the event loop: request/reply with deadlines.

The calls in flight live in a ``wire.calls.Calls`` table (ids, replies matched by id,
deadlines) with one loop timer at the earliest deadline; the connection's state comes from
its monitor through ``wire.connection_state.ClientConnection``. Its counterpart for a
plain thread without a loop is ``blocking.BlockingChannel``; both keep their calls and
their connection state in those same pure classes.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Callable

import zmq

from zmtf.distributed import faults, liveness, security, shared_memory
from zmtf.distributed.operator_log import connection_changed
from zmtf.distributed.futures import Deferred, then
from zmtf.distributed.reactor import DeadlineTimer, IdleSweep, Reactor, receive
from zmtf.distributed.task_stats import Traffic
from zmtf.distributed.sockets import (
    OFF_LOOP_DECODE_BYTES, close_monitor, configure_socket, heartbeats, identify_client,
    new_streams,
    next_connection_change,
)
from zmtf.framework.errors import (
    DeadlineExceededError, OpError, UnauthenticatedError, UnavailableError,
)
from zmtf.wire import codec, messages
from zmtf.wire.calls import Calls, call_ids
from zmtf.wire.connection_state import CLIENT_EVENTS, ClientConnection

if TYPE_CHECKING:   # prometheus_client loads only in a server with metrics on
    from zmtf.distributed.metrics import PeerTraffic

#: Where every channel of this process, async or blocking, takes its request ids. A server
#: keys a running step by (session, request id), and the threads of one Session each have
#: their own channel: ids drawn from one source never collide.
CALL_IDS = call_ids()


def no_reply_error(peer: str, endpoint: str, timeout: float, kind: type) -> DeadlineExceededError:
    """The error of a call whose deadline passed without a reply."""
    return DeadlineExceededError(
        None, None, f"no reply from {peer} at {endpoint} within {timeout:.1f} s "
        f"({kind.__name__}); is its server running and responsive?")


def unreachable_error(peer: str, endpoint: str, timeout: float, kind: type) -> UnavailableError:
    """The error of a call whose peer could not be reached in time."""
    return UnavailableError(
        None, None, f"cannot reach {peer} at {endpoint} within {timeout:.1f} s "
        f"({kind.__name__}): no server is listening there. Start it (e.g. "
        f"'python -m zmtf.server --cluster ... --job ... --task ...') or fix the address.")


def stuck_error(peer: str, endpoint: str, bound: float) -> UnavailableError:
    """The error of calls to a peer that is connected but whose event loop does not answer."""
    return UnavailableError(
        None, None, f"{peer} at {endpoint} is unavailable: it did not answer a ping within the "
        f"liveness bound ({bound:g} s) while calls waited on it. Its process is up (its connection "
        f"answers ZeroMQ heartbeats) but its event loop is stuck (a handler or kernel blocking it?)")


#: a channel that is never probed (an in-process peer: it shares our fate)
_NEVER_PROBED = object()


def lost_error(peer: str, endpoint: str, lost_for: float, bound: float,
               kind: type | None = None) -> UnavailableError:
    """The error of a call to a peer whose connection dropped and did not come back."""
    what = f" ({kind.__name__} not sent)" if kind is not None else ""
    return UnavailableError(
        None, None, f"{peer} at {endpoint} is unavailable: its connection was lost "
        f"{lost_for:.1f} s ago and has not come back (liveness bound {bound:g} s){what}; the "
        f"task died, was stopped, or the network between us is down")


class Channel:
    """A DEALER socket to one peer: ``await call(message, timeout)`` returns the reply message.

    Failures are typed: UnavailableError when the peer cannot be reached or the connection
    drops, DeadlineExceededError when it is connected but does not answer in time, and an
    ErrorReply is raised again as the peer's error class.
    """

    def __init__(self, ctx: zmq.Context, endpoint: str, loop: asyncio.AbstractEventLoop,
                 peer: str = "", keys: security.Credential | None = None,
                 traffic: Traffic | None = None) -> None:
        self.endpoint = endpoint
        self.peer = peer or endpoint
        self.context = ctx
        self.meter: PeerTraffic | None = None   # its Prometheus metrics (a server's, when on)
        # tcp:// or ipc://: its socket is closed only by close() (an inproc one also when the
        # peer server's Context goes), so a caller may keep it without asking ``closed``
        self.remote = not endpoint.startswith("inproc://")
        self._loop = loop
        secured = keys is not None and security.applies(endpoint)
        self._connection = ClientConnection(self.peer, endpoint, secured, connected=not self.remote)
        self._liveness = liveness.liveness_seconds()
        # call id -> (future or Deferred of the reply, what to make of the reply or None for
        # the message itself, its timeout, its message class)
        self._calls = Calls(ids=CALL_IDS)
        self._deadline_timer = DeadlineTimer(loop, self._calls, self._expired)
        self._sweep = IdleSweep(loop)
        self._streams = new_streams(
            lambda _, error, message_id: self._deliver(None, error, message_id), self._sweep.arm)
        self._sweep.streams = self._streams
        self._shared = shared_memory.writer_for(endpoint)   # None: off, or inproc://
        sock = ctx.socket(zmq.DEALER)
        configure_socket(sock)
        identify_client(sock)
        if secured:
            security.secure_client(sock, keys)  # type: ignore[arg-type]
        self._monitor: zmq.Socket | None = None
        if self.remote:  # monitor before connect, or a fast CONNECTED event is lost
            heartbeats(sock, self._liveness)
            self._monitor = sock.get_monitor_socket(CLIENT_EVENTS)
            self._monitor_fd = self._monitor.FD
            loop.add_reader(self._monitor_fd, self._on_monitor)
        sock.connect(endpoint)
        #: how the peer's ROUTER knows this socket (``faults`` tells a task's channels by it)
        self.routing_id = bytes(sock.getsockopt(zmq.ROUTING_ID))
        self._reactor = Reactor(sock, loop, self._on_frames, self._on_socket_lost, traffic)
        # Is the peer's event loop answering? ZeroMQ's heartbeats come from its I/O thread,
        # so a peer whose loop is stuck still looks connected. While calls wait, every L/2 s
        # without a message from the peer sends a Ping, which its loop answers; none within L:
        # the calls fail (``_check_loop``). Per request: one ``is None``; per message: one add.
        self._heard = 0   # messages received
        # (an in-process peer too while a test harness may pause it: ``faults``)
        self._probe: Any = None if self.remote or faults.installed() else _NEVER_PROBED
        self._heard_at_check = 0
        self._pinging = False

    # ---- replies and connection events -------------------------------------------------
    def _on_socket_lost(self) -> None:
        self._fail_all(UnavailableError(
            None, None, f"the connection to {self.peer} at {self.endpoint} is gone: that "
            f"in-process server was stopped"))

    def _on_frames(self, frames: list[zmq.Frame]) -> None:
        if self.meter is not None:
            self.meter.received(frames)
        self._heard += 1
        if sum(map(len, frames)) < OFF_LOOP_DECODE_BYTES:   # small: decoded here, on the loop
            self._streams.feed(None, frames, self._deliver)
        else:
            receive(self._loop, self._streams, None, frames, self._deliver)

    def _deliver(self, reply: Any, error: BaseException | None, message_id: int) -> None:
        entry = self._calls.match(message_id)
        if entry is None:
            return   # a reply nobody waits for: expired, failed, or a send_only's
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

    def _expired(self, expired: list[tuple[int, Any]]) -> None:
        for _, (future, _, timeout, kind) in expired:
            if not future.done():   # not cancelled by its caller meanwhile
                future.set_exception(no_reply_error(self.peer, self.endpoint, timeout, kind))

    def _on_monitor(self) -> None:
        monitor, connection = self._monitor, self._connection
        while monitor is not None:
            was_up = connection.connected
            try:
                change = next_connection_change(monitor, connection)
            except zmq.ZMQError:
                return
            if connection.connected != was_up:   # lost, or back: one line each (operator_log)
                connection_changed(self.peer, self.endpoint, was_up, connection.connected,
                                   connection.lost_once)
            if change is None:
                return
            self._fail_all(connection.error_for(change))

    def _fail_all(self, error: OpError) -> None:
        self._streams.drop()   # a reply cut off mid-stream fails with its call, below
        for _, entry in self._calls.take_all():
            if not entry[0].done():
                entry[0].set_exception(error)

    # ---- calls -------------------------------------------------------------------------
    def request(self, message: Any, timeout: float,
                unwrap: Callable[[Any], Any] | None = None) -> Deferred:
        """Send ``message`` now; a Deferred of its reply, or of ``unwrap(reply)``, settled the
        moment the reply is decoded (no task, no coroutine, no extra loop iteration).

        It fails with the peer's typed error for an ErrorReply, DeadlineExceededError after
        ``timeout`` s, UnavailableError if the connection drops; cancelling it forgets the call.
        """
        if not self._connection.connected:  # rare: a new channel's first call waits to connect
            call = asyncio.ensure_future(self.call(message, timeout))
            return then(call, unwrap or (lambda reply: reply))
        if self._probe is None:
            self._arm_probe()
        outcome = Deferred()
        when = time.monotonic() + timeout   # the loop's clock (asyncio uses time.monotonic)
        calls = self._calls
        call_id = calls.new_call(when, (outcome, unwrap, timeout, type(message)))
        try:   # a closed socket refuses it: no ``closed`` check before each request
            sends = codec.encode_messages(message, id=call_id, shared=self._writer())
            if self.meter is not None:
                self.meter.sent(sends)
            self._reactor.send(sends)
        except UnavailableError:
            calls.match(call_id)
            raise UnavailableError(None, None, f"the connection to {self.peer} at {self.endpoint} "
                                   f"is closed ({type(message).__name__} not sent)") from None
        except BaseException:
            calls.match(call_id)
            raise
        if when < self._deadline_timer.at:
            self._deadline_timer.armed(when)
        return outcome

    async def call(self, message: Any, timeout: float,
                   on_cancel: Callable[[int], Any] | None = None,
                   connect_timeout: float | None = None) -> Any:
        """Send ``message`` (its id is assigned here) and await the reply within ``timeout`` s
        (not connected yet: within ``connect_timeout`` s, when given, to connect first).

        If the caller is cancelled after sending, ``on_cancel(id)`` may return a message that
        is sent at once, without waiting for a reply (a CancelStep for the peer).
        """
        if self.closed:
            raise UnavailableError(None, None, f"the connection to {self.peer} at {self.endpoint} "
                                   f"is closed ({type(message).__name__} not sent)")
        if not self._connection.connected:
            await self._wait_connected(timeout if connect_timeout is None else connect_timeout,
                                       message)
        if self._probe is None:
            self._arm_probe()
        future: asyncio.Future = self._loop.create_future()
        when = time.monotonic() + timeout
        call_id = self._calls.new_call(when, (future, None, timeout, type(message)))
        sent = False
        try:
            sends = codec.encode_messages(message, id=call_id, shared=self._writer())
            if self.meter is not None:
                self.meter.sent(sends)
            self._reactor.send(sends)
            sent = True
            self._deadline_timer.armed(when)
            return await future
        except asyncio.CancelledError:
            if sent and on_cancel is not None:
                self.send_only(on_cancel(call_id))
            raise
        finally:
            self._calls.match(call_id)   # forgotten, whatever ended it

    @property
    def closed(self) -> bool:
        return self._reactor.closed

    # ---- is the peer's loop answering? -------------------------------------------------
    def _arm_probe(self) -> None:
        self._heard_at_check = self._heard
        self._probe = self._loop.call_later(self._liveness / 2, self._check_loop)

    def _check_loop(self) -> None:
        """Every L/2 s while calls wait: a peer silent since the last check gets a Ping."""
        self._probe = None
        if self._reactor.closed or not self._calls.pending():
            return   # nothing waits: the next request arms the check again
        if (self._heard == self._heard_at_check and self._connection.connected
                and not self._pinging):
            self._pinging = True
            asyncio.ensure_future(self._ping())
        self._arm_probe()

    async def _ping(self) -> None:
        started = time.monotonic()
        try:
            await self.call(messages.Ping(id=0), self._liveness)
            if self.meter is not None:
                self.meter.pinged(time.monotonic() - started)
        except DeadlineExceededError:   # connected, yet no answer: its loop is stuck
            if not self._reactor.closed:
                self._fail_all(stuck_error(self.peer, self.endpoint, self._liveness))
        except OpError:
            pass   # the connection dropped or closed: its monitor fails the calls
        finally:
            self._pinging = False

    def _writer(self) -> Any:
        """The shared-memory writer, once the peer's replies said it is on this host."""
        return self._shared if self._shared is not None and None in self._streams.local_peers \
            else None

    @property
    def connected(self) -> bool:
        """Whether its connection is up now (an inproc:// one always is)."""
        return self._connection.connected

    def send_only(self, message: Any) -> None:
        """Send a message whose reply nobody waits for (its reply is dropped on arrival)."""
        # an id from the same source, registered nowhere: a reply to it matches no call
        sends = codec.encode_messages(message, id=next(CALL_IDS), shared=self._writer())
        if self.meter is not None:
            self.meter.sent(sends)
        self._reactor.send(sends)

    def unavailable(self) -> UnavailableError | None:
        """UnavailableError naming the peer if its live connection dropped and is not back."""
        lost_at = self._connection.lost_at
        if lost_at is None or self._connection.connected:
            return None
        return lost_error(self.peer, self.endpoint, time.monotonic() - lost_at, self._liveness)

    async def _wait_connected(self, timeout: float, message: Any) -> None:
        deadline = self._loop.time() + timeout
        connection = self._connection
        self._on_monitor()  # the monitor FD is edge-triggered: read what may be queued already
        while not connection.connected:
            if connection.refused is not None:
                raise UnauthenticatedError(None, None, connection.refused)
            now = self._loop.time()
            gone_for = connection.gone_for(now, self._liveness, deadline)
            if gone_for is not None:
                raise lost_error(self.peer, self.endpoint, gone_for, self._liveness, type(message))
            if now >= deadline:
                raise unreachable_error(self.peer, self.endpoint, timeout, type(message))
            await asyncio.sleep(0.002)
            self._on_monitor()

    def close(self) -> None:
        if isinstance(self._probe, asyncio.TimerHandle):
            self._probe.cancel()
        self._probe = _NEVER_PROBED
        self._fail_all(UnavailableError(None, None, f"channel to {self.peer} was closed"))
        self._deadline_timer.cancel()
        self._sweep.cancel()
        if self._monitor is not None:
            self._loop.remove_reader(self._monitor_fd)
            close_monitor(self._reactor.sock, self._monitor)
            self._monitor = None
        self._reactor.close()

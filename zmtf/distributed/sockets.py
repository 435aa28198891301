"""Frames on plain zmq sockets: zmtf's socket options, multipart send and receive, monitor
events, and the pooled buffers that received tensors land in.

Shared by the asyncio side (``reactor``, ``listener``, ``channel``) and the sync
``BlockingChannel``. The send and receive helpers call pyzmq's compiled methods directly
and pass flags as plain ints: they run for every frame of every message, and pyzmq's
Python-level wrappers convert flags and options to enums on each call.
"""

from __future__ import annotations

import itertools
import os
import time
from typing import Any, Callable

import zmq

from zmtf.framework.memory_budget import MemoryBudget
from zmtf.runtime.buffer_pool import BufferPool
from zmtf.wire import codec
from zmtf.wire.connection_state import (
    ClientConnection, Lost, MonitorEvent, Refused, decode_monitor_event,
)
from zmtf.wire.streams import Expired, Streams
from zmtf.wire.tensors import CHUNK_BYTES

# plain ints: pyzmq's enum flags cost a conversion on every call of the hot path
POLLIN, NOBLOCK = int(zmq.POLLIN), int(zmq.NOBLOCK)
_SNDMORE = int(zmq.SNDMORE)
_MORE = NOBLOCK | _SNDMORE
# pyzmq's compiled send, without the Python-level wrapper of zmq.Socket.send (which only adds
# the draft routing_id/group arguments); it honours copy_threshold all the same
_send = zmq.backend.Socket.send
#: "is a message waiting?" is asked as ``poll([(sock, POLLIN)], 0)``, not getsockopt(EVENTS),
#: whose option is converted to an enum first
poll = zmq.zmq_poll

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


#: The routing ids of this process's client sockets: a prefix of its own and a counter. A
#: socket keeps its id across reconnects (a server tells a client that came back from one
#: that is gone), and a server tells which of its peers are one process (``client_of``): the
#: sessions a process created are collected when all of its connections are gone.
CLIENT_PREFIX_BYTES = 9


def _new_process_prefix() -> bytes:
    return b"z" + os.urandom(CLIENT_PREFIX_BYTES - 1)   # not 0: a leading 0 is libzmq's


_prefix = [_new_process_prefix()]   # a forked child is another client
_sockets = itertools.count(1)
os.register_at_fork(after_in_child=lambda: _prefix.__setitem__(0, _new_process_prefix()))


def identify_client(sock: zmq.Socket) -> None:
    """Give a DEALER this process's next client routing id (before it connects)."""
    number = next(_sockets) % (1 << 32)
    sock.setsockopt(zmq.ROUTING_ID, _prefix[0] + number.to_bytes(4, "big"))


def client_of(routing_id: bytes) -> bytes | None:
    """The client process a peer's routing id belongs to (None: not one of zmtf's clients)."""
    if len(routing_id) == CLIENT_PREFIX_BYTES + 4 and routing_id[:1] == b"z":
        return routing_id[:CLIENT_PREFIX_BYTES]
    return None


def heartbeats(sock: zmq.Socket, seconds: float) -> None:
    """Have ZeroMQ drop ``sock``'s connection when its peer stops answering for ``seconds``.

    A ping every third of the bound, and the connection dropped two thirds after a ping that
    nothing answered: a silent peer is found within the bound. The TTL makes the peer drop
    us too if we go silent; the handshake limit catches a peer that accepts connections
    (its kernel does, even while it is stopped) but never answers the greeting."""
    ms = max(int(seconds * 1000), 50)
    sock.setsockopt(zmq.HEARTBEAT_IVL, max(ms // 3, 10))
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, max(2 * ms // 3, 20))
    sock.setsockopt(zmq.HEARTBEAT_TTL, min(max(ms, 100), 6_553_500))   # deciseconds on the wire
    sock.setsockopt(zmq.HANDSHAKE_IVL, ms)


def send_frames(sock: zmq.Socket, frames: list[Any], blocking: bool = False) -> None:
    """``send_multipart(frames, copy=False)``; NOBLOCK unless ``blocking``. Only the first
    frame can raise zmq.Again: once it is queued, the rest of the message is."""
    more, end = (_SNDMORE, 0) if blocking else (_MORE, NOBLOCK)
    last = len(frames) - 1
    for i, frame in enumerate(frames):
        _send(sock, frame, more if i < last else end, False)


def recv_frames(sock: zmq.Socket, flags: int = 0) -> list[zmq.Frame]:
    """``recv_multipart(flags, copy=False)``, reading each frame's MORE flag rather than
    asking the socket for RCVMORE (which converts the option to an enum per frame)."""
    frame = sock.recv(flags, copy=False)
    frames = [frame]
    while frame.more:
        frame = sock.recv(flags, copy=False)
        frames.append(frame)
    return frames


def next_monitor_event(monitor: zmq.Socket) -> MonitorEvent | None:
    """The next event waiting on a monitor socket, or None when there is none now."""
    try:
        frames = monitor.recv_multipart(NOBLOCK)
    except zmq.Again:
        return None
    return decode_monitor_event(frames)


def next_connection_change(monitor: zmq.Socket, connection: ClientConnection) -> Refused | Lost | None:
    """Feed the events waiting on a client's monitor to its ``connection`` until one changes
    what its calls see (refused, lost); None once no event is waiting."""
    while True:
        event = next_monitor_event(monitor)
        if event is None:
            return None
        change = connection.on_event(event.kind, time.monotonic())
        if change is not None:
            return change


def close_monitor(sock: zmq.Socket, monitor: zmq.Socket) -> None:
    """Stop monitoring ``sock`` (if it is still open) and close its monitor socket."""
    if not sock.closed:
        sock.disable_monitor()
    if not monitor.closed:
        monitor.close(linger=0)


#: Unstreamed messages bigger than this are decoded on a worker thread: assembling a 256 MB
#: tensor from its 1 MB parts takes tens of ms, which the event loop must not spend. zmtf
#: itself streams messages this big (codec.STREAM_MIN_BYTES); their parts are copied on the
#: loop one at a time as they arrive.
OFF_LOOP_DECODE_BYTES = 4 << 20
RECEIVE_BUFFERS = BufferPool()  # received big tensors reuse memory once their users drop them


def _allocate(dtype: Any, shape: Any) -> Any:
    return RECEIVE_BUFFERS.empty(tuple(shape), dtype)


def decode(frames: list[Any]) -> Any:
    """``codec.decode`` into pooled buffers."""
    return codec.decode(frames, allocate=_allocate)


def new_streams(on_expired: Expired | None = None,
                on_open: Callable[[], None] | None = None,
                budget: MemoryBudget | None = None,
                idle_seconds: float | None = None) -> Streams:
    """Reassembly state for one socket; streamed tensors land in pooled buffers (a server's
    admitted against its ``budget`` first)."""
    return Streams(allocate=_allocate, on_expired=on_expired, on_open=on_open, budget=budget,
                   idle_seconds=idle_seconds)

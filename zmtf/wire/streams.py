"""Streams: per-peer reassembly of streamed messages, sans-io (ZeroMQ messages in, messages out).

A streamed message (``codec`` docstring) is a header message, then its parts one per
message. ``Streams.feed`` takes every ZeroMQ message a socket receives, with the peer it
came from, and hands finished messages and errors to ``deliver(message, error, id)``:

* a message that is not part of a stream is decoded as usual;
* a stream's header opens that peer's stream (its tensors are allocated part by part);
* while a peer's stream is open, each of its messages must be one frame: the next part,
  copied into place and checked on arrival. The last part delivers the message.

A stream that goes wrong (a part that does not fit, a multi-frame message in the middle)
delivers one InvalidArgumentError for the streamed message's id and swallows the rest of
its parts, so one bad stream yields one error, not one per part; the multi-frame message is
then decoded on its own. A stream that sees no part for ``idle_seconds`` (its peer died or
reconnected under a new identity) is dropped, and its memory with it; its DeadlineExceededError
goes to ``on_expired(peer, error, id)``, addressed to that stream's own peer. ``feed`` looks
for idle streams at most once a second; ``sweep()`` is for the caller's timer (``on_open``
says when to arm one), so that a socket that receives nothing more still lets go of a dead
peer's stream. With a ``budget`` (a server's ``MemoryBudget``), a stream's header is
admitted for the bytes its descriptors declare before any buffer is allocated, or refused
with ResourceExhaustedError (its parts swallowed); the bytes are given back when the stream
is delivered, fails or is dropped. Nothing here blocks; the clock is the caller's (read only while streams are
open).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Hashable, Sequence

from zmtf.framework.errors import DeadlineExceededError, InvalidArgumentError, ResourceExhaustedError
from zmtf.framework.memory_budget import Account, MemoryBudget
from zmtf.wire import codec
from zmtf.wire.messages import CARRIES_TENSORS, Message
from zmtf.wire.tensors import (
    DEFAULT_LIMITS, SHARED, Allocate, Limits, StreamedTensors, short_repr,
)

Deliver = Callable[["Message | None", "BaseException | None", int], None]
Expired = Callable[[Hashable, BaseException, int], None]   # (peer, error, id) of a dropped stream

IDLE_SECONDS = 30.0   # a server's own is its stream_idle_secs setting (the same default)


class _Stream:
    __slots__ = ("cls", "id", "fields", "tensors", "remaining", "last_seen", "account")

    def __init__(self, cls: type[Message], message_id: int, fields: dict[str, Any] | None,
                 tensors: StreamedTensors | None, remaining: int, now: float,
                 account: Account | None = None) -> None:
        self.cls, self.id, self.fields, self.tensors = cls, message_id, fields, tensors
        self.remaining = remaining   # part messages still to come
        self.last_seen = now
        self.account = account       # the bytes its tensors took from the budget

    def release(self) -> None:
        """Its buffers are no longer ours to count (delivered, failed or dropped)."""
        self.tensors = None
        if self.account is not None:
            self.account.close()
            self.account = None

    @property
    def failed(self) -> bool:
        return self.tensors is None

    def what(self) -> str:
        return f"{self.cls.__name__} (id {self.id})"


class Streams:
    """The open streams of one socket, by peer (a ROUTER's identity; None for a DEALER)."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS, allocate: Allocate | None = None,
                 idle_seconds: float | None = None,   # None: IDLE_SECONDS
                 clock: Callable[[], float] = time.monotonic,
                 on_expired: Expired | None = None,
                 on_open: Callable[[], None] | None = None,
                 budget: MemoryBudget | None = None) -> None:
        self._limits = limits
        self._budget = budget   # admits a stream's declared bytes before its buffers exist
        self._clock = clock
        self._allocate = allocate
        self.idle_seconds = IDLE_SECONDS if idle_seconds is None else idle_seconds
        self._on_expired = on_expired   # None: an idle stream is dropped without a word
        self._on_open = on_open         # called when a stream opens (to arm a sweep timer)
        self._open: dict[Hashable, _Stream] = {}
        self._swept = 0.0
        #: peers whose messages said they are on this host and take shared memory
        self.local_peers: set[Hashable] = set()
        self._heard: set[Hashable] = set()   # peers whose host this socket has checked

    def __len__(self) -> int:
        return len(self._open)

    def mid_stream(self, peer: Hashable) -> bool:
        """True while ``peer``'s next message belongs to a stream."""
        return peer in self._open

    def feed(self, peer: Hashable, frames: Sequence[Any], deliver: Deliver) -> None:
        """One ZeroMQ message from ``peer``; finished messages and errors go to ``deliver``."""
        if self._open:
            now = self._clock()
            if now - self._swept >= 1.0:
                self._sweep(now)
            stream = self._open.get(peer)
            if stream is not None:
                if len(frames) == 1:
                    self._continue(peer, stream, frames[0], now, deliver)
                    return
                del self._open[peer]
                failed = stream.failed
                stream.release()
                if not failed:
                    deliver(None, InvalidArgumentError(
                        f"{stream.what()} was cut short: {stream.remaining} more part messages "
                        f"were due, then came a {len(frames)}-frame message"), stream.id)
        try:
            cls, header = codec.read_header(frames, self._limits)
            if codec.HOST_KEY in header and peer not in self._heard:
                self._learn_host(peer, header)
            if codec.STREAM_KEY in header:
                self._start(peer, cls, header, frames, self._clock())
                return
            message = codec.message_from(cls, header, frames, self._limits, self._allocate)
        except (InvalidArgumentError, ResourceExhaustedError) as error:
            deliver(None, error, codec.peek_id(frames))
            return
        deliver(message, None, message.id)

    def _learn_host(self, peer: Hashable, header: dict[str, Any]) -> None:
        """A peer on this host, but not this very process (its memory is ours already)."""
        self._heard.add(peer)
        if codec.shared_attach(header) is not None and header[codec.HOST_KEY] != SHARED.host:
            self.local_peers.add(peer)

    def forget(self, peer: Hashable) -> None:
        """Drop ``peer``'s open stream, if any, without a word (the peer has gone)."""
        self.local_peers.discard(peer)
        self._heard.discard(peer)
        stream = self._open.pop(peer, None)
        if stream is not None:
            stream.release()

    def drop(self, reason: BaseException | None = None, deliver: Deliver | None = None) -> None:
        """Forget every open stream (the connection is gone); report them if asked."""
        streams, self._open = self._open, {}
        for stream in streams.values():
            failed = stream.failed
            stream.release()
            if deliver is not None and reason is not None and not failed:
                deliver(None, reason, stream.id)

    def _start(self, peer: Hashable, cls: type[Message], header: dict[str, Any],
               frames: Sequence[Any], now: float) -> None:
        message_id = header["id"]
        count = header[codec.STREAM_KEY]
        if type(count) is not int or count < 1:
            raise InvalidArgumentError(f"{cls.__name__} (id {message_id}): stream must be the "
                                       f"count of part messages (>= 1), got {short_repr(count)}")
        # from here on, the peer's next `count` messages are this stream's, valid or not
        failed = _Stream(cls, message_id, None, None, count, now)
        if self._on_open is not None:
            self._on_open()
        try:
            if len(frames) != 1:
                raise InvalidArgumentError(
                    f"{cls.__name__} (id {message_id}) is streamed, so its header comes alone; "
                    f"this one came with {len(frames) - 1} more frames")
            if not CARRIES_TENSORS[cls]:
                raise InvalidArgumentError(f"{cls.__name__} carries no tensors: nothing to stream")
            fields = codec.check_body(cls, header)
            try:
                tensors = StreamedTensors(header["tensors"], self._limits, self._allocate,
                                          codec.shared_attach(header))
            except InvalidArgumentError as error:
                raise InvalidArgumentError(
                    f"{cls.__name__} (id {message_id}): {error.message}") from None
            if tensors.remaining != count:
                raise InvalidArgumentError(
                    f"{cls.__name__} (id {message_id}): the tensors have {tensors.remaining} "
                    f"parts, the header says {count} part messages follow")
            account = None
            if self._budget is not None:   # refused here, before a buffer is allocated
                account = Account(self._budget)
                account.charge(tensors.nbytes, f"inbound {cls.__name__} (id {message_id})")
        except (InvalidArgumentError, ResourceExhaustedError):
            self._open[peer] = failed   # swallow its parts
            raise
        self._open[peer] = _Stream(cls, message_id, fields, tensors, count, now, account)

    def _continue(self, peer: Hashable, stream: _Stream, frame: Any, now: float,
                  deliver: Deliver) -> None:
        stream.remaining -= 1
        stream.last_seen = now
        if stream.remaining == 0:
            del self._open[peer]
        if stream.failed:
            return
        try:
            stream.tensors.add(frame)    # type: ignore[union-attr]
            if stream.remaining:
                return
            fields = stream.fields
            fields["tensors"] = stream.tensors.arrays()   # type: ignore[index,union-attr]
            message = stream.cls(id=stream.id, **fields)  # type: ignore[arg-type]
        except InvalidArgumentError as error:
            stream.release()    # fail once; swallow the parts still to come
            deliver(None, InvalidArgumentError(f"{stream.what()}: {error.message}"), stream.id)
            return
        stream.release()   # arrived: the request's step counts what it holds from here on
        deliver(message, None, stream.id)

    def sweep(self) -> None:
        """Drop the streams idle for ``idle_seconds`` or more (a timer's job: see above)."""
        if self._open:
            self._sweep(self._clock())

    def _sweep(self, now: float) -> None:
        self._swept = now
        for peer, stream in list(self._open.items()):
            if now - stream.last_seen >= self.idle_seconds:
                del self._open[peer]
                failed = stream.failed
                stream.release()   # its buffers go with it
                if not failed and self._on_expired is not None:
                    self._on_expired(peer, DeadlineExceededError(
                        None, None, f"{stream.what()}: {stream.remaining} part messages did not "
                        f"come within {self.idle_seconds:g} s of the last; the stream was "
                        f"dropped"), stream.id)


__all__ = ["IDLE_SECONDS", "Streams"]

"""Streamed messages: a header message, then one message per part, reassembled per peer."""

import random

import msgpack
import numpy as np
import pytest

from zmtf.framework.errors import DeadlineExceededError, InvalidArgumentError
from zmtf.wire import codec
from zmtf.wire import messages as m
from zmtf.wire.streams import Streams
from zmtf.wire.tensors import Limits

SMALL = Limits(chunk_bytes=64)   # parts of 64 bytes: streams of many parts from small arrays


class Inbox:
    """What Streams delivers, in order."""

    def __init__(self):
        self.got = []

    def __call__(self, message, error, message_id):
        self.got.append((message, error, message_id))

    def take(self):
        got, self.got = self.got, []
        return got


def streamed(message, limits=SMALL, **kw):
    sends = codec.encode_messages(message, limits, stream_min_bytes=1, **kw)
    return [[bytes(frame) for frame in frames] for frames in sends]


def push(*tensors, id=5):
    return m.PushTensor(id=id, step_id=3, keys=[f"k{i}" for i in range(len(tensors))],
                        tensors=list(tensors))


def feed_all(streams, peer, sends, inbox):
    for frames in sends:
        streams.feed(peer, frames, inbox)


class Clock:
    def __init__(self, now=0.0):
        self.now = now

    def __call__(self):
        return self.now


ARRAYS = [
    np.arange(100, dtype=np.float32).reshape(4, 25),
    np.arange(37, dtype=np.int64) - 5,
    np.array([True, False, True] * 30),
    np.arange(50, dtype=np.float16),
    np.array(7.5),
    np.zeros((0, 3), np.int32),
    np.array([b"alpha", b"", b"x" * 200], dtype=object),
]


def test_a_stream_is_a_lone_header_then_one_message_per_part():
    message = push(np.arange(64, dtype=np.float32))           # 256 bytes: 4 parts of 64
    sends = streamed(message)
    assert [len(frames) for frames in sends] == [1, 1, 1, 1, 1]
    header = msgpack.unpackb(sends[0][0])
    assert header[codec.STREAM_KEY] == 4 and header["tensors"][0]["parts"] == 4
    assert b"".join(frames[0] for frames in sends[1:]) == message.tensors[0].tobytes()


def test_small_messages_are_one_multipart_as_before():
    message = push(np.arange(64, dtype=np.float32))
    sends = codec.encode_messages(message, SMALL)
    assert len(sends) == 1
    assert [bytes(f) for f in sends[0]] == [bytes(f) for f in codec.encode(message, SMALL)]


def test_every_dtype_round_trips_through_a_stream():
    inbox, streams = Inbox(), Streams(SMALL)
    feed_all(streams, b"peer", streamed(push(*ARRAYS, id=9)), inbox)
    (message, error, message_id), = inbox.take()
    assert error is None and message_id == 9 and len(streams) == 0
    assert message.keys == [f"k{i}" for i in range(len(ARRAYS))]
    for got, sent in zip(message.tensors, ARRAYS):
        assert got.dtype == sent.dtype and got.shape == sent.shape
        assert np.array_equal(got, sent)
        assert not got.flags.writeable


def test_each_part_is_copied_into_the_allocated_buffer_as_it_arrives():
    handed_out = []

    def allocate(dtype, shape):
        out = np.full(shape, -1, dtype)
        handed_out.append(out)
        return out

    inbox, streams = Inbox(), Streams(SMALL, allocate)
    value = np.arange(64, dtype=np.float32)
    sends = streamed(push(value))
    streams.feed("p", sends[0], inbox)
    streams.feed("p", sends[1], inbox)
    (buffer,) = handed_out
    assert np.array_equal(buffer[:16], value[:16]) and (buffer[16:] == -1).all()
    feed_all(streams, "p", sends[2:], inbox)
    (message, error, _), = inbox.take()
    assert error is None and np.shares_memory(message.tensors[0], buffer)


def test_streams_of_different_peers_interleave():
    inbox, streams = Inbox(), Streams(SMALL)
    a = streamed(push(np.arange(40, dtype=np.int64), id=1))
    b = streamed(push(np.arange(40, dtype=np.float64) / 2, id=2))
    for frames_a, frames_b in zip(a, b):
        streams.feed("a", frames_a, inbox)
        streams.feed("b", frames_b, inbox)
        streams.feed("c", codec.encode(m.Ping(id=3)), inbox)   # a third peer, unstreamed
    got = {message.id: message for message, error, _ in inbox.take() if error is None}
    assert np.array_equal(got[1].tensors[0], np.arange(40))
    assert np.array_equal(got[2].tensors[0], np.arange(40) / 2)
    assert isinstance(got[3], m.Ping)


def test_a_part_that_does_not_fit_fails_the_stream_once_and_the_rest_is_swallowed():
    inbox, streams = Inbox(), Streams(SMALL)
    sends = streamed(push(np.arange(64, dtype=np.float32), id=11))
    sends[2] = [sends[2][0] + b"\0\0\0\0"]            # 4 bytes too many
    feed_all(streams, "p", sends, inbox)
    (message, error, message_id), = inbox.take()
    assert message is None and message_id == 11
    assert isinstance(error, InvalidArgumentError)
    assert "PushTensor (id 11)" in str(error) and "needs 256 bytes" in str(error)
    assert len(streams) == 0
    streams.feed("p", codec.encode(m.Ping(id=12)), inbox)   # the peer is heard again
    assert [(type(msg), i) for msg, _, i in inbox.take()] == [(m.Ping, 12)]


@pytest.mark.parametrize("name, frame, match", [
    ("short-last", b"\0" * 60, "needs 256 bytes, frames have 252"),
    ("odd-size", b"\0" * 63, "not a multiple of the item size 4"),
])
def test_a_wrong_last_part_is_an_error(name, frame, match):
    inbox, streams = Inbox(), Streams(SMALL)
    sends = streamed(push(np.arange(64, dtype=np.float32)))
    sends[-1] = [frame]
    feed_all(streams, "p", sends, inbox)
    (message, error, _), = inbox.take()
    assert message is None and isinstance(error, InvalidArgumentError)
    assert match in str(error)


def test_bool_parts_are_checked_as_they_come():
    inbox, streams = Inbox(), Streams(SMALL)
    sends = streamed(push(np.ones(128, bool)))
    sends[1] = [b"\2" + sends[1][0][1:]]
    feed_all(streams, "p", sends, inbox)
    (_, error, _), = inbox.take()
    assert "bool bytes must be 0 or 1" in str(error)


def test_a_multipart_in_the_middle_fails_the_stream_and_is_decoded_itself():
    inbox, streams = Inbox(), Streams(SMALL)
    sends = streamed(push(np.arange(64, dtype=np.float32), id=21))
    streams.feed("p", sends[0], inbox)
    streams.feed("p", sends[1], inbox)
    streams.feed("p", codec.encode(push(np.arange(3.0), id=22), SMALL), inbox)
    (_, error, first), (message, no_error, second) = inbox.take()
    assert first == 21 and "cut short: 3 more part messages" in str(error)
    assert second == 22 and no_error is None and np.array_equal(message.tensors[0], [0, 1, 2])
    assert len(streams) == 0


@pytest.mark.parametrize("name, edit, extra, match", [
    ("count-mismatch", lambda h: h.update(stream=3), [], "have 4 parts, the header says 3"),
    ("extra-frame", lambda h: None, [b"x"], "header comes alone"),
    ("bad-descriptor", lambda h: h["tensors"][0].update(dtype=">c8"), [], "not allowed on the wire"),
    ("bad-body", lambda h: h["body"].update(extra=1), [], "body fields must be"),
])
def test_a_bad_stream_header_is_one_error_and_its_parts_are_swallowed(name, edit, extra, match):
    inbox, streams = Inbox(), Streams(SMALL)
    sends = streamed(push(np.arange(64, dtype=np.float32), id=31))
    header = msgpack.unpackb(sends[0][0])
    edit(header)
    streams.feed("p", [msgpack.packb(header), *extra], inbox)
    feed_all(streams, "p", sends[1:header[codec.STREAM_KEY] + 1], inbox)
    (message, error, message_id), = inbox.take()
    assert message is None and message_id == 31 and match in str(error)
    assert len(streams) == 0


@pytest.mark.parametrize("count", [0, -1, "4", 2.0, None])
def test_a_stream_count_that_is_not_a_positive_int_is_refused(count):
    inbox, streams = Inbox(), Streams(SMALL)
    header = msgpack.unpackb(streamed(push(np.arange(64, dtype=np.float32), id=41))[0][0])
    header[codec.STREAM_KEY] = count
    streams.feed("p", [msgpack.packb(header)], inbox)
    (_, error, message_id), = inbox.take()
    assert message_id == 41 and "count of part messages" in str(error)
    assert len(streams) == 0


def test_a_message_without_tensors_cannot_be_streamed():
    inbox, streams = Inbox(), Streams(SMALL)
    header = msgpack.unpackb(codec.encode(m.Ping(id=51))[0])
    header[codec.STREAM_KEY] = 1
    streams.feed("p", [msgpack.packb(header)], inbox)
    streams.feed("p", [b"swallowed"], inbox)
    (_, error, message_id), = inbox.take()
    assert message_id == 51 and "carries no tensors" in str(error)


def test_decode_refuses_a_stream_header_and_names_the_reassembler():
    header = streamed(push(np.arange(64, dtype=np.float32)))[0]
    with pytest.raises(InvalidArgumentError, match="is streamed: its 4 parts follow"):
        codec.decode(header)


def test_an_idle_stream_is_dropped_with_a_deadline_error_addressed_to_its_own_peer():
    clock, expired, opened = Clock(100.0), [], []
    inbox, streams = Inbox(), Streams(SMALL, idle_seconds=10.0, clock=clock,
                                      on_expired=lambda *got: expired.append(got),
                                      on_open=lambda: opened.append(clock.now))
    sends = streamed(push(np.arange(64, dtype=np.float32), id=61))
    streams.feed("p", sends[0], inbox)
    assert opened == [100.0]
    clock.now = 105.0
    streams.feed("p", sends[1], inbox)
    clock.now = 114.0
    streams.feed("q", codec.encode(m.Ping(id=62)), inbox)   # 9 s idle: kept
    assert len(streams) == 1 and expired == []
    clock.now = 116.0
    streams.feed("q", codec.encode(m.Ping(id=63)), inbox)   # 11 s idle: dropped
    assert [i for _, _, i in inbox.take()] == [62, 63]      # q hears nothing of p's stream
    [(peer, error, message_id)] = expired
    assert (peer, message_id) == ("p", 61)
    assert isinstance(error, DeadlineExceededError) and "3 part messages" in str(error)
    assert len(streams) == 0


def test_sweep_drops_an_idle_stream_when_nothing_else_arrives():
    """A timer's sweep: the socket may receive nothing more after a peer died mid-stream."""
    clock, expired = Clock(0.0), []
    streams = Streams(SMALL, idle_seconds=10.0, clock=clock, on_expired=lambda *got: expired.append(got))
    inbox = Inbox()
    streams.feed(b"peer", streamed(push(np.arange(64, dtype=np.float32), id=81))[0], inbox)
    clock.now = 9.9
    streams.sweep()
    assert len(streams) == 1 and expired == []
    clock.now = 10.0
    streams.sweep()
    assert len(streams) == 0 and [(p, i) for p, _, i in expired] == [(b"peer", 81)]
    streams.sweep()   # nothing open: nothing happens
    assert len(expired) == 1 and inbox.take() == []


def test_drop_reports_open_streams_once():
    inbox, streams = Inbox(), Streams(SMALL)
    streams.feed("p", streamed(push(np.arange(64, dtype=np.float32), id=71))[0], inbox)
    streams.drop(InvalidArgumentError("gone"), inbox)
    assert [(i, str(e)) for _, e, i in inbox.take()] == [(71, "gone")]
    streams.drop(InvalidArgumentError("again"), inbox)
    assert inbox.take() == [] and len(streams) == 0


def test_fuzz_random_and_cut_streams_never_raise_only_deliver_typed_errors():
    rng = random.Random(1234)
    good = [streamed(push(a, id=i + 1)) for i, a in enumerate(ARRAYS)]
    for trial in range(300):
        clock = Clock()
        inbox, streams = Inbox(), Streams(SMALL, idle_seconds=5.0, clock=clock)
        for _ in range(rng.randint(1, 12)):
            sends = [list(frames) for frames in rng.choice(good)]
            action = rng.randrange(5)
            if action == 0:        # cut short
                sends = sends[:rng.randint(1, len(sends))]
            elif action == 1:      # a part replaced by random bytes of random length
                k = rng.randrange(len(sends))
                sends[k] = [rng.randbytes(rng.randint(0, 300))]
            elif action == 2:      # a byte flipped anywhere
                k = rng.randrange(len(sends))
                frame = bytearray(sends[k][0])
                if frame:
                    frame[rng.randrange(len(frame))] ^= 1 << rng.randrange(8)
                sends[k] = [bytes(frame), *sends[k][1:]]
            elif action == 3:      # random multipart garbage
                sends = [[rng.randbytes(rng.randint(0, 40)) for _ in range(rng.randint(1, 3))]]
            for frames in sends:
                clock.now += rng.choice([0.0, 0.5, 6.0])
                streams.feed(rng.choice("pq"), frames, inbox)
        for message, error, message_id in inbox.take():
            assert (message is None) != (error is None)
            if error is not None:
                assert isinstance(error, (InvalidArgumentError, DeadlineExceededError)), error
            assert type(message_id) is int

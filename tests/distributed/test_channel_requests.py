"""Channel.request deadlines: one timer at the earliest deadline stands for every request in
flight. A request nobody answers fails on time with a typed error, also when it is shorter
than one already waiting; a request given up on drops its late reply."""

import asyncio
import math
import time

import pytest
import zmq

from zmtf.distributed.channel import Channel
from zmtf.framework.errors import DeadlineExceededError
from zmtf.testing import free_tcp_ports
from zmtf.wire import codec
from zmtf.wire import messages as m


@pytest.fixture
def peer():
    """A raw ROUTER on tcp://127.0.0.1 that the test answers by hand. Yields (context, socket,
    endpoint)."""
    context = zmq.Context()
    (port,) = free_tcp_ports(1)
    sock = context.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(f"tcp://127.0.0.1:{port}")
    yield context, sock, f"tcp://127.0.0.1:{port}"
    sock.close(0)
    context.destroy(linger=0)


async def next_request(sock):
    """(identity, request id) of the next request the peer receives."""
    for _ in range(500):
        try:
            identity, header = sock.recv_multipart(zmq.NOBLOCK)
        except zmq.Again:
            await asyncio.sleep(0.01)
            continue
        return identity, codec.decode([header]).id
    raise AssertionError("no request arrived")


def answer(sock, identity, request_id):
    sock.send_multipart([identity, *codec.encode(m.Pong(id=request_id, task="peer", incarnation=0))])


async def connected(channel, sock):
    """The channel's first call waits for the connection; answer it."""
    ping = asyncio.ensure_future(channel.call(m.Ping(id=0), 5.0))
    answer(sock, *(await next_request(sock)))
    assert (await ping).task == "peer"


async def test_an_unanswered_request_fails_on_time_and_the_next_one_is_answered(peer):
    context, sock, endpoint = peer
    channel = Channel(context, endpoint, asyncio.get_running_loop(), peer="/job:ps/task:0")
    try:
        await connected(channel, sock)
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError, match=r"no reply from /job:ps/task:0 .* \(Ping\)"):
            await channel.request(m.Ping(id=0), 0.2)
        assert 0.15 < time.monotonic() - started < 3.0
        late = await next_request(sock)
        answer(sock, *late)   # the expired request's reply arrives late: dropped
        again = channel.request(m.Ping(id=0), 5.0, unwrap=lambda pong: pong.task)
        answer(sock, *(await next_request(sock)))
        assert await again == "peer"
    finally:
        channel.close()


async def test_a_short_request_expires_while_a_longer_one_still_waits(peer):
    context, sock, endpoint = peer
    channel = Channel(context, endpoint, asyncio.get_running_loop())
    try:
        await connected(channel, sock)
        long = channel.request(m.Ping(id=0), 30.0)
        first = await next_request(sock)
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError):
            await channel.request(m.Ping(id=0), 0.2)
        assert time.monotonic() - started < 3.0   # not held back by the 30 s timer
        assert not long.done()
        answer(sock, *first)
        assert (await long).task == "peer"
    finally:
        channel.close()


async def test_a_cancelled_request_ignores_its_reply_and_leaves_no_timer_behind(peer):
    context, sock, endpoint = peer
    channel = Channel(context, endpoint, asyncio.get_running_loop())
    try:
        await connected(channel, sock)
        given_up = channel.request(m.Ping(id=0), 0.3)
        request = await next_request(sock)
        given_up.cancel()
        answer(sock, *request)
        await asyncio.sleep(0.5)   # its reply came, then its deadline passed: both ignored
        assert given_up.cancelled()
        assert channel._deadline_timer.at == math.inf   # nothing left to wait for: no timer
        again = channel.request(m.Ping(id=0), 5.0)
        answer(sock, *(await next_request(sock)))
        assert (await again).task == "peer"
    finally:
        channel.close()

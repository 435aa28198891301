"""A reply that stops mid-stream (its server hung mid-send) fails the sync Session's call
after streams.IDLE_SECONDS with DeadlineExceededError, instead of waiting out the call's
own deadline (an hour for run())."""

import asyncio
import threading
import time

import numpy as np
import pytest
import zmq

from zmtf.distributed.blocking import BlockingChannel
from zmtf.framework.errors import DeadlineExceededError
from zmtf.testing import free_tcp_ports
from zmtf.wire import codec, streams
from zmtf.wire import messages as m


@pytest.fixture
def stalling_server(monkeypatch):
    """A raw ROUTER on a thread that answers one request with the header and two parts of
    a 5 MiB reply, then nothing; streams.IDLE_SECONDS is 0.5. Yields (context, endpoint)."""
    monkeypatch.setattr(streams, "IDLE_SECONDS", 0.5)
    context = zmq.Context()
    (port,) = free_tcp_ports(1)
    server = context.socket(zmq.ROUTER)
    server.setsockopt(zmq.LINGER, 0)
    server.bind(f"tcp://127.0.0.1:{port}")

    def serve_half_a_stream():
        identity, header = server.recv_multipart()
        reply = m.RunStepResult(id=codec.decode([header]).id,
                                tensors=[np.zeros(5 << 18, np.float32)])
        for frames in codec.encode_messages(reply)[:3]:
            server.send_multipart([identity, *frames])

    thread = threading.Thread(target=serve_half_a_stream)
    thread.start()
    yield context, f"tcp://127.0.0.1:{port}"
    thread.join(5)
    server.close(0)
    context.destroy(linger=0)


def test_a_reply_stalled_mid_stream_fails_a_blocking_call_after_the_idle_time(stalling_server):
    context, endpoint = stalling_server
    channel = BlockingChannel(context, endpoint)
    try:
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="3 part messages did not come"):
            channel.call(m.Ping(id=0), 30.0)
        assert time.monotonic() - started < 10
    finally:
        channel.close()


async def test_a_reply_stalled_mid_stream_fails_an_async_call_on_the_channels_timer(stalling_server):
    """The asyncio Channel's own timer drops the stalled stream: nothing else arrives."""
    from zmtf.distributed.channel import Channel

    context, endpoint = stalling_server
    channel = Channel(context, endpoint, asyncio.get_running_loop())
    try:
        started = time.monotonic()
        with pytest.raises(DeadlineExceededError, match="3 part messages did not come"):
            await channel.call(m.Ping(id=0), 30.0)
        assert time.monotonic() - started < 10
    finally:
        channel.close()

"""A reply the codec cannot encode (an object array of non-bytes) must fail its request with a
typed error: before, the Listener raised inside its callback and the caller waited forever."""

import asyncio

import numpy as np
import pytest
import zmq

from zmtf.distributed.blocking import BlockingChannel
from zmtf.distributed.loop_thread import LoopThread
from zmtf.distributed.listener import Listener
from zmtf.framework.errors import InvalidArgumentError
from zmtf.testing import free_tcp_ports
from zmtf.wire import messages as m


@pytest.fixture
def listener_with(request):
    """A tcp Listener on its own loop thread whose handler answers every Ping with ``reply``."""
    context, loop_thread = zmq.Context(), LoopThread("test-listener")
    (port,) = free_tcp_ports(1)

    def start(reply):
        async def make():
            return Listener(context, f"tcp://127.0.0.1:{port}", lambda msg, _sender, _peer: reply(msg.id),
                            asyncio.get_running_loop())
        return loop_thread.call(make(), 10)

    yield start, f"tcp://127.0.0.1:{port}", context
    loop_thread.stop()
    context.destroy(linger=0)


def test_a_reply_that_cannot_be_encoded_becomes_a_typed_error(listener_with):
    start, endpoint, context = listener_with
    unsendable = np.empty(1, dtype=object)
    unsendable[0] = object()
    replies = iter([m.RunStepResult(id=0, tensors=[unsendable]),
                    m.RunStepResult(id=0, tensors=[np.arange(3.0)])])
    start(lambda request_id: m.RunStepResult(id=request_id, tensors=next(replies).tensors))
    channel = BlockingChannel(context, endpoint)
    try:
        with pytest.raises(InvalidArgumentError):
            channel.call(m.Ping(id=0), 5.0)
        np.testing.assert_array_equal(channel.call(m.Ping(id=0), 5.0).tensors[0], np.arange(3.0))
    finally:
        channel.close()

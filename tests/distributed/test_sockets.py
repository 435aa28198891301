"""The socket side of connection state: libzmq's monitor events, read from real sockets on
tcp://127.0.0.1, mean what ``wire.connection_state`` says they mean."""

import pytest
import zmq

from zmtf.distributed.sockets import (
    close_monitor, configure_socket, next_monitor_event, recv_frames, send_frames,
)
from zmtf.wire import connection_state as cs


@pytest.fixture
def context():
    ctx = zmq.Context()
    yield ctx
    ctx.destroy(linger=0)


def test_the_event_numbers_written_out_in_wire_are_libzmqs():
    assert (cs.EVENT_CONNECTED, cs.EVENT_DISCONNECTED, cs.EVENT_HANDSHAKE_SUCCEEDED,
            cs.EVENT_HANDSHAKE_FAILED_AUTH, cs.EVENT_HANDSHAKE_FAILED_PROTOCOL,
            cs.EVENT_HANDSHAKE_FAILED_NO_DETAIL) == (
        zmq.EVENT_CONNECTED, zmq.EVENT_DISCONNECTED, zmq.EVENT_HANDSHAKE_SUCCEEDED,
        zmq.EVENT_HANDSHAKE_FAILED_AUTH, zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL,
        zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL)


def next_event(monitor, timeout_ms=5000):
    assert monitor.poll(timeout_ms), "no monitor event"
    return next_monitor_event(monitor)


def test_a_client_sees_its_connection_come_up_and_drop(context):
    server = context.socket(zmq.ROUTER)
    configure_socket(server)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    client = context.socket(zmq.DEALER)
    configure_socket(client)
    monitor = client.get_monitor_socket(cs.CLIENT_EVENTS)
    try:
        assert next_monitor_event(monitor) is None   # nothing yet: None, not zmq.Again
        client.connect(f"tcp://127.0.0.1:{port}")
        connection = cs.ClientConnection("server", f"tcp://127.0.0.1:{port}", secured=False)
        event = next_event(monitor)
        assert event.kind == cs.EVENT_CONNECTED
        assert event.endpoint == f"tcp://127.0.0.1:{port}".encode()
        assert connection.on_event(event.kind) is None and connection.connected
        send_frames(client, [b"ping"], blocking=True)   # a round trip: the handshake is done
        assert server.poll(5000)
        send_frames(server, recv_frames(server), blocking=True)
        assert client.poll(5000) and recv_frames(client)[0].bytes == b"ping"
        server.close(linger=0)
        kinds, change = [], None
        while change is None:   # a HANDSHAKE_SUCCEEDED may come first, and changes nothing
            kinds.append(next_event(monitor).kind)
            change = connection.on_event(kinds[-1])
        assert change == cs.Lost() and kinds[-1] == cs.EVENT_DISCONNECTED
    finally:
        close_monitor(client, monitor)
        client.close(linger=0)


def test_a_server_learns_which_peer_a_closed_connection_carried(context):
    """A ROUTER's message tells its connection's descriptor (SRCFD), and the monitor's
    DISCONNECTED event gives the same descriptor: that is what PeerTable relies on."""
    server = context.socket(zmq.ROUTER)
    configure_socket(server)
    monitor = server.get_monitor_socket(cs.SERVER_EVENTS)
    port = server.bind_to_random_port("tcp://127.0.0.1")
    client = context.socket(zmq.DEALER)
    configure_socket(client)
    client.setsockopt(zmq.IDENTITY, b"client-1")
    client.connect(f"tcp://127.0.0.1:{port}")
    try:
        send_frames(client, [b"hello"], blocking=True)
        assert server.poll(5000)
        identity, body = recv_frames(server)
        assert (identity.bytes, body.bytes) == (b"client-1", b"hello")
        peers = cs.PeerTable()
        peers.seen(identity.bytes, identity.get(zmq.SRCFD))
        client.close(linger=0)
        assert peers.on_event(next_event(monitor)) == b"client-1"
    finally:
        close_monitor(server, monitor)
        server.close(linger=0)

"""ConnectionGuard's hands: it ends a connection through a descriptor that libzmq owns, never
closes that descriptor, and leaves alone a descriptor that now carries another connection."""

import os
import socket

from zmtf.distributed.connection_guard import ConnectionGuard, fingerprint, shut_down
from zmtf.wire.connection_state import EVENT_ACCEPTED, EVENT_DISCONNECTED, MonitorEvent


def accepted_pair(listener):
    client = socket.create_connection(listener.getsockname(), timeout=5)
    served, _ = listener.accept()
    return client, served


def test_a_connection_is_shut_down_only_while_it_is_the_one_accepted():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client, served = accepted_pair(listener)
        other, other_served = accepted_pair(listener)
        try:
            fd = served.fileno()
            assert not shut_down(fd, fingerprint(other_served.fileno()))   # another connection
            assert not shut_down(fd, None)
            client.settimeout(0.2)
            try:
                client.recv(1)
                raise AssertionError("the connection was ended")
            except socket.timeout:
                pass
            assert shut_down(fd, fingerprint(fd))
            client.settimeout(5)
            assert client.recv(1) == b""      # the peer sees the end of the stream
            os.fstat(fd)                      # and the descriptor is still its owner's to close
        finally:
            for sock in (client, served, other, other_served):
                sock.close()


def test_the_guard_ends_the_connections_beyond_its_cap():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        pairs = [accepted_pair(listener) for _ in range(3)]
        guard = ConnectionGuard("tcp://test", 2)
        try:
            for _, served in pairs:
                guard.on_event(MonitorEvent(EVENT_ACCEPTED, served.fileno(), b""))
                guard.sent(pairs[0][1].fileno())   # the first one is at work
            assert len(guard.cap) == 2
            idle = pairs[1][0]
            idle.settimeout(5)
            assert idle.recv(1) == b""   # the oldest that sent nothing makes room
            guard.on_event(MonitorEvent(EVENT_DISCONNECTED, pairs[1][1].fileno(), b""))
            assert len(guard.cap) == 2
        finally:
            for client, served in pairs:
                client.close()
                served.close()

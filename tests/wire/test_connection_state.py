"""Connection state: what monitor events mean for a client and for a server. No sockets."""

import struct

import pytest

from zmtf.wire.connection_state import (
    AT_CAP_HINT, CLIENT_EVENTS, EVENT_CONNECTED, EVENT_DISCONNECTED, EVENT_HANDSHAKE_FAILED_AUTH,
    EVENT_HANDSHAKE_FAILED_NO_DETAIL, EVENT_HANDSHAKE_FAILED_PROTOCOL, EVENT_HANDSHAKE_SUCCEEDED,
    HANDSHAKE_EVENTS, ClientConnection, Lost, MonitorEvent, PeerTable, Refused,
    decode_monitor_event, refusal,
)


def frames(kind, value, endpoint=b"tcp://127.0.0.1:5555"):
    return [struct.pack("=Hi", kind, value), endpoint]


def test_a_monitor_message_decodes_to_its_event_value_and_endpoint():
    assert decode_monitor_event(frames(EVENT_DISCONNECTED, 17)) == MonitorEvent(
        EVENT_DISCONNECTED, 17, b"tcp://127.0.0.1:5555")
    assert decode_monitor_event([memoryview(struct.pack("=Hi", EVENT_CONNECTED, -1)), b""]) == \
        MonitorEvent(EVENT_CONNECTED, -1, b"")


@pytest.mark.parametrize("bad", [
    [],
    [b"\x01\x00\x05\x00\x00\x00"],                     # no endpoint frame
    [b"\x01\x00\x05\x00\x00", b"tcp://x"],             # header one byte short
    [b"\x01\x00\x05\x00\x00\x00\x00", b"tcp://x"],     # header one byte long
    [b"\x01\x00\x05\x00\x00\x00", b"tcp://x", b""],    # a third frame
])
def test_anything_but_two_frames_with_a_six_byte_header_is_refused(bad):
    with pytest.raises(ValueError, match="not a zmq monitor event"):
        decode_monitor_event(bad)


def test_the_client_mask_is_connection_loss_and_the_handshake_outcomes():
    assert HANDSHAKE_EVENTS == (
        EVENT_HANDSHAKE_SUCCEEDED | EVENT_HANDSHAKE_FAILED_AUTH
        | EVENT_HANDSHAKE_FAILED_PROTOCOL | EVENT_HANDSHAKE_FAILED_NO_DETAIL)
    assert CLIENT_EVENTS == EVENT_CONNECTED | EVENT_DISCONNECTED | HANDSHAKE_EVENTS


def test_a_plaintext_client_is_up_at_connected_and_lost_at_disconnected():
    connection = ClientConnection("/job:ps/task:0", "tcp://h:1", secured=False)
    assert not connection.connected
    assert connection.on_event(EVENT_DISCONNECTED) is None   # never up: nothing was waiting on it
    assert connection.on_event(EVENT_CONNECTED) is None
    assert connection.connected
    assert connection.on_event(EVENT_DISCONNECTED) == Lost()
    assert not connection.connected
    assert connection.on_event(EVENT_DISCONNECTED) is None   # reported once


def test_a_curve_client_is_up_only_once_its_handshake_succeeded():
    connection = ClientConnection("w", "tcp://h:1", secured=True)
    assert connection.on_event(EVENT_CONNECTED) is None
    assert not connection.connected                          # the server may still refuse the key
    assert connection.on_event(EVENT_HANDSHAKE_SUCCEEDED) is None
    assert connection.connected and connection.refused is None


def test_a_refused_key_fails_every_call_with_the_reason_until_a_handshake_succeeds():
    connection = ClientConnection("w", "tcp://h:1", secured=True)
    change = connection.on_event(EVENT_HANDSHAKE_FAILED_AUTH)
    assert change == Refused(
        "w at tcp://h:1 refused this process's CURVE key: it is not among the server's "
        "authorized keys (ZMTF_CURVE_KEY must name a credential that the cluster's key "
        "directory admits: python -m zmtf.keys add-client DIR NAME)")
    assert (connection.connected, connection.refused) == (False, change.reason)
    assert connection.on_event(EVENT_HANDSHAKE_SUCCEEDED) is None
    assert (connection.connected, connection.refused) == (True, None)


def test_an_inproc_client_starts_connected():
    assert ClientConnection("w", "inproc://w", secured=False, connected=True).connected


@pytest.mark.parametrize("kind", [EVENT_HANDSHAKE_FAILED_PROTOCOL,
                                  EVENT_HANDSHAKE_FAILED_NO_DETAIL])
def test_a_failed_handshake_says_which_side_lacks_the_key(kind):
    # a handshake cut with no detail may also be the server's connection cap: that is said too
    hint = AT_CAP_HINT if kind == EVENT_HANDSHAKE_FAILED_NO_DETAIL else ""
    assert refusal(kind, "w", "tcp://h:1", secured=True) == (
        "the CURVE handshake with w at tcp://h:1 failed: the server does not use the same "
        "cluster key (or speaks plaintext); check ZMTF_CURVE_KEY here and --curve-dir there" + hint)
    assert refusal(kind, "w", "tcp://h:1", secured=False) == (
        "the handshake with w at tcp://h:1 failed: the server requires CURVE; set "
        "ZMTF_CURVE_KEY to this client's credential file" + hint)


def test_a_closed_connection_names_the_peer_that_came_by_it():
    peers = PeerTable()
    peers.seen(b"client-a", 7)
    peers.seen(b"client-b", 8)
    assert peers.fd_of == {b"client-a": 7, b"client-b": 8}
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, 7, b"")) == b"client-a"
    assert peers.fd_of == {b"client-b": 8}
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, 7, b"")) is None   # already gone
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, 99, b"")) is None  # never seen


def test_a_descriptor_reused_by_a_new_connection_names_the_new_peer():
    peers = PeerTable()
    peers.seen(b"old", 7)
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, 7, b"")) == b"old"
    peers.seen(b"new", 7)   # the shell reads the monitor before recording a new peer
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, 7, b"")) == b"new"


def test_a_peer_that_reconnected_is_not_gone_when_its_old_connection_closes():
    peers = PeerTable()
    peers.seen(b"client", 7)
    peers.seen(b"client", 9)   # the same routing id on a new connection (ROUTER_HANDOVER)
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, 7, b"")) is None
    assert peers.fd_of == {b"client": 9}
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, 9, b"")) == b"client"


def test_events_other_than_a_disconnect_leave_the_peers_alone():
    peers = PeerTable()
    peers.seen(b"client", 7)
    for kind in (EVENT_CONNECTED, EVENT_HANDSHAKE_SUCCEEDED, EVENT_HANDSHAKE_FAILED_AUTH):
        assert peers.on_event(MonitorEvent(kind, 7, b"")) is None
    assert peers.fd_of == {b"client": 7}


def test_a_plaintext_client_that_lost_its_server_is_back_only_once_a_handshake_succeeded():
    """A stopped process's kernel still accepts connections (CONNECTED), but nothing answers
    the greeting (HANDSHAKE_FAILED_NO_DETAIL after the handshake limit): that peer is not back,
    and its silence is not a refusal."""
    connection = ClientConnection("/job:ps/task:0", "tcp://h:1", secured=False)
    assert connection.on_event(EVENT_CONNECTED) is None and connection.connected
    assert connection.on_event(EVENT_DISCONNECTED) == Lost()
    assert connection.on_event(EVENT_CONNECTED) is None
    assert not connection.connected
    assert connection.on_event(EVENT_HANDSHAKE_FAILED_NO_DETAIL) is None
    assert (connection.connected, connection.refused) == (False, None)
    assert connection.on_event(EVENT_HANDSHAKE_SUCCEEDED) is None
    assert connection.connected
    assert connection.on_event(EVENT_HANDSHAKE_FAILED_NO_DETAIL) == Lost()


def test_a_lost_connection_is_given_the_liveness_bound_to_come_back():
    connection = ClientConnection("/job:ps/task:0", "tcp://h:1", secured=False)
    assert connection.on_event(EVENT_CONNECTED, now=1.0) is None and connection.lost_at is None
    assert connection.gone_for(now=2.0, liveness=5.0, deadline=100.0) is None   # never lost
    assert connection.on_event(EVENT_DISCONNECTED, now=10.0) == Lost()
    assert connection.lost_at == 10.0
    assert connection.gone_for(now=12.0, liveness=5.0, deadline=100.0) is None   # still waiting
    assert connection.gone_for(now=15.5, liveness=5.0, deadline=100.0) == 5.5    # bound passed
    assert connection.gone_for(now=11.0, liveness=5.0, deadline=11.0) == 1.0     # deadline first
    assert connection.on_event(EVENT_HANDSHAKE_SUCCEEDED, now=13.0) is None      # back again
    assert connection.lost_at is None
    assert connection.gone_for(now=20.0, liveness=5.0, deadline=100.0) is None


def test_a_peer_whose_descriptor_libzmq_does_not_know_is_recorded_once_and_not_watched():
    """libzmq gives no SRCFD for a ZMTP 1.0/2.0 peer's messages: the table must not make the
    shell ask again per message (that raised, and logged, on every message)."""
    peers = PeerTable()
    peers.seen(b"old-protocol", None)
    assert b"old-protocol" in peers.fd_of
    assert peers.on_event(MonitorEvent(EVENT_DISCONNECTED, -1, b"")) is None

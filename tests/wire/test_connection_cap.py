"""ConnectionCap: which connections a capped listener closes (pure: descriptors in and out)."""

from zmtf.wire.connection_cap import ConnectionCap, cap_for


def test_under_the_cap_nothing_is_closed():
    cap = ConnectionCap(3)
    assert [cap.opened(fd) for fd in (5, 6, 7)] == [None, None, None]
    assert len(cap) == 3


def test_a_newcomer_replaces_the_oldest_connection_that_sent_nothing():
    cap = ConnectionCap(2)
    cap.opened(5)
    cap.opened(6)
    assert cap.opened(7) == 5   # 5 never sent a message: it goes, the newcomer stays
    assert cap.opened(8) == 6
    assert cap.opened(9) == 7
    assert len(cap) == 2 and cap.closed_count == 3


def test_connections_that_sent_a_message_are_never_closed():
    cap = ConnectionCap(3)
    for fd in (5, 6, 7):
        cap.opened(fd)
    cap.sent(5)
    cap.sent(7)
    assert cap.opened(8) == 6   # the only idle one
    assert cap.opened(9) == 8
    cap.sent(9)
    assert cap.opened(10) == 10   # every other one is at work: the newcomer is closed at once
    cap.sent(10)   # (a message from a connection being closed changes nothing)
    assert len(cap) == 3


def test_a_closed_connection_frees_its_place_and_a_named_one_counts_no_more():
    cap = ConnectionCap(1)
    cap.opened(5)
    cap.sent(5)
    assert cap.opened(6) == 6
    assert len(cap) == 1        # 6 is being closed: not counted while its close is on the way
    cap.closed(6)
    cap.closed(5)
    assert len(cap) == 0
    assert cap.opened(7) is None


def test_a_reused_descriptor_is_a_new_connection():
    cap = ConnectionCap(2)
    cap.opened(5)
    cap.sent(5)
    cap.opened(5)   # its close was not seen: the newer connection takes its place
    assert len(cap) == 1
    assert cap.opened(6) is None
    assert cap.opened(7) == 5   # the reused descriptor is idle again, and the oldest


def test_no_cap():
    cap = ConnectionCap(0)
    assert all(cap.opened(fd) is None for fd in range(5000))


def test_the_cap_keeps_half_the_descriptors_for_everything_else():
    assert cap_for(512, 1024) == 512
    assert cap_for(512, 256) == 128
    assert cap_for(512, None) == 512
    assert cap_for(0, 256) == 0
    assert cap_for(512, 1) == 1

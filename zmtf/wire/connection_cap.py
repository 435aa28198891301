"""A cap on the connections one listener keeps open, decided from its monitor's events.

libzmq accepts every connection it can and has no cap of its own: 1,100 idle connections
fill a 1024-descriptor table, and then its I/O thread spins on accept() failing (EMFILE)
while no new client gets in. The shell closes the connections this table names, so that a
listener holds at most ``limit`` of them and descriptors stay free for files and peers.

Whom to close, when a new connection makes one too many: the oldest connection that has
not sent a message yet (an idle flood, a slow-loris greeting) and has had its ``grace`` to
send one; if there is none, the new connection itself, at once. So a flood of idle
connections cannot lock clients out: each newcomer replaces an idle one, and a client that
sends its request within the grace is never the one closed. Connections that have sent a
message (peers and clients at work) are never closed here. Pure: descriptors and
monotonic seconds in, descriptors to close out.
"""

from __future__ import annotations

from collections import OrderedDict

#: a new connection's time to send its first message before a newer one may replace it:
#: a client on a LAN connects, shakes hands and sends in a few milliseconds
DEFAULT_GRACE_SECS = 0.25


def cap_for(max_connections: int, descriptors: int | None) -> int:
    """The cap a listener keeps: ``max_connections``, but at most half of what the process
    may open (``descriptors``, the soft ``ulimit -n``; None: no limit), so that files, peers
    and zmq itself keep the other half. 0: no cap."""
    if not max_connections or descriptors is None:
        return max_connections
    return max(1, min(max_connections, descriptors // 2))


class ConnectionCap:
    """The open connections of one listener, by descriptor, and which to close."""

    __slots__ = ("limit", "grace", "_quiet", "_busy", "_closing", "closed_count")

    def __init__(self, limit: int, grace: float = DEFAULT_GRACE_SECS) -> None:
        self.limit = limit   # 0: no cap
        self.grace = grace
        self._quiet: OrderedDict[int, float] = OrderedDict()   # fd -> opened at; no message yet
        self._busy: set[int] = set()      # fds that sent a message
        self._closing: set[int] = set()   # fds this table named, until their close is seen
        self.closed_count = 0             # connections named for closing, in all

    def __len__(self) -> int:
        """Open connections that count against the cap (not those being closed)."""
        return len(self._quiet) + len(self._busy)

    def opened(self, fd: int, now: float) -> int | None:
        """A connection was accepted on ``fd``; the descriptor to close now, if any."""
        self._forget(fd)   # a reused descriptor: its old connection's close went unseen
        self._quiet[fd] = now
        if not self.limit or len(self) <= self.limit:
            return None
        victim = fd
        oldest, opened_at = next(iter(self._quiet.items()))
        if oldest != fd and now - opened_at >= self.grace:
            victim = oldest
        del self._quiet[victim]
        self._closing.add(victim)
        self.closed_count += 1
        return victim

    def sent(self, fd: int) -> None:
        """A message came by ``fd``: its connection is at work, never closed here."""
        if self._quiet.pop(fd, None) is not None:
            self._busy.add(fd)

    def closed(self, fd: int) -> None:
        """The connection on ``fd`` closed (whoever closed it)."""
        self._forget(fd)

    def _forget(self, fd: int) -> None:
        self._quiet.pop(fd, None)
        self._busy.discard(fd)
        self._closing.discard(fd)


__all__ = ["ConnectionCap", "DEFAULT_GRACE_SECS", "cap_for"]

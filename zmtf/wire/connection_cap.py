"""A cap on the connections one listener keeps open, decided from its monitor's events.

libzmq accepts every connection it can and has no cap of its own: 1,100 idle connections
fill a 1024-descriptor table, and then its I/O thread spins on accept() failing (EMFILE)
while no new client gets in. The shell closes the connections this table names, so that a
listener holds at most ``limit`` of them and descriptors stay free for files and peers.

Whom to close, when a new connection makes one too many: the oldest connection that has
not sent a message yet (an idle flood, a slow-loris greeting); if every other one has, the
new connection itself, at once. So a flood of idle connections cannot lock clients out:
each newcomer replaces the oldest idle one, and a client is closed only if the cap's worth
of newer connections arrived before its first request did (a client on a LAN sends it
within milliseconds). Connections that have sent a message (peers and clients at work) are
never closed here. Pure: events about descriptors in, descriptors to close out.
"""

from __future__ import annotations

from collections import OrderedDict

def cap_for(max_connections: int, descriptors: int | None) -> int:
    """The cap a listener keeps: ``max_connections``, but at most half of what the process
    may open (``descriptors``, the soft ``ulimit -n``; None: no limit), so that files, peers
    and zmq itself keep the other half. 0: no cap."""
    if not max_connections or descriptors is None:
        return max_connections
    return max(1, min(max_connections, descriptors // 2))


class ConnectionCap:
    """The open connections of one listener, by descriptor, and which to close."""

    __slots__ = ("limit", "_quiet", "_busy", "_closing", "closed_count")

    def __init__(self, limit: int) -> None:
        self.limit = limit   # 0: no cap
        self._quiet: OrderedDict[int, None] = OrderedDict()   # fds with no message yet, oldest first
        self._busy: set[int] = set()      # fds that sent a message
        self._closing: set[int] = set()   # fds this table named, until their close is seen
        self.closed_count = 0             # connections named for closing, in all

    def __len__(self) -> int:
        """Open connections that count against the cap (not those being closed)."""
        return len(self._quiet) + len(self._busy)

    def opened(self, fd: int) -> int | None:
        """A connection was accepted on ``fd``; the descriptor to close now, if any."""
        self._forget(fd)   # a reused descriptor: its old connection's close went unseen
        self._quiet[fd] = None
        if not self.limit or len(self) <= self.limit:
            return None
        victim = next(iter(self._quiet))   # the oldest idle one (the new one if it is alone)
        del self._quiet[victim]
        self._closing.add(victim)
        self.closed_count += 1
        return victim

    def sent(self, fd: int) -> None:
        """A message came by ``fd``: its connection is at work, never closed here."""
        if fd in self._quiet:
            del self._quiet[fd]
            self._busy.add(fd)

    def closed(self, fd: int) -> None:
        """The connection on ``fd`` closed (whoever closed it)."""
        self._forget(fd)

    def _forget(self, fd: int) -> None:
        self._quiet.pop(fd, None)
        self._busy.discard(fd)
        self._closing.discard(fd)


__all__ = ["ConnectionCap", "cap_for"]

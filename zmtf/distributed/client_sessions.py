"""The sessions of clients that are gone: closed once the client's connections closed and did
not come back within the liveness bound, not an hour later (``session_gc``'s idle timer).

A client process names itself in its sockets' routing ids (``sockets.identify_client``), and
keeps them across reconnects. The master records which process created each session
(CreateSession's peer). When a peer's connection closes, its process gets the liveness bound
to come back: then, if none of its sockets is connected (none sent a message since, and none
can be sent one: ``Listener.reachable``), its sessions are closed as a CloseSession would.
A client that is merely idle keeps its connection (ZeroMQ's heartbeats keep it) and its
sessions; one whose connection blinked and came back keeps them too.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Iterable

from zmtf.distributed.sockets import client_of


BATCH_SECONDS = 0.2   # clients gone within this of each other are collected in one pass


class ClientSessions:
    """Sessions by the client process that created them; ``gone(peer)`` starts the wait."""

    def __init__(self, loop: asyncio.AbstractEventLoop, grace: float,
                 connected_peers: Callable[[], Iterable[bytes]],
                 reachable: Callable[[bytes], bool],
                 collect: Callable[[list[str], str], Any]) -> None:
        self.grace = grace
        self._loop = loop
        self._connected_peers = connected_peers   # peers whose connection is known open
        self._reachable = reachable               # whether a peer can be sent a message now
        self._collect = collect                   # (handles, why): closes them
        self._sessions: dict[bytes, set[str]] = {}   # client process -> its open sessions
        self._owner: dict[str, bytes] = {}           # session -> its client process
        self._routes: dict[bytes, set[bytes]] = {}   # client process -> its peers seen
        self._checks: dict[bytes, asyncio.TimerHandle] = {}
        self._batch: list[str] = []   # sessions to collect at the next flush

    def created(self, peer: bytes, handle: str) -> None:
        """``peer`` created session ``handle``."""
        client = client_of(peer)
        if client is None:   # not a zmtf client (no routing id of ours): idleness only
            return
        self._sessions.setdefault(client, set()).add(handle)
        self._routes.setdefault(client, set()).add(peer)
        self._owner[handle] = client

    def closed(self, handle: str) -> None:
        """Session ``handle`` was closed (by its client, or collected)."""
        client = self._owner.pop(handle, None)
        if client is None:
            return
        handles = self._sessions.get(client)
        if handles is not None:
            handles.discard(handle)
            if not handles:
                self._forget(client)

    def gone(self, peer: bytes) -> None:
        """``peer``'s connection closed: its process has the grace period to come back."""
        client = client_of(peer)
        if client is None or client not in self._sessions:
            return
        self._routes[client].add(peer)
        if client not in self._checks:
            self._checks[client] = self._loop.call_later(self.grace, self._check, client)

    def stop(self) -> None:
        for timer in self._checks.values():
            timer.cancel()
        self._checks.clear()

    def _check(self, client: bytes) -> None:
        self._checks.pop(client, None)
        if client not in self._sessions:
            return
        if any(client_of(p) == client for p in self._connected_peers()):
            return   # it sent a message since: back (a later close starts a new wait)
        if any(self._reachable(peer) for peer in self._routes[client]):
            return   # reconnected, idle
        handles = sorted(self._sessions[client])
        self._forget(client)
        for handle in handles:
            self._owner.pop(handle, None)
        if not self._batch:   # clients that left together are collected together: one trim
            self._loop.call_later(BATCH_SECONDS, self._flush)
        self._batch.extend(handles)

    def _flush(self) -> None:
        handles, self._batch = self._batch, []
        self._collect(handles, f"its client's connection closed and did not come back within "
                               f"{self.grace:g} s (the liveness bound)")

    def _forget(self, client: bytes) -> None:
        self._sessions.pop(client, None)
        self._routes.pop(client, None)
        timer = self._checks.pop(client, None)
        if timer is not None:
            timer.cancel()

"""Keeps a listener's open connections under its cap (``wire.connection_cap`` decides whom).

libzmq owns the connections' sockets and offers no way to refuse one, so the guard shuts
a connection down through its descriptor, which the ROUTER's monitor names: libzmq then
sees the end of the stream and closes it as if the peer had gone (ACCEPTED and DISCONNECTED
events carry the descriptor). A descriptor is shut down only if it still carries the
connection it was accepted for (same local and remote address): the number could have been
reused by a newer connection whose close is not read yet. No zmq here: the listener feeds
the monitor's events in; closing is a plain ``shutdown(2)``.
"""

from __future__ import annotations

import errno
import logging
import os
import resource
import socket
import time
from typing import Any

from zmtf.wire.connection_cap import ConnectionCap, cap_for
from zmtf.wire.connection_state import (
    EVENT_ACCEPT_FAILED, EVENT_ACCEPTED, EVENT_DISCONNECTED, MonitorEvent,
)

log = logging.getLogger("zmtf.transport")

#: at most one line per listener this often about connections closed or not accepted
LOG_INTERVAL_SECS = 10.0
_clock = time.monotonic


def _addresses(sock: socket.socket) -> tuple[Any, Any]:
    return sock.getsockname(), sock.getpeername()


def _borrow(fd: int) -> socket.socket | None:
    """A socket object over libzmq's descriptor, to ``detach`` (never close) after use."""
    try:
        return socket.socket(fileno=fd)
    except OSError:   # closed meanwhile, or no longer a socket
        return None


def fingerprint(fd: int) -> tuple[Any, Any] | None:
    """The local and remote address of the connection on ``fd``; None if it is gone."""
    sock = _borrow(fd)
    if sock is None:
        return None
    try:
        return _addresses(sock)
    except OSError:
        return None
    finally:
        sock.detach()


def shut_down(fd: int, expected: tuple[Any, Any] | None) -> bool:
    """End the connection on ``fd`` if it is still the one ``expected`` names."""
    sock = _borrow(fd)
    if sock is None:
        return False
    try:
        if expected is None or _addresses(sock) != expected:
            return False
        sock.shutdown(socket.SHUT_RDWR)
        return True
    except OSError:
        return False
    finally:
        sock.detach()


def descriptor_limit() -> int | None:
    """The process's soft limit of open descriptors; None when unlimited."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


class ConnectionGuard:
    """The connections of one listener: closes those beyond its cap, logs what it did."""

    __slots__ = ("endpoint", "cap", "_addresses", "_closed_logged", "_failed", "_errno",
                 "_logged_at")

    def __init__(self, endpoint: str, max_connections: int) -> None:
        self.endpoint = endpoint
        descriptors = descriptor_limit()
        limit = cap_for(max_connections, descriptors)
        if limit < max_connections:
            log.warning("%s: keeps at most %d connections, not max_connections=%d: this process "
                        "may open only %d descriptors (ulimit -n)", endpoint, limit,
                        max_connections, descriptors)
        self.cap = ConnectionCap(limit)
        self._addresses: dict[int, tuple[Any, Any] | None] = {}   # fd -> what it was accepted for
        self._closed_logged = 0   # cap.closed_count when the last line was logged
        self._failed = 0          # accept() failures since the last line
        self._errno = 0           # the last one's errno
        self._logged_at = -LOG_INTERVAL_SECS

    def on_event(self, event: MonitorEvent) -> None:
        """One event of the listener's monitor (in order: a descriptor's close comes before
        a new connection that reuses it)."""
        kind, fd = event.kind, event.value
        if kind == EVENT_ACCEPTED:
            self._addresses[fd] = fingerprint(fd)
            victim = self.cap.opened(fd)
            if victim is not None:
                shut_down(victim, self._addresses.pop(victim, None))
                self._log()
        elif kind == EVENT_DISCONNECTED:
            self.cap.closed(fd)
            self._addresses.pop(fd, None)
        elif kind == EVENT_ACCEPT_FAILED:
            self._failed, self._errno = self._failed + 1, fd   # its value is the errno
            self._log()

    def sent(self, fd: int) -> None:
        """A message came by ``fd``: that connection is at work."""
        self.cap.sent(fd)

    def _log(self) -> None:
        now = _clock()
        if now - self._logged_at < LOG_INTERVAL_SECS:
            return
        closed = self.cap.closed_count - self._closed_logged
        if closed:
            log.warning("%s: closed %d connection(s) beyond its cap of %d open connections "
                        "(max_connections), idle ones first; raise --max-connections (and ulimit "
                        "-n, twice as high) for a cluster with more peers", self.endpoint, closed,
                        self.cap.limit)
        if self._failed:
            error = self._errno
            cause = ("the process is out of file descriptors (ulimit -n); lower "
                     "--max-connections" if error in (errno.EMFILE, errno.ENFILE)
                     else os.strerror(error))
            log.warning("%s: could not accept %d connection(s): %s", self.endpoint, self._failed,
                        cause)
        self._closed_logged, self._failed, self._logged_at = self.cap.closed_count, 0, now


__all__ = ["ConnectionGuard", "LOG_INTERVAL_SECS", "descriptor_limit", "fingerprint", "shut_down"]

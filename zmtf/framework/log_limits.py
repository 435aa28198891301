"""Log lines an attacker can neither flood nor forge.

Whatever a peer sends can reach a log line: a tensor key, a node name, an error that quotes
them. ``clip`` makes such a field safe to log: repr-style escaped (no newline, no ANSI escape
can start a forged line or recolour a terminal) and cut to ``MAX_FIELD_CHARS``, so a 1 MB key
costs ~250 bytes of log, not 1 MB.

``PeerLogLimiter`` logs a peer-caused error once per (peer, kind) per interval and counts the
rest; the next line of that kind says how many were held back ("... and 1,234 more like it from
<peer> in the last 60 s"). Peers are many (every reconnect can be a new identity), so at most
``max_peers`` peers per kind hold an entry of their own (one whose interval has passed makes
room for a newcomer); the others share one entry, so the table, and the log, stay bounded
however many peers come. Pure Python; thread-safe.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable, Hashable

MAX_FIELD_CHARS = 200          # a field from the network, as logged
DEFAULT_INTERVAL_SECS = 60.0   # one line per (peer, kind) this often
DEFAULT_MAX_PEERS = 20         # peers per kind with a line of their own, per interval
OTHER_PEERS = "other peers"


def clip(value: Any, limit: int = MAX_FIELD_CHARS) -> str:
    """``value`` as a log-safe field: ``repr`` of a str (quotes, escapes), else of its str,
    cut to ``limit`` characters with the length it had (``'kkk'... (1000000 chars)``)."""
    text = value if isinstance(value, str) else str(value) if not isinstance(value, bytes) else value
    shown = repr(text[:limit])
    if not shown.isascii():   # repr keeps printable non-ASCII: escape it too (no bidi tricks)
        shown = shown.encode("ascii", "backslashreplace").decode("ascii")
    if len(text) > limit:
        return f"{shown}... ({len(text)} chars)"
    return shown


def clip_list(values: Any, limit: int = MAX_FIELD_CHARS, items: int = 8) -> str:
    """A list of network fields: the first ``items``, each clipped, and how many more."""
    try:
        values = list(values)
    except TypeError:
        return clip(values, limit)
    shown = ", ".join(clip(v, limit) for v in values[:items])
    more = f", ... ({len(values) - items} more)" if len(values) > items else ""
    return f"[{shown}{more}]"


class PeerLogLimiter:
    """One line per (peer, kind) per ``interval`` on ``logger``; the rest are counted."""

    def __init__(self, logger: logging.Logger, interval: float = DEFAULT_INTERVAL_SECS,
                 max_peers: int = DEFAULT_MAX_PEERS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self.interval = interval
        self._max_peers = max_peers
        self._clock = clock
        self._lock = threading.Lock()
        # (peer, kind) -> [when its last line went out, the lines held back since]
        self._seen: dict[tuple[Hashable, str], list[float]] = {}
        self._peers: dict[str, int] = {}   # kind -> peers with an entry of their own

    def log(self, level: int, peer: Hashable, kind: str, msg: str, *args: Any,
            exc_info: Any = None) -> bool:
        """Log ``msg % args`` unless a line of this (peer, kind) went out in this interval
        (then count it). True when the line was written. ``peer`` is logged clipped (None:
        the line is about no peer in particular)."""
        if not self._logger.isEnabledFor(level):
            return False
        now = self._clock()
        with self._lock:
            key = (peer, kind)
            entry = self._seen.get(key)
            if entry is None:
                if self._peers.get(kind, 0) >= self._max_peers:
                    self._evict(kind, now)
                if self._peers.get(kind, 0) >= self._max_peers:
                    key = (OTHER_PEERS, kind)
                    entry = self._seen.get(key)
                else:
                    self._peers[kind] = self._peers.get(kind, 0) + 1
            if entry is not None and now - entry[0] < self.interval:
                entry[1] += 1
                return False
            held = int(entry[1]) if entry is not None else 0
            self._seen[key] = [now, 0]
        who = (OTHER_PEERS if key[0] == OTHER_PEERS else "any peer" if peer is None
               else clip(peer, 64))
        suffix = (f" (... and {held:,} more like it from {who} in the last "
                  f"{self.interval:g} s)" if held else "")
        self._logger.log(level, msg + "%s", *args, suffix, exc_info=exc_info)
        return True

    def _evict(self, kind: str, now: float) -> None:
        """Make room: this kind's peers whose interval has passed lose their entry (and the
        count held back since, if they never come back: the table stays bounded)."""
        for key in [k for k, v in self._seen.items()
                    if k[1] == kind and k[0] != OTHER_PEERS and now - v[0] >= self.interval]:
            del self._seen[key]
            self._peers[kind] -= 1


__all__ = ["MAX_FIELD_CHARS", "PeerLogLimiter", "clip", "clip_list"]

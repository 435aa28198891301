"""Request-id bookkeeping for a caller: which replies are awaited, and until when.

Pure and clock-free, in the style of h11: the shell passes ``now`` in, and gets back the
calls that timed out. A reply whose id is unknown (never sent, already answered, or
expired) matches nothing: ``match`` returns None and the shell drops the reply.

    calls = Calls()
    rid = calls.new_call(deadline=now + 30.0, context=future)
    ...                                   # send the request with id=rid
    future = calls.match(reply.id)        # None: a late or stray reply
    for rid, future in calls.expire(time.monotonic()): ...   # DeadlineExceededError
"""

from __future__ import annotations

import heapq
import math
from typing import Any

ID_LIMIT = 2**63  # ids are non-negative int64 on the wire


class Calls:
    """Pending calls by id: ``new_call`` -> id, ``match(id)`` -> context, ``expire(now)``."""

    def __init__(self, first_id: int = 1) -> None:
        if not 0 < first_id < ID_LIMIT:
            raise ValueError(f"first_id must be in (0, 2**63), got {first_id}")
        self._next_id = first_id
        self._seq = 0
        #: id -> (seq, deadline, context); seq tells a live heap entry from a stale one.
        self._pending: dict[int, tuple[int, float, Any]] = {}
        #: (deadline, seq, id), lazily cleaned: entries of answered calls stay until popped.
        self._deadlines: list[tuple[float, int, int]] = []

    def new_call(self, deadline: float, context: Any) -> int:
        """Register a call that expires at ``deadline`` (math.inf: never); return its id.

        ``context`` is whatever the shell needs on the reply (a future, a callback); it
        must not be None, since ``match`` answers None for 'no such call'.
        """
        if context is None:
            raise ValueError("a call's context must not be None")
        if math.isnan(deadline):
            raise ValueError("a call's deadline must be a number or math.inf, not NaN")
        call_id = self._take_id()
        self._seq += 1
        self._pending[call_id] = (self._seq, deadline, context)
        heapq.heappush(self._deadlines, (deadline, self._seq, call_id))
        return call_id

    def match(self, reply_id: Any) -> Any | None:
        """The context of the call ``reply_id`` answers, now finished; None if there is none."""
        if type(reply_id) is not int:
            return None
        entry = self._pending.pop(reply_id, None)
        if entry is None:
            return None
        if len(self._deadlines) > 2 * len(self._pending) + 64:
            self._compact()
        return entry[2]

    def expire(self, now: float) -> list[tuple[int, Any]]:
        """Remove and return (id, context) of each call whose deadline is <= now, earliest first."""
        expired = []
        while self._deadlines and self._deadlines[0][0] <= now:
            _, seq, call_id = heapq.heappop(self._deadlines)
            entry = self._pending.get(call_id)
            if entry is not None and entry[0] == seq:
                del self._pending[call_id]
                expired.append((call_id, entry[2]))
        return expired

    def next_deadline(self) -> float:
        """The earliest deadline of a pending call (math.inf if none): when to call expire."""
        while self._deadlines:
            deadline, seq, call_id = self._deadlines[0]
            entry = self._pending.get(call_id)
            if entry is not None and entry[0] == seq:
                return deadline
            heapq.heappop(self._deadlines)
        return math.inf

    def pending(self) -> int:
        """How many calls await a reply."""
        return len(self._pending)

    def _take_id(self) -> int:
        """The next id not in use; ids wrap around below 2**63, skipping 0 and pending ids."""
        if len(self._pending) >= ID_LIMIT - 1:  # pragma: no cover (2**63 calls in flight)
            raise RuntimeError("no free call id")
        while True:
            call_id = self._next_id
            self._next_id = call_id + 1 if call_id + 1 < ID_LIMIT else 1
            if call_id not in self._pending:
                return call_id

    def _compact(self) -> None:
        live = {(seq, call_id) for call_id, (seq, _, _) in self._pending.items()}
        self._deadlines = [e for e in self._deadlines if (e[1], e[2]) in live]
        heapq.heapify(self._deadlines)


__all__ = ["Calls", "ID_LIMIT"]

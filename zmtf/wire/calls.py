"""Request ids and deadlines for a caller: which replies are awaited, and until when.

Pure and clock-free, in the style of h11: the shell passes ``now`` in and gets back the
calls that timed out. A reply whose id is unknown (never sent, already answered, or
expired) matches nothing: ``match`` returns None and the shell drops the reply.

    calls = Calls()
    rid = calls.new_call(deadline=now + 30.0, context=future)
    ...                                   # send the request with id=rid
    future = calls.match(reply.id)        # None: a late or stray reply
    for rid, future in calls.expire(time.monotonic()): ...   # DeadlineExceededError

Every caller of zmtf keeps its calls here: the asyncio ``Channel``, the sync
``BlockingChannel``, and the step deadlines of a worker (``distributed.reactor.Deadlines``).

Deadlines sit in a heap that is cleaned lazily. Nearly every call is answered long before
its deadline, so answering one must cost only a dict removal; its heap entry stays until it
reaches the top or until stale entries outnumber live ones (then the heap is rebuilt, as
asyncio does with its cancelled timers). The shell keeps one timer, at ``next_deadline()``.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Any, Iterator

ID_LIMIT = 2**63  # ids are non-negative int64 on the wire
_STALE_MIN = 64   # stale heap entries tolerated before the heap is rebuilt


def call_ids(first_id: int = 1) -> Iterator[int]:
    """Ids ``first_id, first_id + 1, ...``, wrapping below 2**63 to 1 (0 is never an id).

    Built from itertools only, so one iterator may be shared by threads: each ``next`` is
    a single step under the GIL, and no two threads get the same id.
    """
    if not 0 < first_id < ID_LIMIT:
        raise ValueError(f"first_id must be in (0, 2**63), got {first_id}")
    again = itertools.chain.from_iterable(itertools.repeat(range(1, ID_LIMIT)))
    return itertools.chain(range(first_id, ID_LIMIT), again)


class Calls:
    """Pending calls by id: ``new_call`` -> id, ``match(id)`` -> context, ``expire(now)``.

    ``ids`` is where new ids come from (default ``call_ids(first_id)``). The channels of one
    process share one source, so that no two of them send the same id: a server keys a
    running step by its session and request id, and one session may be used from several
    threads, each with its own channel.
    """

    __slots__ = ("_ids", "_seq", "_pending", "_deadlines")

    def __init__(self, first_id: int = 1, ids: Iterator[int] | None = None) -> None:
        self._ids = call_ids(first_id) if ids is None else ids
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
        if deadline != deadline:   # NaN: it would never compare as due
            raise ValueError("a call's deadline must be a number or math.inf, not NaN")
        pending = self._pending
        call_id = next(self._ids)
        while call_id in pending:   # wrapped around onto a call still waiting
            call_id = next(self._ids)
        seq = self._seq = self._seq + 1
        pending[call_id] = (seq, deadline, context)
        heapq.heappush(self._deadlines, (deadline, seq, call_id))
        return call_id

    def match(self, reply_id: Any) -> Any | None:
        """The context of the call ``reply_id`` answers, now finished; None if there is none.

        Also how a call is forgotten early (its caller gave up): the reply, if any, then
        matches nothing."""
        if type(reply_id) is not int:
            return None
        entry = self._pending.pop(reply_id, None)
        if entry is None:
            return None
        if len(self._deadlines) > 2 * len(self._pending) + _STALE_MIN:
            self._compact()
        return entry[2]

    def expire(self, now: float) -> list[tuple[int, Any]]:
        """Remove and return (id, context) of each call whose deadline is <= now, earliest first."""
        expired = []
        deadlines, pending = self._deadlines, self._pending
        while deadlines and deadlines[0][0] <= now:
            _, seq, call_id = heapq.heappop(deadlines)
            entry = pending.get(call_id)
            if entry is not None and entry[0] == seq:
                del pending[call_id]
                expired.append((call_id, entry[2]))
        return expired

    def next_deadline(self) -> float:
        """The earliest deadline of a pending call (math.inf if none): when to call expire."""
        deadlines, pending = self._deadlines, self._pending
        while deadlines:
            deadline, seq, call_id = deadlines[0]
            entry = pending.get(call_id)
            if entry is not None and entry[0] == seq:
                return deadline
            heapq.heappop(deadlines)
        return math.inf

    def pending(self) -> int:
        """How many calls await a reply."""
        return len(self._pending)

    def take_all(self) -> list[tuple[int, Any]]:
        """Remove and return (id, context) of every pending call, oldest first (the
        connection is gone: they all fail)."""
        taken = [(call_id, entry[2]) for call_id, entry in self._pending.items()]
        self._pending = {}
        self._deadlines = []
        return taken

    def _compact(self) -> None:
        live = {(seq, call_id) for call_id, (seq, _, _) in self._pending.items()}
        self._deadlines = [e for e in self._deadlines if (e[1], e[2]) in live]
        heapq.heapify(self._deadlines)


__all__ = ["Calls", "ID_LIMIT", "call_ids"]

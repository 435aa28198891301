"""A traced step's node times moved onto the master's clock (NTP's estimate, per RunGraph).

Each task stamps its node times with its own wall clock; across machines those differ by
whatever NTP left (milliseconds, or much more on a machine without it). A traced RunGraph
carries the four stamps NTP uses: the master's send and receive times, and the worker's
receive and send times (its ``RunGraph`` span). Assuming the request and the reply took
equally long, the worker's clock is ahead of the master's by
``offset = ((w_recv - m_sent) + (w_sent - m_recv)) / 2``, wrong by at most
``bound = ((m_recv - m_sent) - (w_sent - w_recv)) / 2`` (half the round trip less the
worker's own time: the most the two legs can differ by). The master subtracts the offset
from every time of the reply and states both on the span; the client merges every task's
stats on this one clock (``training.timeline``).
"""

from __future__ import annotations

from typing import Any

#: the span each traced RunGraph reply carries (node name; a RunStep reply: "RunStep"), and
#: the thread row of both
SPAN_NODE = "RunGraph"
STEP_SPAN_NODE = "RunStep"
SPAN_THREAD = "rpc"


def span(task: str, received: float, sent: float, node: str = SPAN_NODE) -> dict[str, Any]:
    """A server's span of one request (plain, its wall clock): from its arrival to its reply."""
    return {"node": node, "device": f"{task}/device:CPU:0", "thread": SPAN_THREAD,
            "start": received, "end": sent}


def onto_master(items: list[dict[str, Any]], sent: float, received: float,
                node: str = SPAN_NODE) -> list[dict[str, Any]]:
    """A checked reply's plain stats moved onto the caller's clock (the master's; the client's
    for a RunStep reply, ``node`` "RunStep"); its span states the offset and the bound.
    ``sent``/``received``: the caller's clock around the request. A reply without its one
    span (an older peer) is kept as is."""
    spans = [item for item in items if item["node"] == node and item["thread"] == SPAN_THREAD]
    if len(spans) != 1:
        return items
    w_recv, w_sent = spans[0]["start"], spans[0]["end"]
    offset = ((w_recv - sent) + (w_sent - received)) / 2.0
    bound = max(0.0, ((received - sent) - (w_sent - w_recv)) / 2.0)
    moved = []
    for item in items:
        item = dict(item, start=item["start"] - offset, end=item["end"] - offset)
        if item["node"] == node and item["thread"] == SPAN_THREAD:
            item["offset"], item["bound"] = offset, bound
        moved.append(item)
    return moved

"""Step setup of big graphs on a thread, off the server's event loop.

Why: parsing, planning, partitioning and binding a graph cost some 20-170 µs per node, so a
100k-node graph's first run is seconds of work. Done on the loop, the task answers no ping,
no status and no other session's step meanwhile, and ``LoopBeat`` counts its loop as stuck
(past half the liveness bound): the RunStep or RunGraph it reads next is dropped as failed
by its sender. On a thread, the loop still runs between the GIL's switches (every 5 ms).
A graph under ``OFF_LOOP_NODES`` nodes is set up on the loop: a few milliseconds, less
than what the hop and the wake-up that ends it cost in latency (bench/offload.py: ~23 µs
a hop, plus a loop iteration).

Whatever runs here must not touch the loop's own state (sockets, channels, the tables the
handlers change): callers read those on the loop before, and store the result after.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, Callable, TypeVar

T = TypeVar("T")

#: graphs with fewer nodes than this are parsed, planned and bound on the loop itself
OFF_LOOP_NODES = 200


def off_loop_for(nodes: int) -> bool:
    """Whether setting up a graph of ``nodes`` nodes goes to a thread."""
    return nodes >= OFF_LOOP_NODES


def node_count(graph: Any) -> int:
    """The nodes of a graph as it travels (a ``graph_to_dict`` dict: {"nodes": [...]}) or
    of a ``Graph``; 0 for anything else (it is checked where it is read)."""
    if isinstance(graph, dict):
        nodes = graph.get("nodes")
        return len(nodes) if isinstance(nodes, list) else 0
    operations = getattr(graph, "get_operations", None)
    return len(operations()) if operations is not None else 0


def start_off_loop(fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
    """``fn(*args)`` on the running loop's default executor: a future of its outcome (its
    exception as raised, the same typed error as inline)."""
    return asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args))


async def set_up(nodes: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``: on a thread for a graph of ``nodes`` nodes or more, else here."""
    if not off_loop_for(nodes):
        return fn(*args)
    return await start_off_loop(fn, *args)


__all__ = ["OFF_LOOP_NODES", "node_count", "off_loop_for", "set_up", "start_off_loop"]

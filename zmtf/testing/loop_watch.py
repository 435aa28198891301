"""How long an event loop went without running: the worst gap of a 1 ms heartbeat, for
tests and benchmarks that hold a client's loop to a bound (issue 30: under 20 ms)."""

from __future__ import annotations

import asyncio
import gc
import time
from typing import Any, Awaitable, Callable


async def worst_gap(start: Callable[[], Awaitable[Any]], pause_gc: bool = False) -> float:
    """The longest (seconds) the running loop went without a 1 ms heartbeat while
    ``start()`` ran. ``pause_gc``: keep the cyclic collector off meanwhile (a full
    collection of a heap with numba in it takes ~200 ms, whoever allocates)."""
    ticks: list[float] = []
    running = True

    async def heartbeat() -> None:
        while running:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.001)

    beat = asyncio.ensure_future(heartbeat())
    await asyncio.sleep(0.01)
    collecting = gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        began = time.perf_counter()
        await start()
        ended = time.perf_counter()
    finally:
        if pause_gc and collecting:
            gc.enable()
        running = False
        await beat
    points = [began, *(t for t in ticks if began <= t <= ended), ended]
    return max(b - a for a, b in zip(points, points[1:]))

"""Small helpers for asyncio futures settled by callbacks on the step path.

The step path avoids tasks and coroutines (each costs loop iterations); these keep its
future plumbing in one place: copy an outcome, or map a result.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable


def chain(source: asyncio.Future, target: asyncio.Future) -> None:
    """Copy ``source``'s outcome into ``target`` unless that was settled meanwhile."""
    if target.done():
        return
    if source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result())


def then(source: asyncio.Future, fn: Callable[[Any], Any]) -> asyncio.Future:
    """A future of ``fn(source.result())``; errors pass through, and cancelling it cancels
    ``source``."""
    target = source.get_loop().create_future()

    def settled(done: asyncio.Future) -> None:
        if target.done():
            return
        if done.cancelled():
            target.cancel()
        elif done.exception() is not None:
            target.set_exception(done.exception())
        else:
            try:
                target.set_result(fn(done.result()))
            except Exception as error:  # noqa: BLE001 - a mapping error is the outcome
                target.set_exception(error)

    if source.done():
        settled(source)   # now, not on the loop's next turn: a caller may reply at once
    else:
        source.add_done_callback(settled)
    target.add_done_callback(lambda t: source.cancel() if t.cancelled() else None)
    return target

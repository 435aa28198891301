"""Waiting for tasks that have not started yet (a cluster's tasks start in any order).

TF1's master waits for the workers a session needs and logs "CreateSession still waiting
for response from worker: ..." every 10 s. zmtf's master waits at CreateSession for the
tasks the session's graph places ops on (not those ``device_filters`` leave out), so that
their devices are known when it is placed, and again when it registers a step's
partitions, for the tasks those are on; it logs the same way which tasks it waits for and
at which addresses. The wait is bounded by the server's ``wait_for_tasks_secs`` and by the
client's deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Awaitable, Callable

from zmtf.distributed.server_options import DEFAULT_LOG_SECS
from zmtf.framework.errors import UnavailableError

log = logging.getLogger("zmtf.master")



async def wait_for_tasks(ping: Callable[[str, float], Awaitable[Any]], tasks: list[str],
                         address_of: Callable[[str], str], limit: float,
                         log_every: float = DEFAULT_LOG_SECS, what: str = "RegisterGraph") -> None:
    """Return once every task in ``tasks`` answers ``ping(task, timeout)``; log the ones still
    missing every ``log_every`` s; UnavailableError naming them after ``limit`` s.

    A ping that fails otherwise than with UnavailableError (a task that is up but slow to
    answer) counts as reached: the call that follows reports its error."""
    start = time.monotonic()
    pending = list(tasks)
    while pending:
        round_end = min(time.monotonic() + log_every, start + limit)
        wait = max(round_end - time.monotonic(), 0.001)
        replies = await asyncio.gather(*[ping(task, wait) for task in pending],
                                       return_exceptions=True)
        pending = [t for t, r in zip(pending, replies) if isinstance(r, UnavailableError)]
        if not pending:
            return
        if time.monotonic() < round_end:   # an in-process peer that is not there fails at once
            await asyncio.sleep(round_end - time.monotonic())
        waited = time.monotonic() - start
        missing = ", ".join(f"{t} at {address_of(t)}" for t in pending)
        if waited >= limit:
            raise UnavailableError(None, None, f"{what}: waited {limit:.1f} s for {missing}, which "
                                   f"did not start. Start it (python -m zmtf.server ... --job "
                                   f"... --task ...), fix its address, or wait longer "
                                   f"(--wait-for-tasks-secs)")
        log.info("%s still waiting for response from worker: %s (%.0f s so far; limit %.0f s)",
                 what, missing, waited, limit)

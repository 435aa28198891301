"""AsyncSession admission (client/admission.py): at most SLICE_RUNS runs start in a loop
turn, however long each takes; the rest go in later turns, in order; a lone run never waits."""

from __future__ import annotations

import asyncio
import time

from zmtf.client.admission import SLICE_RUNS, Admission


async def _turn() -> None:
    await asyncio.sleep(0)


async def test_slow_runs_in_one_turn_still_start_a_slice_at_a_time():
    admission = Admission(asyncio.get_running_loop())
    waiters = []
    for _ in range(3 * SLICE_RUNS + 5):   # one burst, each run's first part ~3 ms
        waiters.append(admission.admit())
        time.sleep(0.003)
    assert all(w is None for w in waiters[:SLICE_RUNS])
    queued = waiters[SLICE_RUNS:]
    assert admission.waiting() == len(queued)
    released = []
    while admission.waiting():
        await _turn()
        released.append(sum(w.done() for w in queued))
    # each turn lets SLICE_RUNS more go, the first queued first
    assert released[:3] == [SLICE_RUNS, 2 * SLICE_RUNS, 2 * SLICE_RUNS + 5]


async def test_runs_a_turn_apart_never_wait():
    admission = Admission(asyncio.get_running_loop())
    for _ in range(4 * SLICE_RUNS):
        assert admission.admit() is None
        await _turn()
    # after a burst has drained, the next turn's runs go at once again
    for _ in range(SLICE_RUNS + 3):
        admission.admit()
    while admission.waiting():
        await _turn()
    await _turn()
    assert admission.admit() is None

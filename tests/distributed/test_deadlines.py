"""Deadlines: one loop timer standing for every request's and step's deadline."""

import asyncio
import time

from zmtf.distributed.reactor import Deadlines, deadlines_for


async def test_deadlines_fire_in_order_of_time_not_of_creation():
    deadlines = Deadlines(asyncio.get_running_loop())
    fired = []
    deadlines.call_later(0.06, fired.append, "late")
    deadlines.call_later(0.02, fired.append, "early")
    deadlines.call_later(0.04, fired.append, "middle")
    await asyncio.sleep(0.15)
    assert fired == ["early", "middle", "late"]


async def test_a_cancelled_deadline_never_fires_and_the_others_still_do():
    deadlines = Deadlines(asyncio.get_running_loop())
    fired = []
    first = deadlines.call_later(0.02, fired.append, "cancelled")
    deadlines.call_later(0.04, fired.append, "kept")
    first.cancel()
    first.cancel()   # twice is harmless
    await asyncio.sleep(0.1)
    assert fired == ["kept"]


async def test_a_deadline_fires_no_earlier_than_asked():
    deadlines = Deadlines(asyncio.get_running_loop())
    done = asyncio.get_running_loop().create_future()
    started = time.monotonic()
    deadlines.call_later(0.05, lambda: done.set_result(time.monotonic() - started))
    assert await asyncio.wait_for(done, 2) >= 0.045


async def test_an_earlier_deadline_added_later_rearms_the_timer():
    deadlines = Deadlines(asyncio.get_running_loop())
    fired = []
    deadlines.call_later(10.0, fired.append, "far")
    deadlines.call_later(0.02, fired.append, "near")
    await asyncio.sleep(0.08)
    assert fired == ["near"]


async def test_cancelling_one_of_the_same_batch_from_a_callback_stops_it():
    deadlines = Deadlines(asyncio.get_running_loop())
    fired = []
    second = None

    def first() -> None:
        fired.append("first")
        second.cancel()

    deadlines.call_later(0.02, first)
    second = deadlines.call_later(0.02, fired.append, "second")
    await asyncio.sleep(0.08)
    assert fired == ["first"]


async def test_many_cancelled_deadlines_do_not_pile_up_in_the_heap():
    deadlines = Deadlines(asyncio.get_running_loop())
    for _ in range(5000):   # a busy server: every request answered long before its deadline
        deadlines.call_later(3600.0, lambda: None).cancel()
    assert len(deadlines._calls._deadlines) < 200
    fired = []
    deadlines.call_later(0.02, fired.append, "still works")
    await asyncio.sleep(0.08)
    assert fired == ["still works"]


async def test_one_deadlines_object_per_loop():
    loop = asyncio.get_running_loop()
    assert deadlines_for(loop) is deadlines_for(loop)


async def test_a_failing_callback_does_not_stop_the_others_due_with_it(caplog):
    deadlines = Deadlines(asyncio.get_running_loop())
    fired = []
    deadlines.call_later(0.02, lambda: 1 / 0)
    deadlines.call_later(0.02, fired.append, "still fired")
    await asyncio.sleep(0.08)
    assert fired == ["still fired"]
    assert "a deadline's callback failed" in caplog.text

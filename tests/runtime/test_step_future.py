"""StepFuture: the executor's Condition-free concurrent.futures.Future."""

import asyncio
import concurrent.futures
import threading
import time

import pytest

from zmtf.runtime.step_future import StepFuture


def test_result_set_later_from_another_thread_wakes_a_blocked_waiter():
    future = StepFuture()
    threading.Timer(0.05, future.set_result, args=([1, 2],)).start()
    assert future.result(timeout=5) == [1, 2]
    assert future.done() and not future.cancelled() and future.exception() is None


def test_result_times_out_while_pending():
    future = StepFuture()
    started = time.monotonic()
    with pytest.raises(concurrent.futures.TimeoutError):
        future.result(timeout=0.05)
    assert time.monotonic() - started >= 0.04
    assert not future.done()


def test_exception_is_raised_by_result_and_returned_by_exception():
    future = StepFuture()
    error = ValueError("boom")
    future.set_exception(error)
    assert future.exception() is error
    with pytest.raises(ValueError, match="boom"):
        future.result()


def test_callbacks_run_once_settled_and_at_once_when_added_after():
    future = StepFuture()
    seen = []
    future.add_done_callback(lambda f: seen.append(("early", f.result())))
    future.set_result(7)
    future.add_done_callback(lambda f: seen.append(("late", f.result())))
    assert seen == [("early", 7), ("late", 7)]


def test_a_failing_callback_does_not_stop_the_others(caplog):
    future = StepFuture()
    seen = []
    future.add_done_callback(lambda f: 1 / 0)
    future.add_done_callback(lambda f: seen.append(f.result()))
    future.set_result("ok")
    assert seen == ["ok"]
    assert "exception calling callback" in caplog.text


def test_settling_twice_raises_invalid_state_and_keeps_the_first_outcome():
    future = StepFuture()
    future.set_result(1)
    with pytest.raises(concurrent.futures.InvalidStateError):
        future.set_result(2)
    with pytest.raises(concurrent.futures.InvalidStateError):
        future.set_exception(RuntimeError("late"))
    assert future.result() == 1


def test_cancel_only_while_pending():
    pending, finished = StepFuture(), StepFuture()
    finished.set_result(0)
    assert pending.cancel() and pending.cancelled() and pending.done()
    assert not finished.cancel() and not finished.cancelled()
    with pytest.raises(concurrent.futures.CancelledError):
        pending.result()
    with pytest.raises(concurrent.futures.InvalidStateError):
        pending.set_result(1)


async def test_asyncio_wrap_future_sees_result_and_error_from_a_thread():
    ok, bad = StepFuture(), StepFuture()
    threading.Timer(0.02, ok.set_result, args=("value",)).start()
    threading.Timer(0.02, bad.set_exception, args=(KeyError("k"),)).start()
    assert await asyncio.wrap_future(ok) == "value"
    with pytest.raises(KeyError):
        await asyncio.wrap_future(bad)


async def test_cancelling_the_asyncio_side_cancels_the_step_future():
    future = StepFuture()
    wrapped = asyncio.wrap_future(future)
    wrapped.cancel()
    await asyncio.sleep(0)
    assert future.cancelled()


def test_outcome_reads_a_settled_step_in_one_tuple():
    assert StepFuture().outcome() is None   # still running
    done = StepFuture()
    done.set_result([1, 2])
    assert done.outcome() == (False, [1, 2], None)
    failed = StepFuture()
    error = ValueError("boom")
    failed.set_exception(error)
    assert failed.outcome() == (False, None, error)
    cancelled = StepFuture()
    cancelled.cancel()
    assert cancelled.outcome() == (True, None, None)

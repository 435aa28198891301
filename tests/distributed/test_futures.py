"""Deferred: the step path's future whose callbacks run at once."""

import asyncio
import concurrent.futures

import pytest

from zmtf.distributed.futures import Deferred, chain, failed, outcome, then
from zmtf.runtime.step_future import StepFuture


def test_callbacks_run_synchronously_on_settle_and_at_once_when_done():
    seen = []
    outcome = Deferred()
    outcome.add_done_callback(lambda d: seen.append(("first", d.result())))
    assert seen == []
    outcome.set_result(3)
    assert seen == [("first", 3)]          # no loop turn needed
    outcome.add_done_callback(lambda d: seen.append(("late", d.result())))
    assert seen[-1] == ("late", 3)


def test_a_failing_callback_does_not_stop_the_others(caplog):
    seen = []
    outcome = Deferred()
    outcome.add_done_callback(lambda d: 1 / 0)
    outcome.add_done_callback(lambda d: seen.append(d.result()))
    outcome.set_result("ok")
    assert seen == ["ok"]
    assert "callback of a Deferred failed" in caplog.text


def test_states_and_errors():
    pending = Deferred()
    with pytest.raises(asyncio.InvalidStateError):
        pending.result()
    error = failed(ValueError("bad"))
    assert error.done() and not error.cancelled()
    assert isinstance(error.exception(), ValueError)
    with pytest.raises(ValueError):
        error.result()
    with pytest.raises(asyncio.InvalidStateError):
        error.set_result(1)               # settled once only
    cancelled = Deferred()
    assert cancelled.cancel() and cancelled.cancelled() and not cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        cancelled.result()


def test_the_failure_hook_runs_first_and_only_when_it_fails_or_is_cancelled(caplog):
    seen = []

    def hook(error):
        seen.append(type(error).__name__)

    ok = Deferred(on_failure=hook)
    ok.add_done_callback(lambda d: seen.append("callback"))
    ok.set_result(1)
    assert seen == ["callback"] and ok.settled
    seen.clear()
    bad = Deferred(on_failure=hook)
    bad.add_done_callback(lambda d: seen.append("callback"))
    bad.set_exception(ValueError("x"))
    assert seen == ["ValueError", "callback"]
    seen.clear()
    gone = Deferred(on_failure=hook)
    gone.add_done_callback(lambda d: seen.append("callback"))
    assert gone.cancel() and seen == ["CancelledError", "callback"]

    def broken(error):
        raise RuntimeError("hook failed")

    loud = Deferred(on_failure=broken)
    loud.add_done_callback(lambda d: seen.append("still called"))
    loud.set_exception(ValueError("y"))
    assert seen[-1] == "still called" and "failure hook" in caplog.text


def test_then_maps_results_passes_errors_and_cancels_its_source():
    source = Deferred()
    mapped = then(source, lambda v: v * 2)
    source.set_result(21)
    assert mapped.result() == 42
    bad = then(failed(KeyError("k")), lambda v: v)
    assert isinstance(bad.exception(), KeyError)
    src = Deferred()
    raising = then(src, lambda v: 1 / 0)
    src.set_result(1)
    assert isinstance(raising.exception(), ZeroDivisionError)
    upstream = Deferred()
    then(upstream, lambda v: v).cancel()
    assert upstream.cancelled()


async def test_cancelling_a_deferred_cancels_its_upstream_only_when_cancelled():
    task_like = asyncio.get_running_loop().create_future()
    reply = Deferred(upstream=task_like)
    seen = []
    reply.add_done_callback(lambda d: seen.append((d.cancelled(), task_like.cancelled())))
    assert reply.cancel() and task_like.cancelled()
    assert seen == [(True, False)]   # the reply's callbacks run first, then the upstream goes
    assert not reply.cancel()        # once
    kept = Deferred()
    answered = Deferred(upstream=kept)
    answered.set_result(1)
    assert not answered.cancel() and not kept.done()   # a settled outcome cancels nothing
    failing = Deferred()
    Deferred(upstream=failing).set_exception(KeyError("k"))
    assert not failing.done()


def test_await_and_cancel_through_await():
    async def main():
        outcome = Deferred()
        asyncio.get_running_loop().call_soon(outcome.set_result, "value")
        assert await outcome == "value"
        assert await outcome == "value"      # awaiting a settled one returns at once

        never = Deferred()
        task = asyncio.ensure_future(_await(never))
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert never.cancelled()              # the awaiting task's cancel reaches the step

        target = asyncio.get_running_loop().create_future()
        chain(failed(RuntimeError("x")), target)
        with pytest.raises(RuntimeError):
            await target

    async def _await(d):
        return await d

    asyncio.run(main())


async def test_outcome_reads_deferreds_and_futures_alike():
    done, error = Deferred(), failed(KeyError("k"))
    done.set_result([1])
    cancelled = Deferred()
    cancelled.cancel()
    future = asyncio.get_running_loop().create_future()
    future.set_exception(ValueError("v"))
    step = StepFuture()
    step.set_result([2])
    assert outcome(done) == (False, [1], None)
    assert outcome(cancelled) == (True, None, None)
    assert outcome(error)[:2] == (False, None) and isinstance(outcome(error)[2], KeyError)
    assert outcome(future)[:2] == (False, None) and isinstance(outcome(future)[2], ValueError)
    assert outcome(step) == (False, [2], None)
    future = asyncio.get_running_loop().create_future()
    future.cancel()
    assert outcome(future) == (True, None, None)
    with pytest.raises(asyncio.InvalidStateError):
        outcome(Deferred())


def test_outcome_reads_a_settled_step_future_and_its_callbacks_all_run(caplog):
    done = StepFuture()
    seen = []
    done.add_done_callback(lambda f: 1 / 0)   # logged; the next callback still runs
    done.add_done_callback(lambda f: seen.append(outcome(f)))
    done.set_result([1, 2])
    assert seen == [(False, [1, 2], None)]
    assert "exception calling callback" in caplog.text
    failed_run = StepFuture()
    failed_run.set_exception(KeyError("k"))
    cancelled, value, error = outcome(failed_run)
    assert not cancelled and value is None and isinstance(error, KeyError)
    stopped = StepFuture()
    stopped.cancel()
    assert outcome(stopped) == (True, None, None)


def test_a_settled_step_future_reads_without_waiting():
    ok, bad, pending = StepFuture(), StepFuture(), StepFuture()
    ok.set_result("v")
    bad.set_exception(ValueError("x"))
    assert ok.result() == "v" and ok.exception() is None
    assert isinstance(bad.exception(), ValueError)
    with pytest.raises(ValueError):
        bad.result()
    with pytest.raises(concurrent.futures.TimeoutError):
        pending.result(timeout=0.01)
    pending.cancel()
    with pytest.raises(concurrent.futures.CancelledError):
        pending.result()


def test_resolved_is_a_settled_deferred_that_calls_back_at_once():
    from zmtf.distributed.futures import Deferred, outcome, resolved

    done = resolved([1, 2])
    assert type(done) is Deferred and done.settled and done.done() and not done.cancelled()
    assert done.result() == [1, 2] and done.exception() is None
    assert outcome(done) == (False, [1, 2], None)
    seen = []
    done.add_done_callback(seen.append)
    assert seen == [done]
    assert not done.cancel()

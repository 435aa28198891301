"""MasterStep: one RunStep on the master, from its partitions' start to its one outcome.

``start`` starts every partition of the step's setup (remote ones first: their requests are
on the wire while this task's runs); each partition's outcome comes to
``on_partition_done``, which gathers the fetched values, feeds reply-carried values into this
task's rendezvous, starts the master's deferred partition once the others have replied, and
``settle``s the step when the last is in. The first error fails the step, and
``on_failure`` aborts it on every task. A task that restarted and lost its graphs
(``GraphNotRegisteredError``) gets its partition registered again, once per step.

Everything here runs on the event loop's thread, in callbacks (no task per step): a
partition that ran through at its start reports at once, a remote one when its reply is
decoded.
"""

from __future__ import annotations

import asyncio
import functools
import time
from typing import Any, Callable, Iterator, Protocol

import numpy as np

from zmtf.distributed.futures import Deferred, chain, failed, outcome
from zmtf.distributed.master_session import MasterSession, StepSetup
from zmtf.framework.errors import DeadlineExceededError, GraphNotRegisteredError
from zmtf.placement.partition import TaskPartition


class StepHost(Protocol):
    """What a step needs of its master (``MasterService``): step ids, partition starts and
    re-registration, outputs taken in, and the abort of a failed step on every task."""

    @property
    def step_ids(self) -> Iterator[int]: ...

    def start_partition(self, session: MasterSession, setup: StepSetup, part: TaskPartition,
                        step_id: int, feed_values: dict[str, np.ndarray], timeout: float,
                        trace: list | None = None, received: dict | None = None) -> Deferred: ...

    async def register_again(self, session: MasterSession, setup: StepSetup,
                             part: TaskPartition) -> None: ...

    def take_outputs(self, part: TaskPartition, outputs: list[np.ndarray], step_id: int,
                     results: dict[str, np.ndarray], deferred: bool) -> None: ...

    def abort(self, setup: StepSetup, step_id: int, error: BaseException) -> None: ...

    def blame(self, setup: StepSetup, error: BaseException) -> BaseException: ...

    def step_failed(self, session: str, step_id: int, error: BaseException,
                    at_fault: str | None) -> None: ...


class MasterStep:
    """One step of one session; ``outcome`` is the Deferred the caller holds: it settles with
    the fetched values (or ``finish(values)``) or the step's first error, and cancelling it,
    or failing it from outside, aborts the step."""

    __slots__ = ("master", "session", "fetches", "feed_values", "timeout", "deadline", "trace", "finish",
                 "step_id", "outcome", "setup", "results", "running", "remaining", "retried",
                 "_setting_up", "at_fault")

    def __init__(self, master: StepHost, session: MasterSession, fetches: list[str],
                 feed_values: dict[str, np.ndarray], timeout: float, trace: list | None,
                 finish: Callable[[list], Any] | None) -> None:
        self.master = master
        self.session = session
        self.fetches = fetches
        self.feed_values = feed_values
        self.timeout = timeout
        # every partition gets what is left of the budget when it starts (a signature's first
        # run registers its partitions first): no task runs it past the client's deadline
        self.deadline = time.monotonic() + timeout
        self.trace = trace
        self.finish = finish
        self.step_id = next(master.step_ids)
        # The Deferred holds on_failure only until it settles: no cycle outlives the step.
        self.outcome = Deferred(on_failure=self.on_failure)
        self.setup: StepSetup | None = None
        self.results: dict[str, np.ndarray] = {}   # client fetches, and a deferred part's inputs
        self.running: list[Any] = []               # partitions (and re-registrations) pending
        self.remaining = 0                         # partitions whose outputs are not in yet
        self.retried: set[str] = set()             # tasks whose partition was registered again
        self._setting_up: asyncio.Future | None = None

    # ---- starting ------------------------------------------------------------------------
    def start_after(self, setting_up: asyncio.Future) -> None:
        """Start once the signature's partitions are planned and registered (its first run)."""
        self._setting_up = setting_up
        setting_up.add_done_callback(self.on_setup_done)

    def on_setup_done(self, setting_up: asyncio.Future) -> None:
        self._setting_up = None
        if self.outcome.settled:   # cancelled or failed meanwhile
            return
        cancelled, setup, error = outcome(setting_up)
        if cancelled:
            self.outcome.cancel()
        elif error is not None:
            self.outcome.set_exception(error)
        else:
            self.start(setup)

    def start(self, setup: StepSetup) -> None:
        """Start every partition but the master's deferred one (it waits for the replies)."""
        self.setup = setup
        self.remaining = len(setup.parts)
        for part in setup.start_first:
            if self.outcome.settled:   # an earlier partition failed at once: start no more
                break
            self.launch(part)
        if not setup.start_first:   # nothing to run: every fetch is fed
            self.settle()

    def launch(self, part: TaskPartition, received: dict | None = None) -> None:
        """Start one partition; its outcome comes to ``on_partition_done`` (at once when it
        is this task's and ran through). ``received``: the values a deferred one is fed."""
        assert self.setup is not None   # partitions start only from ``start``
        try:
            call = self.master.start_partition(self.session, self.setup, part, self.step_id,
                                               self.feed_values, self.remaining_time(part),
                                               self.trace, received)
        except Exception as error:  # noqa: BLE001 - e.g. the peer's channel is closed
            call = failed(error)
        self.watch(part, call)

    def watch(self, part: TaskPartition, call: Deferred) -> None:
        """Have ``call``'s outcome (one partition's outputs) come to ``on_partition_done``."""
        if call.settled:
            self.on_partition_done(part, call)
        else:
            self.running.append(call)
            call.add_done_callback(functools.partial(self.on_partition_done, part))

    # ---- partitions report -----------------------------------------------------------------
    def on_partition_done(self, part: TaskPartition, done: Deferred) -> None:
        if self.outcome.settled:
            return
        cancelled, value, error = outcome(done)
        if cancelled:
            self.outcome.cancel()
            return
        if error is not None:
            if isinstance(error, GraphNotRegisteredError) and part.task not in self.retried:
                self.register_again(part)
            else:
                if isinstance(error, DeadlineExceededError) and self.setup is not None:
                    error = self.master.blame(self.setup, error)   # a task is gone: say which
                self.at_fault = part.task   # set on failure only (read with getattr)
                self.outcome.set_exception(error)
            return
        setup = self.setup
        assert setup is not None   # partitions report only once ``start`` started them
        try:
            self.master.take_outputs(part, value, self.step_id, self.results,
                                     setup.deferred is not None)
        except Exception as exc:  # noqa: BLE001 - a malformed reply fails the step
            self.at_fault = part.task
            self.outcome.set_exception(exc)
            return
        self.remaining -= 1
        deferred = setup.deferred
        if self.remaining == 1 and deferred is not None and part is not deferred:
            # every reply is in: the master's own partition runs now, fed with them
            self.launch(deferred, self.results)
        elif self.remaining == 0:
            self.settle()

    def register_again(self, part: TaskPartition) -> None:
        """The task restarted and lost its graphs: register the partition again and rerun it
        (once per task and step; a second loss fails the step)."""
        self.retried.add(part.task)
        again = asyncio.ensure_future(self._rerun(part))
        rerun = Deferred(upstream=again)
        again.add_done_callback(functools.partial(chain, target=rerun))
        self.watch(part, rerun)

    async def _rerun(self, part: TaskPartition) -> list[np.ndarray]:
        setup = self.setup
        assert setup is not None   # a partition that ran is being rerun
        await self.master.register_again(self.session, setup, part)
        return await self.master.start_partition(self.session, setup, part, self.step_id,
                                                 self.feed_values, self.remaining_time(part),
                                                 self.trace)

    def remaining_time(self, part: TaskPartition) -> float:
        """Seconds left of the step's budget, for a partition that starts now."""
        left = self.deadline - time.monotonic()
        if left <= 0.0:
            raise DeadlineExceededError(
                None, None, f"step {self.step_id} ran out of its {self.timeout:g} s before its "
                f"partition on {part.task} could start")
        return left

    # ---- the outcome -------------------------------------------------------------------------
    def settle(self) -> None:
        """Every partition is in: the step's values, in fetch order (fed ones as fed)."""
        feed_values, results, values = self.feed_values, self.results, []
        for name in self.fetches:
            values.append(feed_values[name] if name in feed_values else results[name])
        try:
            value = values if self.finish is None else self.finish(values)
        except Exception as error:  # noqa: BLE001 - e.g. a fetched value the reply refuses
            self.outcome.set_exception(error)
        else:
            self.outcome.set_result(value)

    def on_failure(self, error: BaseException) -> None:
        """The step failed or was cancelled: abort it on every task and let go of its calls
        (and log it: the only line a step may cost, and only when it fails)."""
        self.master.step_failed(self.session.handle, self.step_id, error,
                                getattr(self, "at_fault", None))
        if self._setting_up is not None:
            self._setting_up.cancel()
        if self.setup is not None:
            self.master.abort(self.setup, self.step_id, error)
        running, self.running = self.running, []
        for call in running:
            call.cancel()

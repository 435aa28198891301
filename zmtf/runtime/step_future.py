"""StepFuture: the outcome of one executor step, a Condition-free concurrent.futures.Future."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import CancelledError, Future, InvalidStateError, TimeoutError
from typing import Any, Callable

LOGGER = logging.getLogger("zmtf.executor")


class StepFuture(Future):
    """The outcome of one step: a ``concurrent.futures.Future`` (``asyncio.wrap_future`` and
    blocking ``result(timeout)`` work as usual) without the Condition and RLock its
    constructor makes and every call takes: a step's outcome is settled once and read by a
    callback or two, and that machinery was a noticeable part of a small step's cost. One
    plain lock guards the state; an Event is made only when a thread blocks.
    ``concurrent.futures.wait``/``as_completed`` are not supported (nothing calls them)."""

    # Set by the executor that runs the step (declared here for type checkers, not made per
    # step): ``abort(error=None)`` stops the step, failing it with ``error``; and, once it
    # succeeded, the seconds it spent inside kernels (the worker's choice to run it inline).
    abort: Callable[..., None]
    compute_seconds: float

    def __init__(self) -> None:   # deliberately not Future.__init__: no Condition
        self._state = "PENDING"
        self._result: Any = None
        self._exception: BaseException | None = None
        self._done_callbacks: list[Callable[[Future], Any]] = []
        self._lock = threading.Lock()
        self._event: threading.Event | None = None

    def __repr__(self) -> str:
        return f"<StepFuture at {id(self):#x} state={self._state.lower()}>"

    def done(self) -> bool:
        return self._state != "PENDING"

    def cancelled(self) -> bool:
        return self._state == "CANCELLED"

    def outcome(self) -> tuple[bool, Any, BaseException | None] | None:
        """(cancelled, value, error) of the settled step, or None while it runs: what a
        caller that wants the outcome now, if there is one, reads in one step (``result()``
        would block, or raise the error only for it to be caught again)."""
        state = self._state
        if state == "FINISHED":
            error = self._exception
            return (False, None, error) if error is not None else (False, self._result, None)
        if state == "CANCELLED":
            return True, None, None
        return None

    def running(self) -> bool:
        return False

    def set_running_or_notify_cancel(self) -> bool:
        return self._state != "CANCELLED"

    def cancel(self) -> bool:
        return self.settle("CANCELLED", None, None)

    def set_result(self, result: Any) -> None:
        if not self.settle("FINISHED", result, None):
            raise InvalidStateError(f"{self!r} is settled already")

    def set_exception(self, exception: BaseException | None) -> None:
        if not self.settle("FINISHED", None, exception):
            raise InvalidStateError(f"{self!r} is settled already")

    def settle(self, state: str, result: Any, exception: BaseException | None) -> bool:
        """Settle it ("FINISHED" or "CANCELLED") unless it is settled already: False then.
        The executor's way to finish a step: a caller may have cancelled it meanwhile, and a
        lost race is not an error there."""
        with self._lock:
            if self._state != "PENDING":
                return False
            self._result, self._exception, self._state = result, exception, state
            event, callbacks, self._done_callbacks = self._event, self._done_callbacks, []
        if event is not None:
            event.set()
        for callback in callbacks:
            self._call(callback)
        return True

    def _call(self, callback: Callable[[Future], Any]) -> None:
        try:
            callback(self)
        except Exception:  # noqa: BLE001 - as concurrent.futures: logged, the others still run
            LOGGER.exception("exception calling callback for %r", self)

    def add_done_callback(self, fn: Callable[[Future], Any]) -> None:
        with self._lock:
            if self._state == "PENDING":
                self._done_callbacks.append(fn)
                return
        self._call(fn)

    def _wait(self, timeout: float | None) -> None:
        if self._state == "PENDING":
            with self._lock:
                if self._state == "PENDING" and self._event is None:
                    self._event = threading.Event()
                event = self._event
            if event is not None and not event.wait(timeout):
                raise TimeoutError()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state == "FINISHED":   # settled: read it (a step's callbacks always find it so)
            return self._exception
        self._wait(timeout)
        if self._state == "CANCELLED":
            raise CancelledError()
        return self._exception

    def result(self, timeout: float | None = None) -> Any:
        if self._state == "FINISHED" and self._exception is None:
            return self._result
        error = self.exception(timeout)
        if error is not None:
            try:
                raise error
            finally:
                error = None   # no frame <-> traceback cycle, as concurrent.futures does
        return self._result

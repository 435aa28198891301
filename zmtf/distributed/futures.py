"""Futures for the step path: ``Deferred`` and small helpers to combine outcomes.

An ``asyncio.Future`` runs its callbacks on the loop's next turn, so every link of a chain
(reply arrives -> partition done -> step done -> reply sent) costs a loop iteration; a
small step is made of little else. ``Deferred`` has the same surface (``done``,
``result``, ``exception``, ``cancel``, ``add_done_callback``, ``await``) but calls its
callbacks at once, on the thread that settles it: always the event loop's thread here.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Callable

from zmtf.runtime.step_future import StepFuture

log = logging.getLogger("zmtf.futures")

_PENDING, _RESULT, _ERROR, _CANCELLED = range(4)


class Deferred:
    """A one-shot outcome whose callbacks run synchronously when it settles.

    ``upstream``, if given, is the work this outcome stands for (a Deferred or a future):
    cancelling this cancels it too, without a callback per outcome that checks for it.
    ``on_failure``, if given, is called with the error (a CancelledError when cancelled)
    before the callbacks when it fails: clean-up that only a failed step needs, kept off the
    path of the steps that succeed."""

    __slots__ = ("_state", "_value", "_callbacks", "_upstream", "_on_failure", "settled")

    def __init__(self, upstream: Any = None,
                 on_failure: Callable[[BaseException], None] | None = None) -> None:
        self._state = _PENDING
        self.settled = False   # ``done()`` as an attribute: for the step path's many checks
        self._value: Any = None
        self._callbacks: list[Callable[[Deferred], None]] | None = []
        self._upstream = upstream
        self._on_failure = on_failure

    # ---- reading ----------------------------------------------------------------------
    def done(self) -> bool:
        return self._state != _PENDING

    def cancelled(self) -> bool:
        return self._state == _CANCELLED

    def exception(self) -> BaseException | None:
        if self._state == _CANCELLED:
            raise asyncio.CancelledError()
        if self._state == _PENDING:
            raise asyncio.InvalidStateError("the outcome is not ready yet")
        return self._value if self._state == _ERROR else None

    def result(self) -> Any:
        if self._state == _RESULT:   # the common case, without a call to exception()
            return self._value
        error = self.exception()
        if error is not None:
            raise error
        return self._value

    # ---- settling ---------------------------------------------------------------------
    def set_exception(self, error: BaseException) -> None:
        self._settle(error, _ERROR)

    def cancel(self) -> bool:
        if self._state != _PENDING:
            return False
        self._settle(None, _CANCELLED)
        if self._upstream is not None:
            self._upstream.cancel()
        return True

    def _settle(self, value: Any, state: int = _RESULT) -> None:
        """Settle with ``value`` (a result; with ``state`` an error or a cancellation). It is
        ``set_result`` itself: settling a result is the step path's most frequent call."""
        if self._state != _PENDING:
            raise asyncio.InvalidStateError("the outcome was settled already")
        self._state, self._value, self.settled = state, value, True
        callbacks, self._callbacks = self._callbacks, None
        on_failure, self._on_failure = self._on_failure, None   # it holds the work: let it go
        if state != _RESULT and on_failure is not None:
            try:
                on_failure(value if state == _ERROR else asyncio.CancelledError())
            except Exception:  # noqa: BLE001 - the callbacks must still run
                log.exception("the failure hook of a Deferred failed")
        for callback in callbacks or ():
            try:
                callback(self)
            except Exception:  # noqa: BLE001 - as asyncio does: one bad callback, the rest still run
                log.exception("a callback of a Deferred failed")

    set_result = _settle

    def add_done_callback(self, callback: Callable[["Deferred"], None]) -> None:
        """Call ``callback(self)`` when settled: at once if it is already."""
        if self._callbacks is None:
            callback(self)
        else:
            self._callbacks.append(callback)

    # ---- awaiting ---------------------------------------------------------------------
    def __await__(self) -> Any:
        if self._state == _PENDING:
            waiter = asyncio.get_running_loop().create_future()
            self.add_done_callback(lambda done: chain(done, waiter))
            try:
                return (yield from waiter.__await__())
            except asyncio.CancelledError:
                self.cancel()
                raise
        return self.result()



def outcome(done: Any) -> tuple[bool, Any, BaseException | None]:
    """(cancelled, value, error) of a settled Deferred, StepFuture or future, read at once:
    the step path reads every partition's and step's outcome, and asking ``cancelled()``,
    ``exception()`` and ``result()`` in turn would raise and catch to find out."""
    if type(done) is Deferred:
        state = done._state
        if state == _RESULT:
            return False, done._value, None
        if state == _ERROR:
            return False, None, done._value
        if state == _CANCELLED:
            return True, None, None
        raise asyncio.InvalidStateError("the outcome is not ready yet")
    if type(done) is StepFuture:   # a partition's run
        settled = done.outcome()
        if settled is None:
            raise asyncio.InvalidStateError("the outcome is not ready yet")
        return settled
    if done.cancelled():
        return True, None, None
    error = done.exception()
    return (False, None, error) if error is not None else (False, done.result(), None)


def resolved(value: Any) -> Deferred:
    """A Deferred settled with ``value``: the outcome of work that ran through inline. Made
    settled rather than made and then settled, as the step path's most common outcome."""
    outcome = Deferred.__new__(Deferred)
    outcome._state, outcome._value, outcome.settled = _RESULT, value, True
    outcome._callbacks = outcome._upstream = outcome._on_failure = None
    return outcome


def failed(error: BaseException) -> Deferred:
    """A Deferred that has failed with ``error``."""
    outcome = Deferred()
    outcome.set_exception(error)
    return outcome


def chain(source: Any, target: Any) -> None:
    """Copy ``source``'s outcome into ``target`` unless that was settled meanwhile."""
    if target.done():
        return
    if type(source) is Deferred and source._state == _RESULT:   # the step path's usual case
        target.set_result(source._value)
    elif source.cancelled():
        target.cancel()
    elif source.exception() is not None:
        target.set_exception(source.exception())
    else:
        target.set_result(source.result())


def then(source: Any, fn: Callable[[Any], Any]) -> Deferred:
    """A Deferred of ``fn(source.result())``; errors pass through, cancelling it cancels
    ``source``. ``source`` is a Deferred or an asyncio future."""
    target = Deferred(upstream=source)

    def settled(done: Any) -> None:
        if target._state != _PENDING:
            return
        if type(done) is Deferred and done._state == _RESULT:   # the step path's usual case
            value = done._value
        elif done.cancelled() or done.exception() is not None:
            chain(done, target)
            return
        else:
            value = done.result()
        try:
            value = fn(value)
        except Exception as error:  # noqa: BLE001 - a mapping error is the outcome
            target.set_exception(error)
        else:
            target.set_result(value)

    if source.done():
        settled(source)   # now, not on the loop's next turn: a caller may reply at once
    else:
        source.add_done_callback(settled)
    return target


def is_outcome(value: Any) -> bool:
    return isinstance(value, Deferred) or asyncio.isfuture(value)

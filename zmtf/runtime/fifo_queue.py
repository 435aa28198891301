"""FIFOQueue: the state behind tf.FIFOQueue, shared by every step that names it.

Nothing here blocks a thread. An enqueue that finds the queue full, or a dequeue that finds
it short, is parked as a waiter holding its kernel's ``done`` callback; whoever changes the
queue completes the waiters it can. Callbacks always run after the lock is released (a
callback may continue another step, which may touch this queue again).

It lives in a ResourceContainer (resources.py); the kernels in kernels/cpu/data_flow.py act
on it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from zmtf.framework.errors import CancelledError, InvalidArgumentError, OutOfRangeError
from zmtf.kernels.cpu._common import shape_str
from zmtf.runtime.parking import Completion, Done, Parking, run

Element = tuple[np.ndarray, ...]


@dataclass(eq=False, slots=True)
class _Taker:
    """A parked dequeue of ``count`` elements (``many``: outputs are stacked batches)."""

    count: int
    many: bool
    done: Done


@dataclass(eq=False, slots=True)
class _Putter:
    """A parked enqueue whose ``elements`` did not all fit yet."""

    elements: deque[Element]
    done: Done


class FIFOQueue(Parking):
    """A bounded (``capacity`` < 0: unbounded) first-in first-out queue of tuples of arrays."""

    resource_kind = "FIFOQueue"

    def __init__(self, name: str, dtypes: Sequence[str], shapes: Sequence[Any] | None,
                 capacity: int) -> None:
        super().__init__()
        self.name = name
        self.dtypes = tuple(np.dtype(d) for d in dtypes)
        self.shapes = None if not shapes else tuple(tuple(s) for s in shapes)
        self.capacity = capacity
        self._elements: deque[Element] = deque()
        self._takers: deque[_Taker] = deque()
        self._putters: deque[_Putter] = deque()
        self._closed = False

    # ---- what the kernels call ---------------------------------------------------------
    def check_matches(self, dtypes: Sequence[str], shapes: Sequence[Any] | None, capacity: int,
                      node_name: str) -> None:
        """A second FIFOQueue op with the same shared_name must ask for the same queue."""
        mine = ([d.name for d in self.dtypes], [list(s) for s in self.shapes or ()], self.capacity)
        theirs = ([np.dtype(d).name for d in dtypes], [list(s) for s in shapes or ()], capacity)
        if mine != theirs:
            raise InvalidArgumentError(
                f"Shared queue '{self.name}' has (component types, shapes, capacity) {mine}, but "
                f"node '{node_name}' requests {theirs}; give it another shared_name or the same "
                f"arguments")

    def size(self) -> int:
        with self._lock:
            return len(self._elements)

    def enqueue(self, elements: list[Element], done: Done) -> _Putter | None:
        """Add ``elements`` in order; ``done([], None)`` once all are in. Returns the waiter."""
        for element in elements:
            self._check(element)
        return self._park(self._putters, _Putter(deque(elements), done), refuse=self._refuse_enqueue)

    def _refuse_enqueue(self) -> BaseException | None:
        return CancelledError(f"FIFOQueue '{self.name}' is closed.") if self._closed else None

    def dequeue(self, count: int, many: bool, done: Done) -> _Taker | None:
        """``done(components, None)`` once ``count`` elements are there. Returns the waiter."""
        return self._park(self._takers, _Taker(count, many, done))

    def close(self, cancel_pending_enqueues: bool) -> None:
        """No more enqueues; dequeues that can never be satisfied fail with OutOfRangeError."""
        with self._lock:
            self._closed = True
            completions = []
            if cancel_pending_enqueues:
                completions = [(p.done, None, self._refuse_enqueue()) for p in self._putters]
                self._putters.clear()
            completions += self._serve()
        run(completions)

    def cancel(self, waiter: _Taker | _Putter, error: BaseException) -> None:
        """Withdraw a parked enqueue or dequeue (its step aborted); fail it with ``error``."""
        self._withdraw(self._takers if isinstance(waiter, _Taker) else self._putters, waiter, error)

    def cancel_all(self, error: BaseException) -> None:
        """Fail every parked enqueue and dequeue (the session closed or was reset)."""
        self._fail_all([self._takers, self._putters], error)

    # ---- the rules, under the lock -------------------------------------------------------
    def _serve(self) -> list[Completion]:
        """Move parked elements in while there is room, hand them to takers in arrival order."""
        completions: list[Completion] = []
        progress = True
        while progress:
            progress = False
            while self._putters and (not self._putters[0].elements or self._has_room()):
                putter = self._putters[0]
                if putter.elements:
                    self._elements.append(putter.elements.popleft())
                    progress = True
                if not putter.elements:
                    self._putters.popleft()
                    completions.append((putter.done, [], None))
            if self._takers and len(self._elements) >= self._takers[0].count:
                taker = self._takers.popleft()
                taken = [self._elements.popleft() for _ in range(taker.count)]
                completions.append((taker.done, self._outputs(taken, taker.many), None))
                progress = True
        if self._closed:
            while self._takers and not self._putters:
                taker = self._takers.popleft()
                completions.append((taker.done, None, OutOfRangeError(
                    f"FIFOQueue '{self.name}' is closed and has insufficient elements "
                    f"(requested {taker.count}, current size {len(self._elements)})")))
        return completions

    def _has_room(self) -> bool:
        return self.capacity < 0 or len(self._elements) < self.capacity

    def _outputs(self, taken: list[Element], many: bool) -> list[np.ndarray]:
        if not many:
            return list(taken[0])
        return [np.stack([e[i] for e in taken]) if taken else
                np.zeros((0, *(self.shapes[i] if self.shapes else ())), self.dtypes[i])
                for i in range(len(self.dtypes))]

    def _check(self, element: Element) -> None:
        if len(element) != len(self.dtypes):
            raise InvalidArgumentError(f"FIFOQueue '{self.name}' holds {len(self.dtypes)} "
                                       f"components, an enqueue gave {len(element)}")
        for i, value in enumerate(element):
            if self.shapes is not None and value.shape != self.shapes[i]:
                raise InvalidArgumentError(
                    f"Shape mismatch in tuple component {i} of FIFOQueue '{self.name}'. Expected "
                    f"{shape_str(self.shapes[i])}, got {shape_str(value.shape)}")


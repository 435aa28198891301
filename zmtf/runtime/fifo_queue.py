"""Queue and FIFOQueue: the state behind tf.FIFOQueue (and, through Queue, every queue kind).

Nothing here blocks a thread. An enqueue that finds the queue full, or a dequeue that finds
it short, is parked as a waiter holding its kernel's ``done`` callback; whoever changes the
queue completes the waiters it can. Callbacks always run after the lock is released (a
callback may continue another step, which may touch this queue again).

Queue holds the machinery (parking, close, cancel, enqueue_many, dequeue_many and
dequeue_up_to); a kind of queue only says which element a dequeue takes next (``_take_one``)
and how many a dequeue must leave behind while the queue is open (``_reserve``): FIFOQueue
here, RandomShuffleQueue in shuffle_queue.py.

It lives in a ResourceContainer (resources.py); the kernels in kernels/cpu/data_flow.py act
on it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import CancelledError, InvalidArgumentError, OutOfRangeError
from zmtf.kernels.cpu.common import shape_str
from zmtf.runtime.parking import Completion, Done, Parking, run

Element = tuple[np.ndarray, ...]


@dataclass(eq=False, slots=True)
class _Taker:
    """A parked dequeue of ``count`` elements (``many``: outputs are stacked batches;
    ``up_to``: once the queue is closed, fewer than ``count`` will do)."""

    count: int
    many: bool
    done: Done
    up_to: bool = False


@dataclass(eq=False, slots=True)
class _Putter:
    """A parked enqueue whose ``elements`` did not all fit yet."""

    elements: deque[Element]
    done: Done


class Queue(Parking):
    """A bounded (``capacity`` < 0: unbounded) queue of tuples of arrays; a subclass picks the
    element each dequeue takes (``_take_one``) and what an open queue keeps (``_reserve``)."""

    resource_kind = "Queue"

    def __init__(self, name: str, dtypes: Sequence[str], shapes: Sequence[Any] | None,
                 capacity: int) -> None:
        super().__init__()
        self.name = name
        self.dtypes = tuple(as_dtype(d).np for d in dtypes)   # tf.string: object arrays
        self.shapes = None if not shapes else tuple(tuple(s) for s in shapes)
        self.capacity = capacity
        self._elements: Any = self._new_storage()
        self._takers: deque[_Taker] = deque()
        self._putters: deque[_Putter] = deque()
        self._closed = False

    # ---- the policy, one per kind of queue ---------------------------------------------
    def _new_storage(self) -> Any:
        """An empty container of elements (``append`` and ``len`` are all Queue uses)."""
        raise NotImplementedError

    def _take_one(self) -> Element:
        """Remove and return the element a dequeue gets next (under the lock, never empty)."""
        raise NotImplementedError

    def _reserve(self) -> int:
        """How many elements a dequeue must leave behind while the queue is open."""
        return 0

    # ---- what the kernels call ---------------------------------------------------------
    def check_matches(self, dtypes: Sequence[str], shapes: Sequence[Any] | None, capacity: int,
                      node_name: str, **extra: Any) -> None:
        """A second queue op with the same shared_name must ask for the same queue."""
        mine = ([as_dtype(d).name for d in self.dtypes], [list(s) for s in self.shapes or ()],
                self.capacity, *self._extra_attrs().values())
        theirs = ([as_dtype(d).name for d in dtypes], [list(s) for s in shapes or ()], capacity,
                  *extra.values())
        if mine != theirs:
            fields = ", ".join(["component types", "shapes", "capacity", *self._extra_attrs()])
            raise InvalidArgumentError(
                f"Shared queue '{self.name}' has ({fields}) {mine}, but node '{node_name}' "
                f"requests {theirs}; give it another shared_name or the same arguments")

    def _extra_attrs(self) -> dict[str, Any]:
        """The attributes besides types, shapes and capacity that a shared queue must match."""
        return {}

    def size(self) -> int:
        with self._lock:
            return len(self._elements)

    def enqueue(self, elements: list[Element], done: Done) -> _Putter | None:
        """Add ``elements`` in order; ``done([], None)`` once all are in. Returns the waiter."""
        for element in elements:
            self._check(element)
        return self._park(self._putters, _Putter(deque(elements), done), refuse=self._refuse_enqueue)

    def _refuse_enqueue(self) -> BaseException | None:
        return (CancelledError(f"{self.resource_kind} '{self.name}' is closed.") if self._closed
                else None)

    def dequeue(self, count: int, many: bool, done: Done, up_to: bool = False) -> _Taker | None:
        """``done(components, None)`` once ``count`` elements can be taken (``up_to``: or,
        once closed, whatever is left if that is at least one). Returns the waiter."""
        return self._park(self._takers, _Taker(count, many, done, up_to))

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
        """Move parked elements in while there is room, hand them to takers in arrival order;
        once closed, a taker that can never be served gets OutOfRangeError."""
        completions: list[Completion] = []
        progress = True
        while progress:
            progress = self._admit(completions)
            if not self._takers:
                continue
            taker = self._takers[0]
            count = self._servable(taker)
            if count is not None:
                self._takers.popleft()
                taken = [self._take_one() for _ in range(count)]
                completions.append((taker.done, self._outputs(taken, taker.many), None))
                progress = True
            elif self._closed and not self._putters:
                self._takers.popleft()
                completions.append((taker.done, None, OutOfRangeError(
                    f"{self.resource_kind} '{self.name}' is closed and has insufficient elements "
                    f"(requested {taker.count}, current size {len(self._elements)})")))
                progress = True
        return completions

    def _admit(self, completions: list[Completion]) -> bool:
        """Move parked enqueues' elements in while there is room; whether any moved."""
        moved = False
        while self._putters and (not self._putters[0].elements or self._has_room()):
            putter = self._putters[0]
            if putter.elements:
                self._elements.append(putter.elements.popleft())
                moved = True
            if not putter.elements:
                self._putters.popleft()
                completions.append((putter.done, [], None))
        return moved

    def _servable(self, taker: _Taker) -> int | None:
        """How many elements ``taker`` gets now, or None if it must wait (or fail, if closed)."""
        available = len(self._elements) - (0 if self._closed else self._reserve())
        if available >= taker.count:
            return taker.count
        if taker.up_to and self._closed and available > 0:
            return available
        return None

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
            raise InvalidArgumentError(f"{self.resource_kind} '{self.name}' holds "
                                       f"{len(self.dtypes)} components, an enqueue gave "
                                       f"{len(element)}")
        for i, value in enumerate(element):
            if self.shapes is not None and value.shape != self.shapes[i]:
                raise InvalidArgumentError(
                    f"Shape mismatch in tuple component {i} of {self.resource_kind} '{self.name}'. "
                    f"Expected {shape_str(self.shapes[i])}, got {shape_str(value.shape)}")



class FIFOQueue(Queue):
    """First in, first out."""

    resource_kind = "FIFOQueue"

    def _new_storage(self) -> deque[Element]:
        return deque()

    def _take_one(self) -> Element:
        return self._elements.popleft()

"""ConditionalAccumulator: the state behind tf.ConditionalAccumulator (sync replicas' core).

It sums gradients computed at the accumulator's current global step and drops older
("stale") ones; ``take_grad(n)`` waits (as a parked callback, never a blocked thread) until
``n`` are in, then returns their average, resets, and advances the global step, so the
gradients of the step just taken become stale at once.

It lives in a ResourceContainer (resources.py); the kernels in kernels/cpu/data_flow.py act
on it.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import quiet_fp, shape_str
from zmtf.runtime.parking import Completion, Done, Parking, run


@dataclass(eq=False, slots=True)
class _Taker:
    """A parked take_grad."""

    num_required: int
    done: Done


class ConditionalAccumulator(Parking):
    """Averages ``num_required`` fresh gradients of one dtype and (partially known) shape."""

    resource_kind = "ConditionalAccumulator"

    def __init__(self, name: str, dtype: str, shape: Sequence[int | None] | None) -> None:
        super().__init__()
        self.name = name
        self.dtype = np.dtype(dtype)
        self.shape = None if shape is None else tuple(shape)
        self._sum: np.ndarray | None = None
        self._count = 0
        self._global_step = 0
        self._takers: deque[_Taker] = deque()

    def check_matches(self, dtype: str, node_name: str) -> None:
        """A second accumulator op with the same shared_name must want the same dtype."""
        if np.dtype(dtype) != self.dtype:
            raise InvalidArgumentError(
                f"Shared accumulator '{self.name}' holds {self.dtype.name} gradients, but node "
                f"'{node_name}' requests {np.dtype(dtype).name}; give it another shared_name")

    @property
    def global_step(self) -> int:
        return self._global_step

    def num_accumulated(self) -> int:
        with self._lock:
            return self._count

    def set_global_step(self, step: int) -> None:
        """Gradients computed before ``step`` are stale from now on (the chief's init)."""
        with self._lock:
            self._global_step = int(step)

    def apply_grad(self, local_step: int, grad: np.ndarray) -> bool:
        """Add ``grad`` unless it is stale (``local_step`` < global step); True if it counted."""
        with self._lock:
            self._check_shape(grad)
            if int(local_step) < self._global_step:
                return False
            with quiet_fp():
                if self._sum is None:
                    self._sum = np.array(grad, dtype=self.dtype, copy=True)
                else:
                    np.add(self._sum, grad, out=self._sum, casting="unsafe")
            self._count += 1
            completions = self._serve()
        run(completions)
        return True

    def take_grad(self, num_required: int, done: Done) -> _Taker | None:
        """``done([average], None)`` once ``num_required`` gradients are in. Returns the waiter."""
        if num_required < 1:
            raise InvalidArgumentError(
                f"take_grad on accumulator '{self.name}': num_required must be >= 1, got "
                f"{num_required}")
        return self._park(self._takers, _Taker(int(num_required), done))

    def cancel(self, waiter: _Taker, error: BaseException) -> None:
        """Withdraw a parked take_grad (its step was aborted) and fail it with ``error``."""
        self._withdraw(self._takers, waiter, error)

    def cancel_all(self, error: BaseException) -> None:
        """Fail every parked take_grad (the session closed or was reset)."""
        self._fail_all([self._takers], error)

    def _serve(self) -> list[Completion]:
        completions: list[Completion] = []
        while self._takers and self._count >= self._takers[0].num_required:
            taker = self._takers.popleft()
            assert self._sum is not None
            with quiet_fp():
                average = (self._sum / self._count).astype(self.dtype, copy=False)
            self._sum, self._count = None, 0
            self._global_step += 1
            completions.append((taker.done, [average], None))
        return completions

    def _check_shape(self, grad: np.ndarray) -> None:
        """The declared shape, and the shape of what is already summed (under the lock)."""
        declared = self.shape
        fits = declared is None or (len(declared) == grad.ndim and all(
            d is None or d < 0 or d == g for d, g in zip(declared, grad.shape)))
        if fits and self._sum is not None:
            fits = self._sum.shape == grad.shape
        if not fits:
            expected = self._sum.shape if self._sum is not None else declared or ()
            raise InvalidArgumentError(
                f"Shape mismatch: accumulator '{self.name}' expects gradients of shape "
                f"{_shape_text(expected)}, got {shape_str(grad.shape)}")


def _shape_text(shape: Sequence[int | None]) -> str:
    return "[" + ",".join("?" if d is None or d < 0 else str(d) for d in shape) + "]"


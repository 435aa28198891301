"""PaddingFIFOQueue: the state behind tf.PaddingFIFOQueue (and train.batch's dynamic_pad).

A FIFOQueue whose component shapes may leave dimensions unknown (None): an element may have
any size there, and a batch dequeue pads every element of a component to the largest size
in that batch, with zeros (empty strings for tf.string, False for bools), as TF does. A
single dequeue gives the element as it went in.
"""

from __future__ import annotations

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.runtime.fifo_queue import Element, FIFOQueue


class PaddingFIFOQueue(FIFOQueue):
    """First in, first out; batches padded to their largest element per component."""

    resource_kind = "PaddingFIFOQueue"

    def _check(self, element: Element) -> None:
        if len(element) != len(self.dtypes):
            super()._check(element)
        shapes = self._partial_shapes()
        for i, value in enumerate(element):
            wanted = shapes[i]
            if value.ndim != len(wanted) or any(
                    d is not None and d != n for d, n in zip(wanted, value.shape)):
                raise InvalidArgumentError(
                    f"Shape mismatch in tuple component {i} of {self.resource_kind} "
                    f"'{self.name}'. Expected {_partial_str(wanted)}, got "
                    f"[{','.join(str(n) for n in value.shape)}]")

    def _outputs(self, taken: list[Element], many: bool) -> list[np.ndarray]:
        if not many:
            return list(taken[0])
        shapes = self._partial_shapes()
        return [_padded([e[i] for e in taken], shapes[i], self.dtypes[i])
                for i in range(len(self.dtypes))]

    def _partial_shapes(self) -> tuple[tuple[int | None, ...], ...]:
        """The component shapes, which a padding queue cannot do without (the op requires them)."""
        if self.shapes is None:
            raise InvalidArgumentError(
                f"{self.resource_kind} '{self.name}' was made without component shapes; "
                f"it needs one (partly known) shape per component to pad")
        return self.shapes


def _padded(values: list[np.ndarray], shape: tuple, dtype: np.dtype) -> np.ndarray:
    """``values`` stacked, each padded at the end of every dimension to the largest."""
    if values and all(v.shape == values[0].shape for v in values):
        return np.stack(values)   # nothing to pad (and a scalar string stays a string)
    dims = [max((v.shape[k] for v in values), default=0 if d is None else d)
            for k, d in enumerate(shape)]
    out = np.full((len(values), *dims), b"" if dtype == object else 0, dtype)
    for row, value in enumerate(values):
        corner: tuple[int | slice, ...] = (row, *(slice(0, n) for n in value.shape))
        out[corner] = value
    return out


def _partial_str(shape: tuple) -> str:
    """TF's wording of a partly known shape: ``[?,2]``."""
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"

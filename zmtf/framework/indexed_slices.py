"""tf.IndexedSlices: a sparse gradient, rows ``values`` at row ``indices`` of a dense_shape tensor.

The gradient of ``tf.gather(params, ids)`` (axis 0) and so of ``embedding_lookup`` touches
only the gathered rows. As IndexedSlices it crosses the wire as those rows and their ids
(k x d plus k ints) instead of the whole table, and the optimizers update just those rows
on the ps (SparseApplyMomentum, ...), as in TF1. Anything that needs a plain tensor gets
one: ``tf.convert_to_tensor`` (and every op taking the gradient as input) densifies it,
summing duplicate rows.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from zmtf.framework.graph import Tensor
from zmtf.framework import upper_layers

#: what ``sess.run`` returns for an IndexedSlices fetch (TF's tf.IndexedSlicesValue)
IndexedSlicesValue = namedtuple("IndexedSlicesValue", ["values", "indices", "dense_shape"])


class IndexedSlices:
    """Rows ``values[i]`` of a tensor of shape ``dense_shape`` at row ``indices[i]``; rows that
    repeat an index add up, rows not listed are zero."""

    def __init__(self, values: Tensor, indices: Tensor, dense_shape: Tensor | None = None) -> None:
        self._values, self._indices, self._dense_shape = values, indices, dense_shape
        self._dense: Tensor | None = None

    values = property(lambda self: self._values)
    indices = property(lambda self: self._indices)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    graph = property(lambda self: self._values.graph)
    op = property(lambda self: self._values.op)
    name = property(lambda self: self._values.name)
    device = property(lambda self: self._values.device)

    def _as_graph_element(self) -> Tensor:
        """The dense tensor (made once): what convert_to_tensor and every op input get."""
        if self._dense is None:
            if self._dense_shape is None:
                raise ValueError(f"cannot convert an IndexedSlices without dense_shape to a Tensor: "
                                 f"{self!r}")
            scatter_rows = upper_layers.lookup("scatter_rows")  # the op layer imports us
            self._dense = scatter_rows(self._values, self._indices, self._dense_shape)
        return self._dense

    def __repr__(self) -> str:
        shape = "" if self._dense_shape is None else f", dense_shape={self._dense_shape.name}"
        return f"IndexedSlices(indices={self._indices.name}, values={self._values.name}{shape})"


def is_indexed_slices(value: Any) -> bool:
    return isinstance(value, IndexedSlices)


__all__ = ["IndexedSlices", "IndexedSlicesValue", "is_indexed_slices"]

"""tf.SparseTensor: a tensor of shape ``dense_shape`` that is zero except at ``indices``.

It is a composite of three dense tensors and nothing more: int64 ``indices`` [N, rank],
``values`` [N] and int64 ``dense_shape`` [rank]. Ops take and return the three parts, the
wire carries them as ordinary tensors, and the session turns a fetched SparseTensor into a
``SparseTensorValue`` and splits a fed one into its parts (zmtf/client/fetches.py and
zmtf/client/feeds.py), as TF1 does.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.tensor_shape import TensorShape, as_shape
from zmtf.framework import upper_layers

#: what ``sess.run`` returns for a SparseTensor fetch (TF's tf.SparseTensorValue)
SparseTensorValue = namedtuple("SparseTensorValue", ["indices", "values", "dense_shape"])


class SparseTensor:
    """``SparseTensor(indices=[[0, 1], [2, 3]], values=[1.0, 2.0], dense_shape=[3, 4])``: the 3x4
    tensor with 1.0 at [0, 1] and 2.0 at [2, 3]. Indices are expected in row-major order."""

    def __init__(self, indices: Any, values: Any, dense_shape: Any) -> None:
        convert_to_tensor = upper_layers.lookup("convert_to_tensor")  # the op layer imports us

        with get_default_graph().name_scope("SparseTensor"):
            self._indices = convert_to_tensor(_int64(indices), dtype=dtypes.int64, name="indices")
            self._values = convert_to_tensor(values, name="values")
            self._dense_shape = convert_to_tensor(_int64(dense_shape), dtype=dtypes.int64,
                                                  name="dense_shape")
        _check_parts(self._indices, self._values, self._dense_shape)
        self._shape = _static_shape(self._dense_shape)

    @classmethod
    def from_value(cls, sparse_tensor_value: Any) -> SparseTensor:
        """A SparseTensor of constants from a SparseTensorValue (a SparseTensor passes through)."""
        if isinstance(sparse_tensor_value, SparseTensor):
            return sparse_tensor_value
        if not is_sparse_value(sparse_tensor_value):
            raise TypeError(f"Neither a SparseTensor nor SparseTensorValue: {sparse_tensor_value!r}.")
        return cls(*_sparse_value_parts(sparse_tensor_value))

    indices = property(lambda self: self._indices)
    values = property(lambda self: self._values)
    dense_shape = property(lambda self: self._dense_shape)
    dtype = property(lambda self: self._values.dtype)
    op = property(lambda self: self._values.op)
    graph = property(lambda self: self._values.graph)
    device = property(lambda self: self._values.device)
    shape = property(lambda self: self._shape)

    def get_shape(self) -> TensorShape:
        return self._shape

    def set_shape(self, shape: Any) -> None:
        """Narrow the static shape (what sparse_placeholder does with a partly known shape)."""
        self._shape = self._shape.merge_with(as_shape(shape))

    def consumers(self) -> list:
        return sorted({id(op): op for t in (self._indices, self._values, self._dense_shape)
                       for op in t.consumers()}.values(), key=lambda op: op.name)

    def eval(self, feed_dict: dict | None = None, session: Any = None) -> SparseTensorValue:
        """The value in ``session`` or the default session (a SparseTensorValue)."""
        from zmtf.framework.graph import session_for

        return session_for(self.graph, session).run(self, feed_dict=feed_dict)

    def __repr__(self) -> str:
        return (f"SparseTensor(indices={self._indices!r}, values={self._values!r}, "
                f"dense_shape={self._dense_shape!r})")


def is_sparse(value: Any) -> bool:
    """True for a SparseTensor or a SparseTensorValue (TF's sparse_tensor.is_sparse)."""
    return isinstance(value, SparseTensor) or is_sparse_value(value)


def is_sparse_value(value: Any) -> bool:
    return isinstance(value, SparseTensorValue)


def convert_to_sparse(value: Any, what: str) -> SparseTensor:
    """A SparseTensor from a SparseTensor or a SparseTensorValue; anything else is a TypeError."""
    if isinstance(value, SparseTensor):
        return value
    if is_sparse_value(value):
        return SparseTensor.from_value(value)
    raise TypeError(f"{what}: expected a SparseTensor or SparseTensorValue, got {type(value).__name__} "
                    f"{value!r}")


def sparse_feed_parts(value: Any, tensor: SparseTensor) -> tuple[Any, Any, Any]:
    """(indices, values, dense_shape) of a value fed for ``tensor``: a SparseTensorValue or a
    3-tuple, as TF1's feed_dict takes them."""
    if is_sparse_value(value):
        return _sparse_value_parts(value)
    if isinstance(value, (tuple, list)) and len(value) == 3:
        return value[0], value[1], value[2]
    raise TypeError(f"Cannot feed {type(value).__name__} for SparseTensor with values "
                    f"'{tensor.values.name}': feed a tf.SparseTensorValue or an "
                    f"(indices, values, dense_shape) tuple.")


def _sparse_value_parts(value: SparseTensorValue) -> tuple[Any, Any, Any]:
    return value.indices, value.values, value.dense_shape


def _int64(value: Any) -> Any:
    """Python lists and int arrays become int64 (TF's convert with dtype=int64 accepts them)."""
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return value
    array = np.asarray(value)
    if array.size == 0 or array.dtype.kind in "iu":
        return array.astype(np.int64)
    return value


def _check_parts(indices: Tensor, values: Tensor, dense_shape: Tensor) -> None:
    """TF's graph-time rank checks: indices rank 2, values and dense_shape rank 1."""
    for tensor, rank, what in ((indices, 2, "indices"), (values, 1, "values"),
                               (dense_shape, 1, "dense_shape")):
        if tensor.shape.ndims is not None and tensor.shape.ndims != rank:
            raise ValueError(f"SparseTensor: {what} must have rank {rank}, got shape {tensor.shape} "
                             f"({tensor.name})")


def constant_value(t: Tensor) -> np.ndarray | None:
    """The value of a Const, seen through Identity ops (what dense_shape copies are); else None."""
    while t.op.type == "Identity":
        t = t.op.inputs[0]
    return np.asarray(t.op.get_attr("value")) if t.op.type == "Const" else None


def known_dims(shape: Tensor) -> list[int | None] | None:
    """The dims of a constant shape tensor, None where it holds -1 (unknown); else None."""
    known = constant_value(shape)
    return None if known is None else [None if d < 0 else int(d) for d in known.reshape(-1)]


def _static_shape(dense_shape: Tensor) -> TensorShape:
    """The shape when dense_shape is a constant; else the rank its length gives, dims unknown."""
    known = known_dims(dense_shape)
    if known is not None:
        return TensorShape(known)
    rank = dense_shape.shape.as_list()[0] if dense_shape.shape.ndims == 1 else None
    return TensorShape(None) if rank is None else TensorShape([None] * rank)


__all__ = ["SparseTensor", "SparseTensorValue", "constant_value", "convert_to_sparse",
           "is_sparse", "is_sparse_value", "known_dims", "sparse_feed_parts"]

"""numeric_column and bucketized_column: real-valued features, as they are or bucketed."""

from __future__ import annotations

import collections
from typing import Any, Callable

import numpy as np

from zmtf.framework import dtypes
from zmtf.feature_column.base import CategoricalColumn, DenseColumn, LazyBuilder
from zmtf.ops import array_ops, math_ops
from zmtf.ops.composite_ops import range_
from zmtf.ops.parsing_ops import FixedLenFeature
from zmtf.ops.sparse_cross_ops import bucketize
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.framework.tensor_shape import TensorShape


def check_key(key: Any) -> None:
    if not isinstance(key, str):
        raise ValueError(f"key must be a string. Got: type {type(key)}. Given key: {key}.")


def _check_shape(shape: Any, key: str) -> tuple:
    shape = tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
    for dimension in shape:
        if not isinstance(dimension, int):
            raise TypeError(f"shape dimensions must be integer. shape: {shape}, key: {key}")
        if dimension < 1:
            raise ValueError(f"shape dimensions must be greater than 0. shape: {shape}, key: {key}")
    return shape


def _check_default_value(shape: tuple, default_value: Any, dtype: dtypes.DType, key: str) -> Any:
    """The default as a nested tuple of ``shape`` (a scalar is repeated), or None."""
    if default_value is None:
        return None
    value = np.asarray(default_value)
    if value.dtype.kind not in "iuf" or (value.dtype.kind == "f" and not dtype.is_floating):
        raise TypeError(f"default_value must be compatible with dtype. default_value: "
                        f"{default_value}, dtype: {dtype}, key: {key}")
    if value.ndim == 0:
        value = np.full(shape, value)
    elif value.shape != shape:
        raise ValueError(f"The shape of default_value must be equal to given shape. "
                         f"default_value: {default_value}, shape: {shape}, key: {key}")
    return _as_tuple(value.tolist())


def _as_tuple(value: Any) -> Any:
    return tuple(_as_tuple(v) for v in value) if isinstance(value, list) else value


class NumericColumn(DenseColumn, collections.namedtuple(
        "NumericColumn", ["key", "shape", "default_value", "dtype", "normalizer_fn"])):
    """See ``numeric_column``."""

    name = property(lambda self: self.key)

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: FixedLenFeature(self.shape, self.dtype, self.default_value)}

    def _transform_feature(self, inputs: LazyBuilder) -> Any:
        input_tensor = inputs.get(self.key)
        if isinstance(input_tensor, SparseTensor):
            raise ValueError(f"The corresponding Tensor of numerical column must be a Tensor. "
                             f"SparseTensor is not supported. key: {self.key}")
        if self.normalizer_fn is not None:
            input_tensor = self.normalizer_fn(input_tensor)
        return math_ops.cast(input_tensor, dtypes.float32)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(self.shape)

    def _get_dense_tensor(self, inputs: LazyBuilder, weight_collections: Any = None,
                          trainable: Any = None) -> Any:
        return inputs.get(self)


def numeric_column(key: str, shape: Any = (1,), default_value: Any = None,
                   dtype: Any = dtypes.float32, normalizer_fn: Callable | None = None) -> NumericColumn:
    """A real-valued feature of ``shape`` per example (cast to float32), optionally passed
    through ``normalizer_fn`` first; ``default_value`` fills it in when parsing examples."""
    shape = _check_shape(shape, key)
    dtype = dtypes.as_dtype(dtype)
    if not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype must be convertible to float. dtype: {dtype}, key: {key}")
    default_value = _check_default_value(shape, default_value, dtype, key)
    if normalizer_fn is not None and not callable(normalizer_fn):
        raise TypeError(f"normalizer_fn must be a callable. Given: {normalizer_fn}")
    check_key(key)
    return NumericColumn(key, shape, default_value, dtype, normalizer_fn)


class BucketizedColumn(DenseColumn, CategoricalColumn, collections.namedtuple(
        "BucketizedColumn", ["source_column", "boundaries"])):
    """See ``bucketized_column``: dense as one-hot buckets, categorical as bucket ids."""

    name = property(lambda self: f"{self.source_column.name}_bucketized")

    @property
    def _parse_example_spec(self) -> dict:
        return self.source_column._parse_example_spec

    def _transform_feature(self, inputs: LazyBuilder) -> Any:
        return bucketize(inputs.get(self.source_column), self.boundaries)

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape(tuple(self.source_column.shape) + (len(self.boundaries) + 1,))

    def _get_dense_tensor(self, inputs: LazyBuilder, weight_collections: Any = None,
                          trainable: Any = None) -> Any:
        return array_ops.one_hot(math_ops.cast(inputs.get(self), dtypes.int64),
                                 depth=len(self.boundaries) + 1, on_value=1.0, off_value=0.0)

    @property
    def _num_buckets(self) -> int:
        return (len(self.boundaries) + 1) * self.source_column.shape[0]

    def _get_sparse_tensors(self, inputs: LazyBuilder, weight_collections: Any = None,
                            trainable: Any = None) -> Any:
        """Each source element's bucket, offset by (buckets) * its position in the row."""
        input_tensor = inputs.get(self)
        batch_size = array_ops.shape(input_tensor)[0]
        width = self.source_column.shape[0]
        flat = range_(0, batch_size * width)   # row-major positions: row = // width, col = % width
        rows, cols = math_ops.floordiv(flat, width), math_ops.floormod(flat, width)
        ids = array_ops.reshape(input_tensor, (-1,)) + (len(self.boundaries) + 1) * cols
        indices = math_ops.cast(array_ops.transpose(array_ops.stack((rows, cols))), dtypes.int64)
        dense_shape = math_ops.cast(array_ops.stack([batch_size, width]), dtypes.int64)
        return CategoricalColumn.IdWeightPair(SparseTensor(indices, ids, dense_shape), None)


def bucketized_column(source_column: Any, boundaries: Any) -> BucketizedColumn:
    """``source_column`` (a 1-D numeric_column) cut at the sorted ``boundaries``: bucket i
    holds boundaries[i-1] <= x < boundaries[i]."""
    if not isinstance(source_column, NumericColumn):
        raise ValueError(f"source_column must be a column generated with numeric_column(). "
                         f"Given: {source_column}")
    if len(source_column.shape) > 1:
        raise ValueError(f"source_column must be one-dimensional column. Given: {source_column}")
    if not boundaries:
        raise ValueError("boundaries must not be empty.")
    if not isinstance(boundaries, (list, tuple)):
        raise ValueError("boundaries must be a sorted list.")
    if any(a >= b for a, b in zip(boundaries, boundaries[1:])):
        raise ValueError("boundaries must be a sorted list.")
    return BucketizedColumn(source_column, tuple(boundaries))

"""What every feature column shares: the column kinds, the per-call transformation cache
(``LazyBuilder``) and the conversion of dense categorical inputs to SparseTensors."""

from __future__ import annotations

import collections
from typing import Any

from zmtf.framework import dtypes
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.selection_ops import where
from zmtf.ops.sequence_ops import gather_nd
from zmtf.ops.sparse_ops import sparse_reshape
from zmtf.framework.scopes import name_scope
from zmtf.framework.sparse_tensor import SparseTensor, is_sparse_value


class FeatureColumn:
    """A column: ``name``, ``_parse_example_spec`` and ``_transform_feature(builder)``."""

    __slots__ = ()

    @property
    def _var_scope_name(self) -> str:
        """The variable scope input_layer / linear_model open for this column."""
        return self.name


class DenseColumn(FeatureColumn):
    """A column input_layer can take: ``_variable_shape`` and ``_get_dense_tensor``."""

    __slots__ = ()


class CategoricalColumn(FeatureColumn):
    """A column of int64 ids in [0, ``_num_buckets``): ``_get_sparse_tensors`` gives an
    IdWeightPair of SparseTensors (weights None: every id weighs 1)."""

    __slots__ = ()
    IdWeightPair = collections.namedtuple("IdWeightPair", ["id_tensor", "weight_tensor"])

    def _get_sparse_tensors(self, inputs: LazyBuilder, weight_collections: Any = None,
                            trainable: Any = None) -> Any:
        return CategoricalColumn.IdWeightPair(inputs.get(self), None)


def convert_to_tensor_or_sparse(value: Any) -> Any:
    if isinstance(value, SparseTensor):
        return value
    if is_sparse_value(value):
        return SparseTensor.from_value(value)
    return convert_to_tensor(value)


class LazyBuilder:
    """The features of one input_layer / linear_model call, and each column's transform of
    them, computed once and cached (so columns sharing an input share its ops)."""

    def __init__(self, features: dict) -> None:
        self._features = dict(features)
        self._feature_tensors: dict = {}

    def get(self, key: Any) -> Any:
        """The raw feature ``key`` (a str; rank 1 made rank 2) or a column's transform."""
        if key in self._feature_tensors:
            return self._feature_tensors[key]
        if key in self._features:
            self._feature_tensors[key] = self._raw_feature(key)
            return self._feature_tensors[key]
        if isinstance(key, str):
            raise ValueError(f"Feature {key} is not in features dictionary.")
        if not isinstance(key, FeatureColumn):
            raise TypeError(f'"key" must be either a "str" or "_FeatureColumn". Provided: {key}')
        transformed = key._transform_feature(self)
        if transformed is None:
            raise ValueError(f"Column {key.name} is not supported.")
        self._feature_tensors[key] = transformed
        return transformed

    def _raw_feature(self, key: str) -> Any:
        feature = convert_to_tensor_or_sparse(self._features[key])
        rank = feature.get_shape().ndims
        if rank is None:
            raise ValueError(f"Feature (key: {key}) has unknown rank; zmtf's feature columns need "
                             f"a known rank (give the placeholder a shape, e.g. [None] or "
                             f"[None, k]). Given: {feature}")
        if rank == 0:
            raise ValueError(f"Feature (key: {key}) cannot have rank 0. Given: {feature}")
        if rank != 1:
            return feature
        if isinstance(feature, SparseTensor):
            one = convert_to_tensor(1, dtype=dtypes.int64)
            return sparse_reshape(feature, array_ops.stack([feature.dense_shape[0], one]))
        return array_ops.expand_dims(feature, -1)


def to_sparse_input_and_drop_ignore_values(input_tensor: Any, ignore_value: Any = None) -> Any:
    """A SparseTensor passes through; a dense one becomes sparse without its ``ignore_value``
    cells ('' for strings, -1 for ints by default: TF's marks of a missing value)."""
    input_tensor = convert_to_tensor_or_sparse(input_tensor)
    if isinstance(input_tensor, SparseTensor):
        return input_tensor
    with name_scope(None, "to_sparse_input"):
        if ignore_value is None:
            if input_tensor.dtype == dtypes.string:
                ignore_value = ""
            elif input_tensor.dtype.is_integer:
                ignore_value = -1
            else:
                ignore_value = input_tensor.dtype.np()
        ignore = convert_to_tensor(ignore_value, dtype=input_tensor.dtype, name="ignore_value") \
            if input_tensor.dtype == dtypes.string else \
            math_ops.cast(ignore_value, input_tensor.dtype, name="ignore_value")
        indices = where(math_ops.not_equal(input_tensor, ignore), name="indices")
        sparse = SparseTensor(indices=indices, values=gather_nd(input_tensor, indices, name="values"),
                              dense_shape=array_ops.shape(input_tensor, out_type=dtypes.int64,
                                                          name="dense_shape"))
        sparse.set_shape(input_tensor.shape)   # what TF infers from the Shape op
        return sparse


def assert_string_or_int(dtype: dtypes.DType, prefix: str) -> None:
    if dtype != dtypes.string and not dtype.is_integer:
        raise ValueError(f"{prefix} dtype must be string or integer. dtype: {dtype}.")


def normalize_feature_columns(feature_columns: Any) -> list:
    """The columns as a non-empty list of FeatureColumns with distinct names (TF's checks)."""
    if isinstance(feature_columns, FeatureColumn):
        feature_columns = [feature_columns]
    if isinstance(feature_columns, dict):
        raise ValueError("Expected feature_columns to be iterable, found dict.")
    feature_columns = list(feature_columns)
    for column in feature_columns:
        if not isinstance(column, FeatureColumn):
            raise ValueError(f"Items of feature_columns must be a _FeatureColumn. Given (type "
                             f"{type(column)}): {column}.")
    if not feature_columns:
        raise ValueError("feature_columns must not be empty.")
    by_name: dict = {}
    for column in feature_columns:
        if column.name in by_name:
            raise ValueError(f"Duplicate feature column name found for columns: {column} and "
                             f"{by_name[column.name]}. This usually means that these columns refer "
                             f"to same base feature. Either one must be discarded or a duplicated "
                             f"but renamed item must be inserted in features dict.")
        by_name[column.name] = column
    return feature_columns

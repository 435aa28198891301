"""The categorical columns: features as int64 ids, from a hash of each value, a vocabulary
(list or file, with out-of-vocabulary buckets), the values themselves (identity), and the
same ids with per-id weights (weighted_categorical_column)."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from zmtf.platform import gfile
from zmtf.feature_column.base import (
    CategoricalColumn, LazyBuilder, assert_string_or_int, convert_to_tensor_or_sparse,
    to_sparse_input_and_drop_ignore_values,
)
from zmtf.feature_column.dense_columns import check_key
from zmtf.framework import dtypes
from zmtf.ops import array_ops, math_ops, string_ops
from zmtf.ops.parsing_ops import VarLenFeature
from zmtf.ops.selection_ops import where
from zmtf.ops.vocabulary_tables import index_table_from_file, index_table_from_tensor
from zmtf.framework.sparse_tensor import SparseTensor


def _ids_input(column: Any, inputs: LazyBuilder) -> SparseTensor:
    """The column's raw feature as a SparseTensor of a dtype the column accepts."""
    input_tensor = to_sparse_input_and_drop_ignore_values(inputs.get(column.key))
    if column.dtype.is_integer != input_tensor.dtype.is_integer:
        raise ValueError(f"Column dtype and SparseTensors dtype must be compatible. key: "
                         f"{column.key}, column dtype: {column.dtype}, tensor dtype: "
                         f"{input_tensor.dtype}")
    assert_string_or_int(input_tensor.dtype, prefix=f"column_name: {column.key} input_tensor")
    return input_tensor


def _with_values(sparse: SparseTensor, values: Any) -> SparseTensor:
    """``sparse`` with other values (and its static shape)."""
    out = SparseTensor(sparse.indices, values, sparse.dense_shape)
    out.set_shape(sparse.shape)
    return out


class HashedCategoricalColumn(CategoricalColumn, collections.namedtuple(
        "HashedCategoricalColumn", ["key", "hash_bucket_size", "dtype"])):
    """See ``categorical_column_with_hash_bucket``."""

    name = property(lambda self: self.key)
    _num_buckets = property(lambda self: self.hash_bucket_size)

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, inputs: LazyBuilder) -> SparseTensor:
        input_tensor = _ids_input(self, inputs)
        values = input_tensor.values if self.dtype == dtypes.string else \
            string_ops.as_string(input_tensor.values)
        return _with_values(input_tensor, string_ops.string_to_hash_bucket_fast(
            values, self.hash_bucket_size, name="lookup"))


def categorical_column_with_hash_bucket(key: str, hash_bucket_size: int,
                                        dtype: Any = dtypes.string) -> HashedCategoricalColumn:
    """Ids ``Fingerprint64(value) % hash_bucket_size`` (ints hashed as their decimal text), as
    TF's string_to_hash_bucket_fast computes them."""
    if hash_bucket_size is None:
        raise ValueError(f"hash_bucket_size must be set. key: {key}")
    if hash_bucket_size < 1:
        raise ValueError(f"hash_bucket_size must be at least 1. hash_bucket_size: "
                         f"{hash_bucket_size}, key: {key}")
    check_key(key)
    dtype = dtypes.as_dtype(dtype)
    assert_string_or_int(dtype, prefix=f"column_name: {key}")
    return HashedCategoricalColumn(key, hash_bucket_size, dtype)


def _vocabulary_lookup(column: Any, inputs: LazyBuilder, make_table: Any) -> SparseTensor:
    input_tensor = _ids_input(column, inputs)
    key_dtype = column.dtype
    if input_tensor.dtype.is_integer:
        key_dtype = dtypes.int64
        input_tensor = _with_values(input_tensor, math_ops.cast(input_tensor.values, dtypes.int64))
    table = make_table(key_dtype, f"{column.key}_lookup")
    return _with_values(input_tensor, table.lookup(input_tensor.values))


class VocabularyListCategoricalColumn(CategoricalColumn, collections.namedtuple(
        "VocabularyListCategoricalColumn",
        ["key", "vocabulary_list", "dtype", "default_value", "num_oov_buckets"])):
    """See ``categorical_column_with_vocabulary_list``."""

    name = property(lambda self: self.key)
    _num_buckets = property(lambda self: len(self.vocabulary_list) + self.num_oov_buckets)

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, inputs: LazyBuilder) -> SparseTensor:
        return _vocabulary_lookup(self, inputs, lambda key_dtype, name: index_table_from_tensor(
            vocabulary_list=tuple(self.vocabulary_list), default_value=self.default_value,
            num_oov_buckets=self.num_oov_buckets, dtype=key_dtype, name=name))


def _vocabulary_dtype(vocabulary_list: Any) -> dtypes.DType:
    kind = np.asarray(vocabulary_list).dtype.kind
    return dtypes.string if kind in "USO" else dtypes.as_dtype(np.asarray(vocabulary_list).dtype)


def _check_oov(key: str, num_oov_buckets: int, default_value: Any, no_default: Any) -> None:
    if num_oov_buckets:
        if default_value != no_default:
            raise ValueError(f"Can't specify both num_oov_buckets and default_value in {key}.")
        if num_oov_buckets < 0:
            raise ValueError(f"Invalid num_oov_buckets {num_oov_buckets} in {key}.")


def categorical_column_with_vocabulary_list(key: str, vocabulary_list: Any, dtype: Any = None,
                                            default_value: int = -1,
                                            num_oov_buckets: int = 0) -> VocabularyListCategoricalColumn:
    """Each value's position in ``vocabulary_list``; others get ``default_value`` or, with
    ``num_oov_buckets``, ``len(vocabulary_list) + Fingerprint64(value) % num_oov_buckets``."""
    if vocabulary_list is None or len(vocabulary_list) < 1:
        raise ValueError(f"vocabulary_list {vocabulary_list} must be non-empty, column_name: {key}")
    if len(set(vocabulary_list)) != len(vocabulary_list):
        raise ValueError(f"Duplicate keys in vocabulary_list {vocabulary_list}, column_name: {key}")
    vocabulary_dtype = _vocabulary_dtype(vocabulary_list)
    _check_oov(key, num_oov_buckets, default_value, -1)
    assert_string_or_int(vocabulary_dtype, prefix=f"column_name: {key} vocabulary")
    if dtype is None:
        dtype = vocabulary_dtype
    elif dtypes.as_dtype(dtype).is_integer != vocabulary_dtype.is_integer:
        raise ValueError(f"dtype {dtypes.as_dtype(dtype)} and vocabulary dtype {vocabulary_dtype} "
                         f"do not match, column_name: {key}")
    dtype = dtypes.as_dtype(dtype)
    assert_string_or_int(dtype, prefix=f"column_name: {key}")
    check_key(key)
    return VocabularyListCategoricalColumn(key, tuple(vocabulary_list), dtype, default_value,
                                           num_oov_buckets)


class VocabularyFileCategoricalColumn(CategoricalColumn, collections.namedtuple(
        "VocabularyFileCategoricalColumn",
        ["key", "vocabulary_file", "vocabulary_size", "num_oov_buckets", "dtype",
         "default_value"])):
    """See ``categorical_column_with_vocabulary_file``."""

    name = property(lambda self: self.key)
    _num_buckets = property(lambda self: self.vocabulary_size + self.num_oov_buckets)

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(self.dtype)}

    def _transform_feature(self, inputs: LazyBuilder) -> SparseTensor:
        return _vocabulary_lookup(self, inputs, lambda key_dtype, name: index_table_from_file(
            vocabulary_file=self.vocabulary_file, num_oov_buckets=self.num_oov_buckets,
            vocab_size=self.vocabulary_size, default_value=self.default_value,
            key_dtype=key_dtype, name=name))


def categorical_column_with_vocabulary_file(key: str, vocabulary_file: str,
                                            vocabulary_size: int | None = None,
                                            num_oov_buckets: int = 0, default_value: Any = None,
                                            dtype: Any = dtypes.string) -> VocabularyFileCategoricalColumn:
    """Like categorical_column_with_vocabulary_list, the vocabulary one value a line of
    ``vocabulary_file`` (its first ``vocabulary_size`` lines; all of them by default)."""
    if not vocabulary_file:
        raise ValueError(f"Missing vocabulary_file in {key}.")
    if vocabulary_size is None:
        if not gfile.Exists(vocabulary_file):
            raise ValueError(f"vocabulary_file in {key} does not exist.")
        with gfile.GFile(vocabulary_file, "rb") as f:
            vocabulary_size = sum(1 for _ in f)
    if vocabulary_size < 1:
        raise ValueError(f"Invalid vocabulary_size in {key}.")
    _check_oov(key, num_oov_buckets, default_value, None)
    dtype = dtypes.as_dtype(dtype)
    assert_string_or_int(dtype, prefix=f"column_name: {key}")
    check_key(key)
    return VocabularyFileCategoricalColumn(key, vocabulary_file, vocabulary_size,
                                           0 if num_oov_buckets is None else num_oov_buckets,
                                           dtype, -1 if default_value is None else default_value)


class IdentityCategoricalColumn(CategoricalColumn, collections.namedtuple(
        "IdentityCategoricalColumn", ["key", "number_buckets", "default_value"])):
    """See ``categorical_column_with_identity``."""

    name = property(lambda self: self.key)
    num_buckets = property(lambda self: self.number_buckets)
    _num_buckets = num_buckets

    @property
    def _parse_example_spec(self) -> dict:
        return {self.key: VarLenFeature(dtypes.int64)}

    def _transform_feature(self, inputs: LazyBuilder) -> SparseTensor:
        input_tensor = to_sparse_input_and_drop_ignore_values(inputs.get(self.key))
        if not input_tensor.dtype.is_integer:
            raise ValueError(f"Invalid input, not integer. key: {self.key} dtype: "
                             f"{input_tensor.dtype}")
        values = input_tensor.values
        if values.dtype != dtypes.int64:
            values = math_ops.cast(values, dtypes.int64, name="values")
        if self.default_value is not None:
            out_of_range = math_ops.logical_or(values < 0, values >= self.number_buckets,
                                               name="out_of_range")
            defaults = array_ops.fill(array_ops.shape(values),
                                      math_ops.cast(self.default_value, dtypes.int64),
                                      name="default_values")
            values = where(out_of_range, defaults, values)
        return _with_values(input_tensor, values)


def categorical_column_with_identity(key: str, num_buckets: int,
                                     default_value: int | None = None) -> IdentityCategoricalColumn:
    """The int values themselves as ids in [0, num_buckets); others become ``default_value``
    (without one, an id out of range fails the lookup that uses it)."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets {num_buckets} < 1, column_name {key}")
    if default_value is not None and (default_value < 0 or default_value >= num_buckets):
        raise ValueError(f"default_value {default_value} not in range [0, {num_buckets}), "
                         f"column_name {key}")
    check_key(key)
    return IdentityCategoricalColumn(key, num_buckets, default_value)


class WeightedCategoricalColumn(CategoricalColumn, collections.namedtuple(
        "WeightedCategoricalColumn", ["categorical_column", "weight_feature_key", "dtype"])):
    """See ``weighted_categorical_column``."""

    name = property(lambda self: f"{self.categorical_column.name}_weighted_by_"
                                 f"{self.weight_feature_key}")
    _num_buckets = property(lambda self: self.categorical_column._num_buckets)

    @property
    def _parse_example_spec(self) -> dict:
        config = dict(self.categorical_column._parse_example_spec)
        if self.weight_feature_key in config:
            raise ValueError(f"Parse config {config[self.weight_feature_key]} already exists for "
                             f"{self.weight_feature_key}.")
        config[self.weight_feature_key] = VarLenFeature(self.dtype)
        return config

    def _transform_feature(self, inputs: LazyBuilder) -> tuple:
        weight_tensor = convert_to_tensor_or_sparse(inputs.get(self.weight_feature_key))
        if self.dtype != weight_tensor.dtype:
            raise ValueError(f"Bad dtype, expected {self.dtype}, but got {weight_tensor.dtype}.")
        if not isinstance(weight_tensor, SparseTensor):
            weight_tensor = to_sparse_input_and_drop_ignore_values(weight_tensor, ignore_value=0.0)
        if not weight_tensor.dtype.is_floating:
            weight_tensor = _with_values(weight_tensor,
                                         math_ops.cast(weight_tensor.values, dtypes.float32))
        return inputs.get(self.categorical_column), weight_tensor

    def _get_sparse_tensors(self, inputs: LazyBuilder, weight_collections: Any = None,
                            trainable: Any = None) -> Any:
        ids, weights = inputs.get(self)
        return CategoricalColumn.IdWeightPair(ids, weights)


def weighted_categorical_column(categorical_column: Any, weight_feature_key: str,
                                dtype: Any = dtypes.float32) -> WeightedCategoricalColumn:
    """``categorical_column``'s ids, each weighted by the value at the same index of the
    feature ``weight_feature_key`` (a dense weight of 0 drops its id)."""
    dtype = None if dtype is None else dtypes.as_dtype(dtype)
    if dtype is None or not (dtype.is_integer or dtype.is_floating):
        raise ValueError(f"dtype {dtype} is not convertible to float.")
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"categorical_column must be a categorical column, given: "
                         f"{categorical_column}")
    return WeightedCategoricalColumn(categorical_column, weight_feature_key, dtype)

"""The dense views of categorical columns: indicator_column (multi-hot counts or weights)
and embedding_column / shared_embedding_columns (learned vectors combined per example by
safe_embedding_lookup_sparse, so partitioned tables on ps tasks work as in TF)."""

from __future__ import annotations

import collections
import math
from typing import Any

from zmtf.feature_column.base import CategoricalColumn, DenseColumn, LazyBuilder
from zmtf.framework import dtypes
from zmtf.framework.graph import get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.embedding_sparse_ops import COMBINERS, safe_embedding_lookup_sparse
from zmtf.ops.init_ops import TruncatedNormal
from zmtf.ops.sequence_ops import scatter_nd
from zmtf.ops.sparse_ops import sparse_tensor_to_dense
from zmtf.framework.scopes import name_scope
from zmtf.framework.tensor_shape import TensorShape
from zmtf.ops.variable_scope import get_variable
from zmtf.training.warm_start import init_from_checkpoint


class IndicatorColumn(DenseColumn, collections.namedtuple("IndicatorColumn",
                                                          ["categorical_column"])):
    """See ``indicator_column``."""

    name = property(lambda self: f"{self.categorical_column.name}_indicator")

    @property
    def _parse_example_spec(self) -> dict:
        return self.categorical_column._parse_example_spec

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([1, self.categorical_column._num_buckets])

    def _transform_feature(self, inputs: LazyBuilder) -> Any:
        ids, weights = self.categorical_column._get_sparse_tensors(inputs)
        depth = self.categorical_column._num_buckets
        if weights is not None:   # each id's weight at (row, id); repeated ids add up
            rows = ids.indices[:, 0]
            at = array_ops.stack([rows, math_ops.cast(ids.values, dtypes.int64)], axis=1)
            shape = array_ops.stack([ids.dense_shape[0], math_ops.cast(depth, dtypes.int64)])
            multi_hot = scatter_nd(at, weights.values, shape)
        else:
            dense_ids = sparse_tensor_to_dense(ids, default_value=-1)
            one_hot = array_ops.one_hot(dense_ids, depth=depth, on_value=1.0, off_value=0.0)
            multi_hot = math_ops.reduce_sum(one_hot, axis=[-2])
        multi_hot.set_shape([ids.shape.as_list()[0] if ids.shape.ndims else None, depth])
        return multi_hot

    def _get_dense_tensor(self, inputs: LazyBuilder, weight_collections: Any = None,
                          trainable: Any = None) -> Any:
        return inputs.get(self)


def indicator_column(categorical_column: Any) -> IndicatorColumn:
    """A categorical column as a [batch, num_buckets] multi-hot tensor: how often each id
    occurs in the example (its summed weight, for a weighted column)."""
    if not isinstance(categorical_column, CategoricalColumn):
        raise ValueError(f"Unsupported input type. Input must be a CategoricalColumn. Given: "
                         f"{categorical_column}")
    return IndicatorColumn(categorical_column)


def _lookup(column: Any, inputs: LazyBuilder, weights_var: Any) -> Any:
    ids, sp_weights = column.categorical_column._get_sparse_tensors(inputs)
    if column.ckpt_to_load_from is not None:
        init_from_checkpoint(column.ckpt_to_load_from, {column.tensor_name_in_ckpt: weights_var})
    return safe_embedding_lookup_sparse(weights_var, ids, sp_weights, combiner=column.combiner,
                                        name=f"{column.name}_weights")


_EMBEDDING_FIELDS = ["categorical_column", "dimension", "combiner", "initializer",
                     "ckpt_to_load_from", "tensor_name_in_ckpt", "max_norm", "trainable",
                     "use_safe_embedding_lookup"]


class EmbeddingColumn(DenseColumn, collections.namedtuple("EmbeddingColumn", _EMBEDDING_FIELDS)):
    """See ``embedding_column``."""

    name = property(lambda self: f"{self.categorical_column.name}_embedding")

    @property
    def _parse_example_spec(self) -> dict:
        return self.categorical_column._parse_example_spec

    @property
    def _variable_shape(self) -> TensorShape:
        return TensorShape([self.dimension])

    def _transform_feature(self, inputs: LazyBuilder) -> Any:
        return inputs.get(self.categorical_column)

    def _get_dense_tensor(self, inputs: LazyBuilder, weight_collections: Any = None,
                          trainable: Any = None) -> Any:
        weights_var = get_variable(
            "embedding_weights", shape=(self.categorical_column._num_buckets, self.dimension),
            dtype=dtypes.float32, initializer=self.initializer,
            trainable=self.trainable and (trainable is None or trainable),
            collections=weight_collections)
        return _lookup(self, inputs, weights_var)


def _check_embedding_args(dimension: Any, combiner: str, initializer: Any, ckpt_to_load_from: Any,
                          tensor_name_in_ckpt: Any, max_norm: Any, column_name: str) -> Any:
    """TF's argument checks; the initializer to use (truncated normal, stddev 1/sqrt(dim))."""
    if dimension is None or dimension < 1:
        raise ValueError(f"Invalid dimension {dimension}.")
    if (ckpt_to_load_from is None) != (tensor_name_in_ckpt is None):
        raise ValueError("Must specify both `ckpt_to_load_from` and `tensor_name_in_ckpt` or "
                         "none of them.")
    if initializer is not None and not callable(initializer):
        raise ValueError(f"initializer must be callable if specified. Embedding of column_name: "
                         f"{column_name}")
    if combiner not in COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if max_norm is not None:
        raise NotImplementedError(f"embedding_column(max_norm={max_norm}) for {column_name}: "
                                  f"zmtf's embedding lookups do not clip by norm; leave max_norm "
                                  f"None (or clip the looked-up rows with tf.clip_by_norm)")
    return initializer or TruncatedNormal(mean=0.0, stddev=1 / math.sqrt(dimension))


def embedding_column(categorical_column: Any, dimension: int, combiner: str = "mean",
                     initializer: Any = None, ckpt_to_load_from: Any = None,
                     tensor_name_in_ckpt: Any = None, max_norm: Any = None,
                     trainable: bool = True, use_safe_embedding_lookup: bool = True) -> EmbeddingColumn:
    """A categorical column as a learned ``dimension``-vector per example: the rows of an
    [num_buckets, dimension] "embedding_weights" variable at its ids, combined by
    ``combiner`` ("mean", "sqrtn" or "sum"); an example with no ids gets zeros."""
    initializer = _check_embedding_args(dimension, combiner, initializer, ckpt_to_load_from,
                                        tensor_name_in_ckpt, max_norm, categorical_column.name)
    return EmbeddingColumn(categorical_column, dimension, combiner, initializer,
                           ckpt_to_load_from, tensor_name_in_ckpt, max_norm, trainable,
                           use_safe_embedding_lookup)


class SharedEmbeddingColumn(DenseColumn, collections.namedtuple(
        "_SharedEmbeddingColumn", _EMBEDDING_FIELDS[:4] + ["shared_embedding_collection_name"]
        + _EMBEDDING_FIELDS[4:])):
    """See ``shared_embedding_columns``: one of several columns over one embedding variable,
    found again through the graph collection ``shared_embedding_collection_name``."""

    name = property(lambda self: f"{self.categorical_column.name}_shared_embedding")
    _var_scope_name = property(lambda self: self.shared_embedding_collection_name)
    _parse_example_spec = EmbeddingColumn._parse_example_spec
    _variable_shape = EmbeddingColumn._variable_shape
    _transform_feature = EmbeddingColumn._transform_feature

    def _get_dense_tensor(self, inputs: LazyBuilder, weight_collections: Any = None,
                          trainable: Any = None) -> Any:
        with name_scope(None, self.name):
            shared = get_default_graph().get_collection(self.shared_embedding_collection_name)
            if shared:
                weights_var = shared[0]
            else:
                weights_var = get_variable(
                    "embedding_weights",
                    shape=(self.categorical_column._num_buckets, self.dimension),
                    dtype=dtypes.float32, initializer=self.initializer,
                    trainable=self.trainable and (trainable is None or trainable),
                    collections=weight_collections)
                get_default_graph().add_to_collection(self.shared_embedding_collection_name,
                                                      weights_var)
            return _lookup(self, inputs, weights_var)


def shared_embedding_columns(categorical_columns: Any, dimension: int, combiner: str = "mean",
                             initializer: Any = None, shared_embedding_collection_name: Any = None,
                             ckpt_to_load_from: Any = None, tensor_name_in_ckpt: Any = None,
                             max_norm: Any = None, trainable: bool = True,
                             use_safe_embedding_lookup: bool = True) -> list:
    """Embedding columns for ``categorical_columns`` (same kind, same bucket count) that share
    one embedding variable, named after all of them ("a_b_shared_embedding")."""
    columns = list(categorical_columns)
    initializer = _check_embedding_args(dimension, combiner, initializer, ckpt_to_load_from,
                                        tensor_name_in_ckpt, max_norm,
                                        columns[0].name if columns else "")
    first = columns[0]
    if not isinstance(first, CategoricalColumn):
        raise ValueError(f"All categorical_columns must be subclasses of _CategoricalColumn. "
                         f"Given: {first}, of type: {type(first)}")
    for column in columns[1:]:
        if type(column) is not type(first):
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must have "
                             f"the same type, or be weighted_categorical_column of the same type. "
                             f"Given column: {first} of type: {type(first)} does not match given "
                             f"column: {column} of type: {type(column)}")
        if column._num_buckets != first._num_buckets:
            raise ValueError(f"To use shared_embedding_column, all categorical_columns must have "
                             f"the same number of buckets. Given column: {first} with buckets: "
                             f"{first._num_buckets} does not match column: {column} with "
                             f"buckets: {column._num_buckets}")
    collection = shared_embedding_collection_name or \
        "_".join(sorted(c.name for c in columns)) + "_shared_embedding"
    return [SharedEmbeddingColumn(c, dimension, combiner, initializer, collection,
                                  ckpt_to_load_from, tensor_name_in_ckpt, max_norm, trainable,
                                  use_safe_embedding_lookup) for c in columns]

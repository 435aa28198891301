"""input_layer, linear_model and make_parse_example_spec: where feature columns meet a
features dict (from tf.parse_example or fed tensors), with TF1's scopes and variable names."""

from __future__ import annotations

from typing import Any

from zmtf.feature_column.base import (
    CategoricalColumn, DenseColumn, FeatureColumn, LazyBuilder, normalize_feature_columns,
)
from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.ops import array_ops, math_ops, nn_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.embedding_sparse_ops import safe_embedding_lookup_sparse
from zmtf.ops.init_ops import Zeros
from zmtf.ops.sparse_ops import sparse_reshape
from zmtf.ops.variable_scope import get_variable, get_variable_scope, variable_scope


def _weight_collections(weight_collections: Any) -> list:
    collections = list(weight_collections or [])
    for key in (GraphKeys.GLOBAL_VARIABLES, GraphKeys.MODEL_VARIABLES):
        if key not in collections:
            collections.append(key)
    return collections


def _flat(tensor: Any, column: Any) -> Any:
    """The column's dense tensor as [batch, elements of its variable shape]."""
    elements = column._variable_shape.num_elements()
    flat = array_ops.reshape(tensor, array_ops.stack([array_ops.shape(tensor)[0], elements]))
    flat.set_shape([tensor.shape.as_list()[0] if tensor.shape.ndims else None, elements])
    return flat


def _scope_variables() -> list:
    return get_default_graph().get_collection(GraphKeys.GLOBAL_VARIABLES,
                                              scope=get_variable_scope().name)


def _check_batch_sizes(tensors: list, columns: list) -> None:
    """Outputs of known batch size must agree (TF's static check)."""
    expected, first = None, None
    for tensor, column in zip(tensors, columns):
        size = tensor.shape.as_list()[0] if tensor.shape.ndims else None
        if size is None:
            continue
        if expected is None:
            expected, first = size, column
        elif size != expected:
            raise ValueError(f"Batch size (first dimension) of each feature must be same. Batch "
                             f"size of columns ({first.name}, {column.name}): ({expected}, {size})")


def input_layer(features: dict, feature_columns: Any, weight_collections: Any = None,
                trainable: bool = True, cols_to_vars: dict | None = None,
                cols_to_output_tensors: dict | None = None) -> Any:
    """The dense input of a network: each column's dense tensor (columns sorted by name)
    flattened to [batch, n] and concatenated, under variable scope "input_layer"."""
    feature_columns = normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, DenseColumn):
            raise ValueError(f"Items of feature_columns must be a _DenseColumn. You can wrap a "
                             f"categorical column with an embedding_column or indicator_column. "
                             f"Given: {column}")
    collections = _weight_collections(weight_collections)
    with variable_scope(None, default_name="input_layer", values=list(features.values())):
        builder = LazyBuilder(features)
        outputs, ordered = [], []
        for column in sorted(feature_columns, key=lambda c: c.name):
            ordered.append(column)
            with variable_scope(None, default_name=column._var_scope_name):
                output = _flat(column._get_dense_tensor(builder, weight_collections=collections,
                                                        trainable=trainable), column)
                outputs.append(output)
                if cols_to_vars is not None:
                    cols_to_vars[column] = _scope_variables()
                if cols_to_output_tensors is not None:
                    cols_to_output_tensors[column] = output
        _check_batch_sizes(outputs, ordered)
        return array_ops.concat(outputs, 1)


def _dense_weighted_sum(column: Any, builder: LazyBuilder, units: int, collections: list,
                        trainable: bool) -> Any:
    tensor = _flat(column._get_dense_tensor(builder, weight_collections=collections,
                                            trainable=trainable), column)
    weight = get_variable("weights", shape=[column._variable_shape.num_elements(), units],
                          initializer=Zeros(), trainable=trainable, collections=collections)
    return math_ops.matmul(tensor, weight, name="weighted_sum")


def _categorical_weighted_sum(column: Any, builder: LazyBuilder, units: int, combiner: str,
                              collections: list, trainable: bool) -> Any:
    """A categorical column's weighted sum: its multi-hot row times the weights, computed as
    an embedding lookup of its ids (TF's way)."""
    ids, weights = column._get_sparse_tensors(builder, weight_collections=collections,
                                              trainable=trainable)
    ids = sparse_reshape(ids, array_ops.stack([ids.dense_shape[0], _minus_one()]))
    if weights is not None:
        weights = sparse_reshape(weights, array_ops.stack([weights.dense_shape[0], _minus_one()]))
    weight = get_variable("weights", shape=(column._num_buckets, units), initializer=Zeros(),
                          trainable=trainable, collections=collections)
    return safe_embedding_lookup_sparse(weight, ids, sparse_weights=weights, combiner=combiner,
                                        name="weighted_sum")


def _minus_one() -> Any:
    return constant(-1, dtype=dtypes.int64)


def linear_model(features: dict, feature_columns: Any, units: int = 1,
                 sparse_combiner: str = "sum", weight_collections: Any = None,
                 trainable: bool = True, cols_to_vars: dict | None = None) -> Any:
    """A linear prediction [batch, units]: for each column (sorted by name) its input times a
    zero-initialized "<column>/weights" variable, summed, plus "bias_weights". Categorical
    columns weigh their ids, combined by ``sparse_combiner`` ("sum", "mean" or "sqrtn")."""
    feature_columns = normalize_feature_columns(feature_columns)
    for column in feature_columns:
        if not isinstance(column, (DenseColumn, CategoricalColumn)):
            raise ValueError(f"Items of feature_columns must be either a _DenseColumn or "
                             f"_CategoricalColumn. Given: {column}")
    collections = _weight_collections(weight_collections)
    with variable_scope(None, default_name="linear_model"):
        builder = LazyBuilder(features)
        sums, ordered, found = [], [], {}
        for column in sorted(feature_columns, key=lambda c: c.name):
            ordered.append(column)
            with variable_scope(None, default_name=column._var_scope_name):
                if isinstance(column, CategoricalColumn):
                    sums.append(_categorical_weighted_sum(column, builder, units, sparse_combiner,
                                                          collections, trainable))
                else:
                    sums.append(_dense_weighted_sum(column, builder, units, collections, trainable))
                found[column] = _scope_variables()
        _check_batch_sizes(sums, ordered)
        no_bias = math_ops.add_n(sums, name="weighted_sum_no_bias")
        bias = get_variable("bias_weights", shape=[units], initializer=Zeros(),
                            trainable=trainable, collections=collections)
        found["bias"] = list(bias) if hasattr(bias, "_get_variable_list") else [bias]
        if cols_to_vars is not None:
            cols_to_vars.update(found)
        return nn_ops.bias_add(no_bias, bias, name="weighted_sum")


def make_parse_example_spec(feature_columns: Any) -> dict:
    """The ``features`` argument of tf.parse_example that feeds these columns: key ->
    FixedLenFeature / VarLenFeature, merged over the columns (conflicts refused)."""
    result: dict = {}
    for column in feature_columns:
        if not isinstance(column, FeatureColumn):
            raise ValueError(f"All feature_columns must be _FeatureColumn instances. Given: "
                             f"{column}")
        for key, value in column._parse_example_spec.items():
            if key in result and result[key] != value:
                raise ValueError(f"feature_columns contain different parse_spec for key {key}. "
                                 f"Given {value} and {result[key]}")
        result.update(column._parse_example_spec)
    return result

"""tf.nn.embedding_lookup_sparse and tf.nn.safe_embedding_lookup_sparse, as TF1 builds them.

The ids of a SparseTensor (one row of ids per example) are made unique, their rows looked up
with ``embedding_lookup`` (so params may be shards on ps tasks, each gathering its own rows),
spread back with ``gather`` and combined per example with ``segment_sum``. The gradient of
params is therefore an IndexedSlices of the looked-up rows only, and the optimizer updates
just those rows where they live.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.division_ops import div_no_nan
from zmtf.ops.embedding_ops import embedding_lookup
from zmtf.ops.segment_ops import segment_sum
from zmtf.ops.selection_ops import gather, where
from zmtf.ops.sparse_ops import sparse_fill_empty_rows, sparse_reshape, sparse_retain
from zmtf.ops.unique_ops import unique
from zmtf.framework.sparse_tensor import SparseTensor

COMBINERS = ("mean", "sqrtn", "sum")


def embedding_lookup_sparse(params: Any, sp_ids: Any, sp_weights: Any,
                            partition_strategy: str = "mod", name: str | None = None,
                            combiner: str | None = None, max_norm: Any = None) -> Tensor:
    """One embedding per row of ``sp_ids`` ([batch, k] int ids): the rows of ``params`` at its
    ids, weighted by ``sp_weights`` (None: weight 1) and combined by ``combiner`` ("mean",
    the default, "sum" or "sqrtn"). Rows of sp_ids past its last non-empty row are not output;
    an empty row in between gives zeros, as in TF1."""
    combiner = combiner or "mean"
    if combiner not in COMBINERS:
        raise ValueError(f"combiner must be one of 'mean', 'sqrtn' or 'sum', got {combiner}")
    if not isinstance(sp_ids, SparseTensor):
        raise TypeError(f"sp_ids must be SparseTensor, got {type(sp_ids)}")
    if sp_weights is not None and not isinstance(sp_weights, SparseTensor):
        raise TypeError(f"sp_weights must be either None or SparseTensor, got {type(sp_weights)}")
    shards = list(params) if hasattr(params, "_get_variable_list") or isinstance(params, (list, tuple)) \
        else [params]
    with get_default_graph().name_scope(name or "embedding_lookup_sparse"):
        segment_ids = math_ops.cast(sp_ids.indices[:, 0], dtypes.int32)
        ids, idx = unique(sp_ids.values)
        rows = gather(embedding_lookup(shards, ids, partition_strategy=partition_strategy,
                                       max_norm=max_norm), idx)
        weights = None if sp_weights is None else _broadcastable(sp_weights.values, rows)
        if weights is not None:
            rows = rows * math_ops.cast(weights, rows.dtype)
        return _combine(rows, weights, segment_ids, combiner)


def _broadcastable(weights: Tensor, rows: Tensor) -> Tensor:
    """The weights [n] reshaped to [n, 1, ...] to scale rows [n, d, ...]."""
    if rows.shape.ndims is None:
        raise ValueError("embedding_lookup_sparse needs params of known rank in zmtf")
    return array_ops.reshape(weights, [-1] + [1] * (rows.shape.ndims - 1))


def _combine(rows: Tensor, weights: Tensor | None, segment_ids: Tensor, combiner: str) -> Tensor:
    summed = segment_sum(rows, segment_ids)
    if combiner == "sum":
        return summed
    if weights is None:
        weights = array_ops.reshape(array_ops.ones_like(segment_ids, dtype=rows.dtype),
                                    [-1] + [1] * (rows.shape.ndims - 1))
    weights = math_ops.cast(weights, rows.dtype)
    if combiner == "mean":
        return div_no_nan(summed, segment_sum(weights, segment_ids))
    return div_no_nan(summed, math_ops.sqrt(segment_sum(math_ops.square(weights), segment_ids)))


def safe_embedding_lookup_sparse(embedding_weights: Any, sparse_ids: Any, sparse_weights: Any = None,
                                 combiner: str = "mean", default_id: Any = None,
                                 name: str | None = None, partition_strategy: str = "div",
                                 max_norm: Any = None) -> Tensor:
    """embedding_lookup_sparse made safe, as TF1's: ids < 0 (and, except for "sum", weights
    <= 0) are dropped, every row of sparse_ids gets an output (an empty row gets zeros, or the
    embedding of ``default_id``), and ids of rank > 2 keep their leading dims."""
    if embedding_weights is None:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    shards = list(embedding_weights) if hasattr(embedding_weights, "_get_variable_list") or \
        isinstance(embedding_weights, (list, tuple)) else [embedding_weights]
    if not shards:
        raise ValueError(f"Missing embedding_weights {embedding_weights}.")
    if not isinstance(sparse_ids, SparseTensor):
        raise TypeError(f"sparse_ids must be SparseTensor, got {type(sparse_ids)}")
    rank = sparse_ids.dense_shape.shape.as_list()[0] if sparse_ids.dense_shape.shape.ndims else None
    if rank is None:
        raise ValueError("safe_embedding_lookup_sparse needs sparse_ids of known rank in zmtf")
    with get_default_graph().name_scope(name or "embedding_lookup"):
        original_shape = sparse_ids.dense_shape
        flat_ids = sparse_ids if rank == 2 else sparse_reshape(sparse_ids, array_ops.stack([
            math_ops.reduce_prod(original_shape[:rank - 1]), original_shape[rank - 1]]))
        flat_weights = None if sparse_weights is None else \
            SparseTensor(flat_ids.indices, sparse_weights.values, flat_ids.dense_shape)
        flat_ids, flat_weights = _prune(flat_ids, flat_weights, combiner)
        filled_ids, is_row_empty = sparse_fill_empty_rows(flat_ids, default_id or 0)
        filled_weights = None if flat_weights is None else sparse_fill_empty_rows(flat_weights, 1.0)[0]
        result = embedding_lookup_sparse(shards, filled_ids, filled_weights, combiner=combiner,
                                         partition_strategy=partition_strategy, max_norm=max_norm)
        if default_id is None:
            empty = math_ops.logical_and(
                array_ops.reshape(is_row_empty, [-1] + [1] * (result.shape.ndims - 1)),
                array_ops.ones_like(result, dtype=dtypes.bool_))
            result = where(empty, array_ops.zeros_like(result), result)
        if rank == 2:
            result.set_shape(sparse_ids.shape.as_list()[:1] + result.shape.as_list()[1:])
            return result
        leading = math_ops.cast(original_shape[:rank - 1], dtypes.int32)
        final = array_ops.reshape(result, array_ops.concat([leading, array_ops.shape(result)[1:]], 0))
        leading_dims = sparse_ids.shape.as_list()[:rank - 1] if sparse_ids.shape.ndims else [None] * (rank - 1)
        final.set_shape(leading_dims + result.shape.as_list()[1:])
        return final


def _prune(ids: SparseTensor, weights: SparseTensor | None,
           combiner: str) -> tuple[SparseTensor, SparseTensor | None]:
    """Drop ids < 0, and (unless summing) entries whose weight is <= 0."""
    keep = math_ops.greater_equal(ids.values, 0)
    if weights is not None and combiner != "sum":
        keep = math_ops.logical_and(keep, math_ops.greater(weights.values, 0))
    return sparse_retain(ids, keep), None if weights is None else sparse_retain(weights, keep)


__all__ = ["embedding_lookup_sparse", "safe_embedding_lookup_sparse"]

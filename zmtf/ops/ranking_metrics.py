"""``tf.metrics``' ranking metrics: precision, recall and average precision of the top ``k``
predicted classes against each example's set of true class ids.

``labels`` are int class ids, [batch, num_labels] (or [batch] for one label each) or a
SparseTensor of them; as in TF's set ops, a row is a set (duplicates count once) and, in a
dense row, every value is a member (pad with -1 and it counts as a label that is never
predicted). The state is float64 local variables named as TF 2.21 names them:
"precision_at_2/true_positive_at_2", "recall_at_2/false_negative_at_2",
"average_precision_at_2/total" and ".../max_1" (the "max" scope follows a Max op)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops, state_ops
from zmtf.ops.composite_ops import range_
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.division_ops import div_no_nan
from zmtf.ops.sparse_ops import sparse_tensor_to_dense
from zmtf.ops.topk_ops import top_k
from zmtf.ops.selection_ops import where, where_v2
from zmtf.ops.weights_broadcast_ops import assert_broadcastable, broadcast_weights
from zmtf.framework.sparse_tensor import SparseTensor, convert_to_sparse, is_sparse
from zmtf.ops.metric_variables import collect, metric_variable

__all__ = ["average_precision_at_k", "precision_at_k", "precision_at_top_k", "recall_at_k",
           "recall_at_top_k", "sparse_average_precision_at_k", "sparse_precision_at_k"]

_ABSENT = np.iinfo(np.int64).min   # where a SparseTensor of labels has no entry


class _Labels:
    """Labels as a dense int64 tensor shaped like the predicted ids, with the mask of the
    entries that are members of their row's set."""

    def __init__(self, labels: Any, predictions_idx: Tensor) -> None:
        self.sparse = is_sparse(labels)
        if self.sparse:
            sp = convert_to_sparse(labels, "tf.metrics labels")
            self.ids = sparse_tensor_to_dense(SparseTensor(sp.indices, math_ops.cast(sp.values, dtypes.int64), sp.dense_shape),
                                              default_value=_ABSENT)
            self.valid = math_ops.not_equal(self.ids, _ABSENT)
        else:
            self.ids = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
            self.valid = math_ops.not_equal(self.ids, _ABSENT)   # all True, shaped like ids
        rank, predicted_rank = self.ids.shape.ndims, predictions_idx.shape.ndims
        if rank is not None and predicted_rank is not None and rank == predicted_rank - 1:
            self.ids = array_ops.expand_dims(self.ids, -1)
            self.valid = array_ops.expand_dims(self.valid, -1)


def _at_k_name(name: str, k: int | None = None, class_id: int | None = None) -> str:
    name = f"{name}_at_{k}" if k is not None else f"{name}_at_k"
    return f"{name}_class{class_id}" if class_id is not None else name


def _members(ids: Tensor, valid: Tensor, of: Tensor, of_valid: Tensor) -> Tensor:
    """[..., n] bool: ids[..., i] is a valid member and equals some valid of[..., j]."""
    same = math_ops.equal(array_ops.expand_dims(ids, -1), array_ops.expand_dims(of, -2))
    hit = math_ops.logical_and(same, array_ops.expand_dims(of_valid, -2))
    return math_ops.logical_and(valid, math_ops.reduce_any(hit, axis=-1))


def _first_occurrences(ids: Tensor, valid: Tensor) -> Tensor:
    """[..., n] bool: valid entries whose value no earlier valid entry of the row has."""
    position = range_(array_ops.shape(ids)[-1])
    earlier = math_ops.less(array_ops.expand_dims(position, 0), array_ops.expand_dims(position, 1))
    earlier_twin = math_ops.logical_and(
        math_ops.logical_and(math_ops.equal(array_ops.expand_dims(ids, -1),
                                            array_ops.expand_dims(ids, -2)), earlier),
        array_ops.expand_dims(valid, -2))
    return math_ops.logical_and(valid, math_ops.logical_not(math_ops.reduce_any(earlier_twin, -1)))


def _count(mask: Tensor) -> Tensor:
    return math_ops.reduce_sum(math_ops.cast(mask, dtypes.float64), axis=-1)


def _set_counts(labels: _Labels, predictions_idx: Tensor,
                class_id: int | None) -> dict[str, Tensor]:
    """Per example: |predicted ∩ labels|, |predicted - labels|, |labels - predicted| (only
    ``class_id`` kept in both sets when given), float64."""
    predicted = math_ops.cast(predictions_idx, dtypes.int64)
    predicted_valid = math_ops.not_equal(predicted, _ABSENT)
    label_valid = labels.valid
    if class_id is not None:
        predicted_valid = math_ops.logical_and(predicted_valid, math_ops.equal(predicted, class_id))
        label_valid = math_ops.logical_and(label_valid, math_ops.equal(labels.ids, class_id))
    predicted_first = _first_occurrences(predicted, predicted_valid)
    tp = _count(_members(predicted, predicted_first, labels.ids, label_valid))
    return {"true_positive": tp, "false_positive": _count(predicted_first) - tp,
            "false_negative": _count(_first_occurrences(labels.ids, label_valid)) - tp}


def _streaming_count(kind: str, per_example: Tensor, k: int | None, class_id: int | None,
                     weights: Any) -> tuple[Tensor, Tensor]:
    graph = get_default_graph()
    with graph.name_scope(_at_k_name(kind, k, class_id)) as scope:
        if weights is not None:
            with graph.control_dependencies([assert_broadcastable(weights, per_example)]):
                per_example = math_ops.multiply(per_example, math_ops.cast(weights, dtypes.float64))
        batch_total = math_ops.reduce_sum(per_example)
        var = metric_variable([], dtypes.float64, name=scope)
        return var.value(), state_ops.assign_add(var, batch_total, name="update")


def _ratio_at_top_k(kind: str, other: str) -> Any:
    def metric(labels: Any, predictions_idx: Any, k: int | None = None, class_id: int | None = None,
               weights: Any = None, metrics_collections: Any = None,
               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
        with get_default_graph().name_scope(name or _at_k_name(kind, k, class_id)) as scope:
            predictions_idx = convert_to_tensor(predictions_idx)
            counts = _set_counts(_Labels(labels, predictions_idx), predictions_idx, class_id)
            tp, tp_update = _streaming_count("true_positive", counts["true_positive"], k,
                                             class_id, weights)
            count, count_update = _streaming_count(other, counts[other], k, class_id, weights)
            value = math_ops.truediv(tp, math_ops.add(tp, count), name=scope)
            update = math_ops.truediv(tp_update, math_ops.add(tp_update, count_update), name="update")
        collect(metrics_collections, value)
        collect(updates_collections, update)
        return value, update

    metric.__name__ = f"{kind}_at_top_k"
    metric.__doc__ = (f"{kind} of the predicted ids ``predictions_idx`` [batch, k] against the "
                      f"label sets, over every batch seen (NaN before any: TF's 0 / 0).")
    return metric


precision_at_top_k = _ratio_at_top_k("precision", "false_positive")
recall_at_top_k = _ratio_at_top_k("recall", "false_negative")


def _ratio_at_k(kind: str) -> Any:
    at_top_k = precision_at_top_k if kind == "precision" else recall_at_top_k

    def metric(labels: Any, predictions: Any, k: int, class_id: int | None = None,
               weights: Any = None, metrics_collections: Any = None,
               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
        with get_default_graph().name_scope(name or _at_k_name(kind, k, class_id)) as scope:
            _, top_k_idx = top_k(predictions, k)
            return at_top_k(labels, top_k_idx, k, class_id, weights, metrics_collections,
                            updates_collections, name=scope)

    metric.__name__ = f"{kind}_at_k"
    metric.__doc__ = f"{kind} of the ``k`` highest-scored classes of ``predictions`` [batch, classes]."
    return metric


precision_at_k = _ratio_at_k("precision")
sparse_precision_at_k = precision_at_k
recall_at_k = _ratio_at_k("recall")


def _clean_out_of_range(labels: _Labels, num_classes: Tensor) -> None:
    """Ids >= num_classes become -1 (still set members, never predicted), as TF's
    _clean_out_of_range_indices; like TF it first tests the batch's largest id."""
    too_big = math_ops.greater_equal(labels.ids, num_classes)
    any_too_big = math_ops.greater_equal(math_ops.reduce_max(labels.ids), num_classes)
    cleaned = where(too_big, -array_ops.ones_like(labels.ids), labels.ids)
    labels.ids = where_v2(any_too_big, cleaned, labels.ids)


def _average_precision(labels: _Labels, predictions_idx: Tensor, k: int) -> Tensor:
    """Per example: the mean over its relevant labels (at most k) of the precision at each
    rank where a relevant class was retrieved (NaN for an example without labels)."""
    with get_default_graph().name_scope("average_precision") as scope:
        predicted = math_ops.cast(predictions_idx, dtypes.int64, name="predictions_idx")
        axis = predicted.shape.ndims - 1
        relevant = math_ops.cast(_members(predicted, math_ops.not_equal(predicted, _ABSENT),
                                          labels.ids, labels.valid), dtypes.float64)
        tp_per_k = math_ops.cumsum(relevant, axis=axis, name="tp_per_k")
        retrieved_per_k = math_ops.cumsum(array_ops.ones_like(relevant), axis=axis,
                                          name="retrieved_per_k")
        precision_sum = math_ops.reduce_sum(math_ops.truediv(tp_per_k, retrieved_per_k) * relevant,
                                            axis=axis, name="precision_sum")
        if labels.sparse:
            num_labels = _count(_first_occurrences(labels.ids, labels.valid))
        else:
            num_labels = _count(math_ops.greater_equal(labels.ids, 0))
        num_relevant = math_ops.minimum(num_labels, float(k))
        return math_ops.truediv(precision_sum, num_relevant, name=scope)


def average_precision_at_k(labels: Any, predictions: Any, k: int, weights: Any = None,
                           metrics_collections: Any = None, updates_collections: Any = None,
                           name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean over examples (weighted) of the average precision of the top ``k`` classes."""
    if k < 1:
        raise ValueError(f"Invalid k={k}. `k` should be >= 1.")
    graph = get_default_graph()
    with graph.name_scope(name or _at_k_name("average_precision", k)) as scope:
        predictions = convert_to_tensor(predictions)
        _, predictions_idx = top_k(predictions, k)
        labels = _Labels(labels, predictions_idx)
        _clean_out_of_range(labels, math_ops.cast(array_ops.shape(predictions)[-1], dtypes.int64))
        average_precision = _average_precision(labels, predictions_idx, k)
        if weights is not None:
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float64), average_precision)
            average_precision = math_ops.multiply(average_precision, weights)
        with graph.name_scope("max") as max_scope:
            max_var = metric_variable([], dtypes.float64, name=max_scope)
            batch_max = (math_ops.cast(array_ops.size(average_precision, name="batch_max"),
                                       dtypes.float64) if weights is None
                         else math_ops.reduce_sum(weights, name="batch_max"))
            max_update = state_ops.assign_add(max_var, batch_max, name="update")
        with graph.name_scope("total") as total_scope:
            total_var = metric_variable([], dtypes.float64, name=total_scope)
            batch_total = math_ops.reduce_sum(average_precision, name="batch_total")
            total_update = state_ops.assign_add(total_var, batch_total, name="update")
        value = div_no_nan(total_var.value(), max_var.value(), name="mean")
        update = div_no_nan(total_update, max_update, name=scope)
    collect(metrics_collections, value)
    collect(updates_collections, update)
    return value, update


sparse_average_precision_at_k = average_precision_at_k

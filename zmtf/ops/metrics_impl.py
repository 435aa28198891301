"""``tf.metrics``: TF1's streaming metrics.

Each metric returns ``(value, update_op)``. Its state lives in float32 LOCAL variables under
the metric's name scope ("accuracy/total", "accuracy/count"), also in
GraphKeys.METRIC_VARIABLES, so ``tf.local_variables_initializer()`` resets it. Running
``update_op`` once per batch accumulates over the batches; ``value`` reads the result so
far (0 before any update: a zero count divides to 0, TF's div_no_nan).

Example::

    acc, update = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
    sess.run(tf.local_variables_initializer())
    for batch in batches:
        sess.run(update, feed_dict=batch)
    print(sess.run(acc))
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops, state_ops
from zmtf.ops.check_ops import assert_
from zmtf.ops.composite_ops import confusion_matrix
from zmtf.ops.diag_ops import diag_part
from zmtf.ops.scatter_ops import scatter_add
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.selection_ops import gather, where
from zmtf.ops.weights_broadcast_ops import broadcast_weights
from zmtf.ops.metric_variables import collect, metric_variable
from zmtf.ops.ranking_metrics import (
    average_precision_at_k, precision_at_k, precision_at_top_k, recall_at_k, recall_at_top_k,
    sparse_average_precision_at_k, sparse_precision_at_k,
)

__all__ = ["accuracy", "auc", "average_precision_at_k", "false_negatives",
           "false_negatives_at_thresholds", "false_positives",
           "false_positives_at_thresholds", "mean", "mean_absolute_error",
           "mean_cosine_distance", "mean_iou", "mean_per_class_accuracy",
           "mean_relative_error", "mean_squared_error", "mean_tensor",
           "percentage_below", "precision", "precision_at_k", "precision_at_thresholds",
           "precision_at_top_k", "recall", "recall_at_k", "recall_at_thresholds",
           "recall_at_top_k", "root_mean_squared_error", "sensitivity_at_specificity",
           "sparse_average_precision_at_k", "sparse_precision_at_k",
           "specificity_at_sensitivity", "true_negatives",
           "true_negatives_at_thresholds", "true_positives",
           "true_positives_at_thresholds"]


def _safe_div(numerator: Tensor, denominator: Tensor, name: str) -> Tensor:
    """numerator / denominator where denominator > 0, else 0 (no NaN from 0 / 0)."""
    positive = math_ops.greater(denominator, 0.0)
    safe = where(positive, denominator, array_ops.ones_like(denominator))
    return where(positive, math_ops.truediv(numerator, safe), array_ops.zeros_like(numerator),
                 name=name)


# ---- shapes: TF's _remove_squeezable_dimensions (static ranks) ----------------------------
def _squeeze_last_if_extra(a: Tensor, b: Tensor) -> Tensor:
    """``a`` without its last dimension when it has one more than ``b`` and that one is 1."""
    ra, rb = a.shape.ndims, b.shape.ndims
    if ra is not None and rb is not None and ra - rb == 1 and a.shape.as_list()[-1] in (1, None):
        return array_ops.squeeze(a, [-1])
    return a


def _remove_squeezable_dimensions(predictions: Any, labels: Any,
                                  weights: Any) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """Drop a trailing 1 that labels/predictions ([n, 1] vs [n]) or weights carry extra."""
    predictions = convert_to_tensor(predictions)
    if labels is not None:
        labels = convert_to_tensor(labels)
        predictions, labels = (_squeeze_last_if_extra(predictions, labels),
                               _squeeze_last_if_extra(labels, predictions))
        if not predictions.shape.is_compatible_with(labels.shape):
            raise ValueError(f"Shapes {predictions.shape} and {labels.shape} are incompatible "
                             f"(predictions {predictions.name}, labels {labels.name})")
    if weights is None:
        return predictions, labels, None
    weights = convert_to_tensor(weights)
    rw, rp = weights.shape.ndims, predictions.shape.ndims
    if rw not in (None, 0) and rp is not None:
        if rw - rp == 1:
            weights = array_ops.squeeze(weights, [-1])
        elif rp - rw == 1:
            weights = array_ops.expand_dims(weights, -1)
    return predictions, labels, weights


# ---- the metrics ---------------------------------------------------------------------------
def mean(values: Any, weights: Any = None, metrics_collections: Any = None,
         updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The (weighted) mean of ``values`` over every batch the update op has seen."""
    graph = get_default_graph()
    with graph.name_scope(name or "mean"):
        values = math_ops.cast(convert_to_tensor(values), dtypes.float32)
        total = metric_variable([], dtypes.float32, name="total")
        count = metric_variable([], dtypes.float32, name="count")
        if weights is None:
            num_values = math_ops.cast(array_ops.size(values), dtypes.float32)
        else:
            values, _, weights = _remove_squeezable_dimensions(values, None, weights)
            weights = broadcast_weights(math_ops.cast(weights, dtypes.float32), values)
            values = math_ops.multiply(values, weights)
            num_values = math_ops.reduce_sum(weights)
        update_total = state_ops.assign_add(total, math_ops.reduce_sum(values))
        update_count = state_ops.assign_add(count, num_values)
        value = _safe_div(total.value(), count.value(), name="value")
        update_op = _safe_div(update_total, update_count, name="update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def accuracy(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
             updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """How often ``predictions`` equals ``labels``: the mean of their elementwise equality."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    if labels.dtype != predictions.dtype:
        predictions = math_ops.cast(predictions, labels.dtype)
    is_correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
    return mean(is_correct, weights, metrics_collections, updates_collections, name or "accuracy")


def mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                       metrics_collections: Any = None, updates_collections: Any = None,
                       name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean of ``(labels - predictions) ** 2`` over every element seen."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    if labels.dtype != predictions.dtype:
        labels = math_ops.cast(labels, predictions.dtype)
    squared_error = math_ops.squared_difference(labels, predictions)
    return mean(squared_error, weights, metrics_collections, updates_collections,
                name or "mean_squared_error")


def _count_condition(values: Tensor, weights: Tensor | None, metrics_collections: Any,
                     updates_collections: Any) -> tuple[Tensor, Tensor]:
    """A running (weighted) count of the true entries of the bool ``values``."""
    count = metric_variable([], dtypes.float32, name="count")
    counted = math_ops.cast(values, dtypes.float32)
    if weights is not None:
        counted = math_ops.multiply(counted, math_ops.cast(weights, dtypes.float32))
    value = array_ops.identity(count.value(), name="value")
    update_op = state_ops.assign_add(count, math_ops.reduce_sum(counted))
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def _as_bools(predictions: Any, labels: Any,
              weights: Any) -> tuple[Tensor, Tensor, Tensor | None]:
    """predictions and labels cast to bool (nonzero is positive), squeezed as TF does."""
    predictions = math_ops.cast(predictions, dtypes.bool_)
    labels = math_ops.cast(labels, dtypes.bool_)
    predictions, bool_labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    assert bool_labels is not None
    return predictions, bool_labels, weights


_Metric = Callable[..., tuple[Tensor, Tensor]]


def _confusion_count(want_label: bool, want_prediction: bool, default_name: str) -> _Metric:
    def metric(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
        with get_default_graph().name_scope(name or default_name):
            predictions, labels, weights = _as_bools(predictions, labels, weights)
            hit = math_ops.logical_and(math_ops.equal(labels, want_label),
                                       math_ops.equal(predictions, want_prediction))
            return _count_condition(hit, weights, metrics_collections, updates_collections)

    metric.__name__ = default_name
    metric.__doc__ = (f"The (weighted) number of entries with label {want_label} and prediction "
                      f"{want_prediction} over every batch seen (both cast to bool).")
    return metric


true_positives = _confusion_count(True, True, "true_positives")
false_positives = _confusion_count(False, True, "false_positives")
false_negatives = _confusion_count(True, False, "false_negatives")
true_negatives = _confusion_count(False, False, "true_negatives")


def _ratio_of_counts(other_count: _Metric, default_name: str) -> _Metric:
    """precision or recall: true_positives / (true_positives + other_count), as TF builds them."""
    def metric(labels: Any, predictions: Any, weights: Any = None, metrics_collections: Any = None,
               updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
        with get_default_graph().name_scope(name or default_name):
            predictions, labels, weights = _as_bools(predictions, labels, weights)
            tp, tp_update = true_positives(labels, predictions, weights)
            other, other_update = other_count(labels, predictions, weights)
            value = _safe_div(tp, math_ops.add(tp, other), name="value")
            update_op = _safe_div(tp_update, math_ops.add(tp_update, other_update),
                                  name="update_op")
        collect(metrics_collections, value)
        collect(updates_collections, update_op)
        return value, update_op

    metric.__name__ = default_name
    return metric


precision = _ratio_of_counts(false_positives, "precision")
precision.__doc__ = "true_positives / (true_positives + false_positives), 0 when both are 0."
recall = _ratio_of_counts(false_negatives, "recall")
recall.__doc__ = "true_positives / (true_positives + false_negatives), 0 when both are 0."


# ---- metrics over thresholds: auc, precision/recall at thresholds ----------------------------
def _confusion_at_thresholds(labels: Any, predictions: Any, thresholds: list[float],
                             weights: Any) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """TF's _confusion_matrix_at_thresholds: running tp/fn/tn/fp counts [T], one per threshold
    (an entry counts as predicted positive where its prediction > the threshold)."""
    predictions, labels, weights = _remove_squeezable_dimensions(
        math_ops.cast(predictions, dtypes.float32), math_ops.cast(labels, dtypes.bool_), weights)
    in_range = math_ops.logical_and(
        math_ops.reduce_all(math_ops.greater_equal(predictions, 0.0)),
        math_ops.reduce_all(math_ops.less_equal(predictions, 1.0)))
    check = assert_(in_range, ["predictions must be in [0, 1]"], name="assert_range")
    with get_default_graph().control_dependencies([check]):
        flat = array_ops.reshape(predictions, [1, -1])
    truth = array_ops.reshape(labels, [1, -1])
    cut = array_ops.reshape(constant(np.asarray(thresholds, np.float32)), [-1, 1])
    positive = math_ops.greater(flat, cut)                            # [T, N]
    weight = None
    if weights is not None:
        weight = array_ops.reshape(broadcast_weights(math_ops.cast(weights, dtypes.float32),
                                                      predictions), [1, -1])
    cells = {"tp": (truth, positive), "fn": (truth, math_ops.logical_not(positive)),
             "tn": (math_ops.logical_not(truth), math_ops.logical_not(positive)),
             "fp": (math_ops.logical_not(truth), positive)}
    names = {"tp": "true_positives", "fn": "false_negatives", "tn": "true_negatives",
             "fp": "false_positives"}
    values, updates = {}, {}
    for key, (want_label, want_prediction) in cells.items():
        count = metric_variable([len(thresholds)], dtypes.float32, name=names[key])
        hits = math_ops.cast(math_ops.logical_and(want_label, want_prediction), dtypes.float32)
        if weight is not None:
            hits = math_ops.multiply(hits, weight)
        values[key] = count.value()
        updates[key] = state_ops.assign_add(count, math_ops.reduce_sum(hits, 1))
    return values, updates


def _auc_thresholds(num_thresholds: int, thresholds: Any) -> list[float]:
    epsilon = 1e-7   # TF's: the first and last thresholds catch predictions of exactly 0 and 1
    if thresholds is not None:
        inner = sorted(float(t) for t in thresholds)
    else:
        if num_thresholds <= 1:
            raise ValueError("`num_thresholds` must be > 1.")
        inner = [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return [0.0 - epsilon] + inner + [1.0 + epsilon]


def auc(labels: Any, predictions: Any, weights: Any = None, num_thresholds: int = 200,
        metrics_collections: Any = None, updates_collections: Any = None, curve: str = "ROC",
        name: str | None = None, summation_method: str = "trapezoidal",
        thresholds: Any = None) -> tuple[Tensor, Tensor]:
    """The area under the ROC (or PR) curve, from counts at ``num_thresholds`` thresholds
    (TF1's Riemann sums: 'trapezoidal', 'minoring', 'majoring', and 'careful_interpolation'
    for PR). ``predictions`` must lie in [0, 1]."""
    if curve not in ("ROC", "PR"):
        raise ValueError(f"curve must be either ROC or PR, {curve} unknown")
    if summation_method not in ("trapezoidal", "minoring", "majoring", "careful_interpolation"):
        raise ValueError(f"Invalid summation_method: {summation_method}")
    with get_default_graph().name_scope(name or "auc"):
        cuts = _auc_thresholds(num_thresholds, thresholds)
        values, updates = _confusion_at_thresholds(labels, predictions, cuts, weights)
        n = len(cuts)

        def area(c: dict[str, Tensor], label: str) -> Tensor:
            if curve == "PR" and summation_method == "careful_interpolation":
                return _interpolated_pr_auc(c["tp"], c["fp"], c["fn"], n, label)
            eps = 1.0e-6
            recall_ = math_ops.truediv(c["tp"] + eps, c["tp"] + c["fn"] + eps)
            if curve == "ROC":
                x, y = math_ops.truediv(c["fp"], c["fp"] + c["tn"] + eps), recall_
            else:
                x, y = recall_, math_ops.truediv(c["tp"] + eps, c["tp"] + c["fp"] + eps)
            width = x[:n - 1] - x[1:]
            if summation_method == "minoring":
                height = math_ops.minimum(y[:n - 1], y[1:])
            elif summation_method == "majoring":
                height = math_ops.maximum(y[:n - 1], y[1:])
            else:
                height = (y[:n - 1] + y[1:]) / 2.0
            return math_ops.reduce_sum(math_ops.multiply(width, height), name=label)

        value = area(values, "value")
        update_op = area(updates, "update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def _interpolated_pr_auc(tp: Tensor, fp: Tensor, fn: Tensor, n: int, label: str) -> Tensor:
    """TF's interpolate_pr_auc (Davis & Goadrich 2006): precision interpolated between the
    thresholds' points rather than linearly."""
    dtp = tp[:n - 1] - tp[1:]
    p = tp + fp
    dp = math_ops.maximum(p[:n - 1] - p[1:], 0.0)
    slope = _div_no_nan(dtp, dp)
    intercept = tp[1:] - math_ops.multiply(slope, p[1:])
    both = math_ops.logical_and(math_ops.greater(p[:n - 1], 0.0), math_ops.greater(p[1:], 0.0))
    ratio = where(both, _div_no_nan(p[:n - 1], math_ops.maximum(p[1:], 0.0)), array_ops.ones_like(p[1:]))
    terms = _div_no_nan(slope * (dtp + intercept * math_ops.log(ratio)),
                        math_ops.maximum(tp[1:] + fn[1:], 0.0))
    return math_ops.reduce_sum(terms, name=label)


def _div_no_nan(numerator: Tensor, denominator: Tensor) -> Tensor:
    return _safe_div(numerator, denominator, name="div_no_nan")


def _at_thresholds(kind: str) -> _Metric:
    def metric(labels: Any, predictions: Any, thresholds: Any, weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        with get_default_graph().name_scope(name or f"{kind}_at_thresholds"):
            values, updates = _confusion_at_thresholds(labels, predictions,
                                                       [float(t) for t in thresholds], weights)
            other = "fp" if kind == "precision" else "fn"
            eps = 1e-7   # TF's: 0 / 0 reads 0

            def ratio(c: dict[str, Tensor], label: str) -> Tensor:
                return math_ops.truediv(c["tp"], eps + c["tp"] + c[other], name=label)

            value, update_op = ratio(values, "value"), ratio(updates, "update_op")
        collect(metrics_collections, value)
        collect(updates_collections, update_op)
        return value, update_op

    metric.__name__ = f"{kind}_at_thresholds"
    metric.__doc__ = f"{kind} at each of ``thresholds`` (predicted positive: prediction > threshold)."
    return metric


precision_at_thresholds = _at_thresholds("precision")
recall_at_thresholds = _at_thresholds("recall")


def _count_at_thresholds(key: str, default_name: str) -> _Metric:
    def metric(labels: Any, predictions: Any, thresholds: Any, weights: Any = None,
               metrics_collections: Any = None, updates_collections: Any = None,
               name: str | None = None) -> tuple[Tensor, Tensor]:
        with get_default_graph().name_scope(name or default_name):
            values, updates = _confusion_at_thresholds(labels, predictions,
                                                       [float(t) for t in thresholds], weights)
        collect(metrics_collections, values[key])
        collect(updates_collections, updates[key])
        return values[key], updates[key]

    metric.__name__ = default_name
    metric.__doc__ = f"The running count behind {default_name}, one per threshold."
    return metric


true_positives_at_thresholds = _count_at_thresholds("tp", "true_positives_at_thresholds")
false_positives_at_thresholds = _count_at_thresholds("fp", "false_positives_at_thresholds")
true_negatives_at_thresholds = _count_at_thresholds("tn", "true_negatives_at_thresholds")
false_negatives_at_thresholds = _count_at_thresholds("fn", "false_negatives_at_thresholds")


def _interior_thresholds(num_thresholds: int) -> list[float]:
    return [(i + 1) * 1.0 / (num_thresholds - 1) for i in range(num_thresholds - 2)]


def _check_rate(value: float, what: str, verb: str) -> None:
    if value < 0 or value > 1:
        raise ValueError(f"`{what}` must be in the range [0, 1]. Currently, `{what}` {verb} {value}.")


_Pick = Callable[[dict[str, Tensor], str], Tensor]


def _picked_at_thresholds(labels: Any, predictions: Any, weights: Any, num_thresholds: int,
                          last: float, pick: _Pick, metrics_collections: Any,
                          updates_collections: Any, name: str) -> tuple[Tensor, Tensor]:
    """``pick`` of the running counts at TF's ``num_thresholds`` thresholds (the last one
    ``last``), as the value and as the update op."""
    with get_default_graph().name_scope(name):
        cuts = [0.0 - _KEPSILON] + _interior_thresholds(num_thresholds) + [last]
        values, updates = _confusion_at_thresholds(labels, predictions, cuts, weights)
        value, update_op = pick(values, "value"), pick(updates, "update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


_KEPSILON = 1e-7   # TF's: floating-point slack at the ends and in the rates' denominators


def sensitivity_at_specificity(labels: Any, predictions: Any, specificity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Any = None,
                               updates_collections: Any = None,
                               name: str | None = None) -> tuple[Tensor, Tensor]:
    """The recall at the threshold whose specificity (tn / (tn + fp)) is nearest ``specificity``
    (the first such threshold), from counts at ``num_thresholds`` thresholds in [0, 1]."""
    _check_rate(specificity, "specificity", "got")

    def sensitivity(c: dict[str, Tensor], label: str) -> Tensor:
        specificities = math_ops.truediv(c["tn"], c["tn"] + c["fp"] + _KEPSILON)
        at = math_ops.cast(math_ops.argmin(math_ops.abs(specificities - specificity), 0),
                           dtypes.int32)
        tp = gather(c["tp"], at)
        return math_ops.truediv(tp, tp + gather(c["fn"], at) + _KEPSILON, name=label)

    return _picked_at_thresholds(labels, predictions, weights, num_thresholds, 1.0 + _KEPSILON,
                                 sensitivity, metrics_collections, updates_collections,
                                 name or "sensitivity_at_specificity")


def specificity_at_sensitivity(labels: Any, predictions: Any, sensitivity: float, weights: Any = None,
                               num_thresholds: int = 200, metrics_collections: Any = None,
                               updates_collections: Any = None,
                               name: str | None = None) -> tuple[Tensor, Tensor]:
    """The specificity at the threshold whose sensitivity (tp / (tp + fn)) is nearest
    ``sensitivity`` (the last such threshold, as TF picks it)."""
    _check_rate(sensitivity, "sensitivity", "is")

    def specificity(c: dict[str, Tensor], label: str) -> Tensor:
        recall_ = math_ops.truediv(c["tp"], c["tp"] + c["fn"] + _KEPSILON)
        distance = math_ops.abs(recall_ - sensitivity)
        nearest = math_ops.cast(math_ops.equal(distance, math_ops.reduce_min(distance)),
                                dtypes.int64)
        at = math_ops.cast(math_ops.argmax(math_ops.cumsum(nearest), 0), dtypes.int32)
        tn = gather(c["tn"], at)
        return math_ops.truediv(tn, tn + gather(c["fp"], at) + _KEPSILON, name=label)

    return _picked_at_thresholds(labels, predictions, weights, num_thresholds, 1.0 - _KEPSILON,
                                 specificity, metrics_collections, updates_collections,
                                 name or "specificity_at_sensitivity")


# ---- more means ------------------------------------------------------------------------------
def mean_absolute_error(labels: Any, predictions: Any, weights: Any = None,
                        metrics_collections: Any = None, updates_collections: Any = None,
                        name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean of ``|labels - predictions|`` over every element seen."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    labels = math_ops.cast(labels, predictions.dtype)
    return mean(math_ops.abs(labels - predictions), weights, metrics_collections,
                updates_collections, name or "mean_absolute_error")


def root_mean_squared_error(labels: Any, predictions: Any, weights: Any = None,
                            metrics_collections: Any = None, updates_collections: Any = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """The square root of mean_squared_error."""
    with get_default_graph().name_scope(name or "root_mean_squared_error"):
        mse, update_mse = mean_squared_error(labels, predictions, weights)
        value, update_op = math_ops.sqrt(mse), math_ops.sqrt(update_mse)
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def mean_relative_error(labels: Any, predictions: Any, normalizer: Any, weights: Any = None,
                        metrics_collections: Any = None, updates_collections: Any = None,
                        name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean of ``|labels - predictions| / normalizer`` (0 where the normalizer is 0)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    labels = math_ops.cast(labels, predictions.dtype)
    normalizer = math_ops.cast(convert_to_tensor(normalizer), predictions.dtype)
    relative = where(math_ops.equal(normalizer, 0.0), array_ops.zeros_like(labels),
                     math_ops.truediv(math_ops.abs(labels - predictions), normalizer))
    return mean(relative, weights, metrics_collections, updates_collections,
                name or "mean_relative_error")


def mean_cosine_distance(labels: Any, predictions: Any, dim: int, weights: Any = None,
                         metrics_collections: Any = None, updates_collections: Any = None,
                         name: str | None = None) -> tuple[Tensor, Tensor]:
    """1 - the mean of the dot products along ``dim`` (labels and predictions unit-normalized
    by the caller, as TF expects)."""
    predictions, labels, weights = _remove_squeezable_dimensions(predictions, labels, weights)
    labels = math_ops.cast(labels, predictions.dtype)
    products = math_ops.reduce_sum(math_ops.multiply(predictions, labels), axis=[dim], keepdims=True)
    with get_default_graph().name_scope(name or "mean_cosine_distance"):
        similarity, update = mean(products, weights)
        value, update_op = 1.0 - similarity, 1.0 - update
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def percentage_below(values: Any, threshold: float, weights: Any = None,
                     metrics_collections: Any = None, updates_collections: Any = None,
                     name: str | None = None) -> tuple[Tensor, Tensor]:
    """The fraction of ``values`` below ``threshold``."""
    below = math_ops.cast(math_ops.less(convert_to_tensor(values), threshold), dtypes.float32)
    return mean(below, weights, metrics_collections, updates_collections, name or "percentage_below")


def mean_tensor(values: Any, weights: Any = None, metrics_collections: Any = None,
                updates_collections: Any = None, name: str | None = None) -> tuple[Tensor, Tensor]:
    """The elementwise running mean of ``values`` (a tensor of a fixed shape)."""
    graph = get_default_graph()
    with graph.name_scope(name or "mean"):
        values = math_ops.cast(convert_to_tensor(values), dtypes.float32)
        if not values.shape.is_fully_defined():
            raise ValueError(f"mean_tensor needs values of a static shape, got {values.shape}")
        shape = values.shape.as_list()
        total = metric_variable(shape, dtypes.float32, name="total_tensor")
        count = metric_variable(shape, dtypes.float32, name="count_tensor")
        counted = array_ops.ones_like(values)
        if weights is not None:
            weights = broadcast_weights(math_ops.cast(convert_to_tensor(weights), dtypes.float32), values)
            values, counted = math_ops.multiply(values, weights), weights
        update_total = state_ops.assign_add(total, values)
        update_count = state_ops.assign_add(count, counted)
        value = _safe_div(total.value(), count.value(), name="value")
        update_op = _safe_div(update_total, update_count, name="update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


# ---- per class: mean_per_class_accuracy, mean_iou -----------------------------------------------
def mean_per_class_accuracy(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
                            metrics_collections: Any = None, updates_collections: Any = None,
                            name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean over classes of each class's accuracy; the update op gives the per-class
    accuracies, as TF1's does."""
    with get_default_graph().name_scope(name or "mean_accuracy"):
        labels = math_ops.cast(array_ops.reshape(convert_to_tensor(labels), [-1]), dtypes.int64)
        predictions = math_ops.cast(array_ops.reshape(convert_to_tensor(predictions), [-1]), dtypes.int64)
        total = metric_variable([num_classes], dtypes.float32, name="total")
        count = metric_variable([num_classes], dtypes.float32, name="count")
        seen = math_ops.cast(array_ops.ones_like(labels), dtypes.float32)
        correct = math_ops.cast(math_ops.equal(predictions, labels), dtypes.float32)
        if weights is not None:
            w = math_ops.cast(array_ops.reshape(convert_to_tensor(weights), [-1]), dtypes.float32)
            seen, correct = seen * w, correct * w
        update_total = scatter_add(total, labels, seen)
        update_count = scatter_add(count, labels, correct)
        value = math_ops.reduce_mean(_safe_div(count.value(), total.value(), "per_class"),
                                     name="mean_accuracy")
        update_op = _safe_div(update_count, update_total, name="update_op")
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


def mean_iou(labels: Any, predictions: Any, num_classes: int, weights: Any = None,
             metrics_collections: Any = None, updates_collections: Any = None,
             name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean over classes of intersection / union, from a running confusion matrix
    (classes never seen in labels or predictions are left out of the mean). As in TF1, the
    update op gives the updated confusion matrix."""
    with get_default_graph().name_scope(name or "mean_iou"):
        total = metric_variable([num_classes, num_classes], dtypes.float64, name="total_confusion_matrix")
        current = confusion_matrix(labels, predictions, num_classes, weights, dtype=dtypes.float64)
        update = state_ops.assign_add(total, current)

        def iou(cm: Tensor, label: str) -> Tensor:
            rows, cols = math_ops.reduce_sum(cm, 0), math_ops.reduce_sum(cm, 1)
            diagonal = diag_part(cm)
            union = rows + cols - diagonal
            valid = math_ops.reduce_sum(math_ops.cast(math_ops.not_equal(union, 0.0), dtypes.float32))
            union = where(math_ops.greater(union, 0.0), union, array_ops.ones_like(union))
            per_class = math_ops.truediv(diagonal, union)
            mean_ = math_ops.truediv(math_ops.cast(math_ops.reduce_sum(per_class), dtypes.float32),
                                     math_ops.maximum(valid, 1.0))
            return where(math_ops.greater(valid, 0.0), mean_, 0.0, name=label)

        value, update_op = iou(total.value(), "mean_iou"), update   # TF1's update op: the matrix
    collect(metrics_collections, value)
    collect(updates_collections, update_op)
    return value, update_op


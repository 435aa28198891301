"""TF1's ``tf.losses`` functions (TF 2.x ``tf.compat.v1.losses``): each computes per-element
losses in float32, weights them (a scalar, or the losses' rank with dimensions 1 or equal:
see weights_broadcast_ops), reduces them as ``reduction`` says (by default the sum over the
number of non-zero weights), casts back and adds the result to ``loss_collection``."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops, nn_ops
from zmtf.ops.composite_ops import sigmoid_cross_entropy_with_logits
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.division_ops import div_no_nan
from zmtf.ops.selection_ops import where
from zmtf.ops.weights_broadcast_ops import assert_broadcastable, broadcast_weights


class Reduction:
    """How a loss reduces its weighted per-element losses (TF's string values)."""

    NONE = "none"
    SUM = "weighted_sum"
    SUM_OVER_BATCH_SIZE = "weighted_sum_over_batch_size"
    MEAN = "weighted_mean"
    SUM_BY_NONZERO_WEIGHTS = "weighted_sum_by_nonzero_weights"
    SUM_OVER_NONZERO_WEIGHTS = SUM_BY_NONZERO_WEIGHTS

    @classmethod
    def all(cls) -> tuple[str, ...]:
        return (cls.NONE, cls.SUM, cls.MEAN, cls.SUM_OVER_BATCH_SIZE, cls.SUM_OVER_NONZERO_WEIGHTS,
                cls.SUM_BY_NONZERO_WEIGHTS)

    @classmethod
    def validate(cls, key: Any) -> None:
        if key not in cls.all():
            raise ValueError(f"Invalid Reduction Key {key}. Key should be one of {cls.all()}.")


_DEFAULT = Reduction.SUM_BY_NONZERO_WEIGHTS


def add_loss(loss: Tensor, loss_collection: Any = GraphKeys.LOSSES) -> None:
    """Adds an externally built loss to ``loss_collection``."""
    if loss_collection:
        get_default_graph().add_to_collection(loss_collection, loss)


def _safe_mean(total: Tensor, num_present: Tensor) -> Tensor:
    return div_no_nan(math_ops.reduce_sum(total), num_present, name="value")


def _num_elements(losses: Tensor) -> Tensor:
    with get_default_graph().name_scope("num_elements") as scope:
        return math_ops.cast(array_ops.size(losses, name=scope), losses.dtype)


def _num_present(losses: Tensor, weights: Tensor, per_batch: bool = False) -> Tensor:
    """How many elements of ``losses`` have a non-zero weight (per batch entry, keeping dims)."""
    with get_default_graph().name_scope("num_present") as scope:
        weights = math_ops.cast(weights, dtypes.float32)
        present = where(math_ops.equal(weights, 0.0), array_ops.zeros_like(weights),
                        array_ops.ones_like(weights))
        present = broadcast_weights(present, losses)
        if per_batch:
            return _sum_per_batch(present, name=scope)
        return math_ops.reduce_sum(present, name=scope)


def _sum_per_batch(x: Tensor, name: str | None = None) -> Tensor:
    """The sum over every axis but the first, keeping them as size 1 (TF's
    reduce_sum(axis=range(1, rank), keepdims=True), also for a rank known only when run)."""
    if x.shape.ndims is not None:
        return math_ops.reduce_sum(x, axis=list(range(1, x.shape.ndims)), keepdims=True, name=name)
    shape = array_ops.shape(x)
    per_row = math_ops.reduce_sum(array_ops.reshape(x, array_ops.stack([shape[0], -1])), axis=1)
    kept = array_ops.concat([shape[:1], array_ops.ones_like(shape[1:])], 0)
    return array_ops.reshape(per_row, kept, name=name)


def compute_weighted_loss(losses: Any, weights: Any = 1.0, scope: str | None = None,
                          loss_collection: Any = GraphKeys.LOSSES,
                          reduction: str = _DEFAULT) -> Tensor:
    """``losses * weights`` reduced by ``reduction``, in the losses' dtype."""
    Reduction.validate(reduction)
    graph = get_default_graph()
    with graph.name_scope(scope or "weighted_loss"):
        losses = convert_to_tensor(losses)
        with graph.control_dependencies([assert_broadcastable(weights, losses)]):
            input_dtype = losses.dtype
            losses = math_ops.cast(losses, dtypes.float32)
            weights = math_ops.cast(weights, dtypes.float32)
            loss = math_ops.multiply(losses, weights)
            if reduction != Reduction.NONE:
                loss = math_ops.reduce_sum(loss)
                if reduction == Reduction.MEAN:
                    loss = _safe_mean(loss, math_ops.reduce_sum(array_ops.ones_like(losses) * weights))
                elif reduction == Reduction.SUM_BY_NONZERO_WEIGHTS:
                    loss = _safe_mean(loss, _num_present(losses, weights))
                elif reduction == Reduction.SUM_OVER_BATCH_SIZE:
                    loss = _safe_mean(loss, _num_elements(losses))
            loss = math_ops.cast(loss, input_dtype)
            add_loss(loss, loss_collection)
            return loss


def _require(**arguments: Any) -> None:
    for name, value in arguments.items():
        if value is None:
            raise ValueError(f"Argument `{name}` must not be None.")


def _assert_compatible(a: Tensor, b: Tensor) -> None:
    if not a.shape.is_compatible_with(b.shape):
        raise ValueError(f"Shapes {a.shape} and {b.shape} are incompatible")


def _float_pair(labels: Any, predictions: Any) -> tuple[Tensor, Tensor]:
    """Both cast to float32, after the static check that their shapes agree."""
    predictions = math_ops.cast(predictions, dtypes.float32)
    labels = math_ops.cast(labels, dtypes.float32)
    _assert_compatible(predictions, labels)
    return labels, predictions


def absolute_difference(labels: Any, predictions: Any, weights: Any = 1.0, scope: str | None = None,
                        loss_collection: Any = GraphKeys.LOSSES, reduction: str = _DEFAULT) -> Tensor:
    """|predictions - labels|, weighted and reduced."""
    _require(labels=labels, predictions=predictions)
    with get_default_graph().name_scope(scope or "absolute_difference") as scope:
        labels, predictions = _float_pair(labels, predictions)
        losses = math_ops.abs(math_ops.subtract(predictions, labels))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def mean_squared_error(labels: Any, predictions: Any, weights: Any = 1.0, scope: str | None = None,
                       loss_collection: Any = GraphKeys.LOSSES, reduction: str = _DEFAULT) -> Tensor:
    """(predictions - labels) ** 2, weighted and reduced."""
    _require(labels=labels, predictions=predictions)
    with get_default_graph().name_scope(scope or "mean_squared_error") as scope:
        labels, predictions = _float_pair(labels, predictions)
        losses = math_ops.squared_difference(predictions, labels)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def cosine_distance(labels: Any, predictions: Any, axis: int | None = None, weights: Any = 1.0,
                    scope: str | None = None, loss_collection: Any = GraphKeys.LOSSES,
                    reduction: str = _DEFAULT, dim: int | None = None) -> Tensor:
    """1 - sum(labels * predictions) along ``axis`` (kept, size 1); both unit-normalized by
    the caller, as TF expects. ``dim`` is the deprecated name of ``axis``."""
    if axis is not None and dim is not None:
        raise ValueError("Cannot specify both 'axis' and 'dim'")
    axis = dim if axis is None else axis
    if axis is None:
        raise ValueError("You must specify argument `axis`.")
    _require(labels=labels, predictions=predictions)
    with get_default_graph().name_scope(scope or "cosine_distance_loss") as scope:
        labels, predictions = _float_pair(labels, predictions)
        radial = math_ops.multiply(predictions, labels)
        losses = 1 - math_ops.reduce_sum(radial, axis=(axis,), keepdims=True)
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def hinge_loss(labels: Any, logits: Any, weights: Any = 1.0, scope: str | None = None,
               loss_collection: Any = GraphKeys.LOSSES, reduction: str = _DEFAULT) -> Tensor:
    """max(0, 1 - (2 * labels - 1) * logits): labels are 0 or 1, mapped to -1 and 1."""
    _require(labels=labels, logits=logits)
    with get_default_graph().name_scope(scope or "hinge_loss") as scope:
        labels, logits = _float_pair(labels, logits)
        all_ones = array_ops.ones_like(labels)
        signs = math_ops.subtract(2 * labels, all_ones)
        losses = nn_ops.relu(math_ops.subtract(all_ones, math_ops.multiply(signs, logits)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def huber_loss(labels: Any, predictions: Any, weights: Any = 1.0, delta: float = 1.0,
               scope: str | None = None, loss_collection: Any = GraphKeys.LOSSES,
               reduction: str = _DEFAULT) -> Tensor:
    """0.5 * e**2 where |e| <= delta, else 0.5 * delta**2 + delta * (|e| - delta)."""
    _require(labels=labels, predictions=predictions)
    with get_default_graph().name_scope(scope or "huber_loss") as scope:
        labels, predictions = _float_pair(labels, predictions)
        abs_error = math_ops.abs(math_ops.subtract(predictions, labels))
        quadratic = math_ops.minimum(abs_error, delta)
        linear = math_ops.subtract(abs_error, quadratic)
        losses = math_ops.add(
            math_ops.multiply(convert_to_tensor(0.5, dtype=quadratic.dtype),
                              math_ops.multiply(quadratic, quadratic)),
            math_ops.multiply(delta, linear))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def log_loss(labels: Any, predictions: Any, weights: Any = 1.0, epsilon: float = 1e-7,
             scope: str | None = None, loss_collection: Any = GraphKeys.LOSSES,
             reduction: str = _DEFAULT) -> Tensor:
    """-labels * log(p + eps) - (1 - labels) * log(1 - p + eps), p the predicted probability."""
    _require(labels=labels, predictions=predictions)
    with get_default_graph().name_scope(scope or "log_loss") as scope:
        labels, predictions = _float_pair(labels, predictions)
        losses = (-math_ops.multiply(labels, math_ops.log(predictions + epsilon))
                  - math_ops.multiply(1 - labels, math_ops.log(1 - predictions + epsilon)))
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def mean_pairwise_squared_error(labels: Any, predictions: Any, weights: Any = 1.0,
                                scope: str | None = None,
                                loss_collection: Any = GraphKeys.LOSSES) -> Tensor:
    """The weighted sum over the batch of each entry's mean of the squared differences between
    all pairs of its (prediction - label) differences; TF's formula, and its lack of a
    ``reduction`` argument."""
    _require(labels=labels, predictions=predictions)
    graph = get_default_graph()
    with graph.name_scope(scope or "mean_pairwise_squared_error"):
        weights = math_ops.cast(weights, dtypes.float32)
        labels = math_ops.cast(labels, dtypes.float32)
        with graph.control_dependencies([assert_broadcastable(weights, labels)]):
            predictions = math_ops.cast(predictions, dtypes.float32)
            _assert_compatible(predictions, labels)
            diffs = math_ops.subtract(predictions, labels)
            sum_squares = _sum_per_batch(math_ops.square(diffs))
            present = _num_present(diffs, weights, per_batch=True)
            term1 = 2.0 * div_no_nan(sum_squares, math_ops.maximum(present - 1, 0), name="value")
            sum_diff = _sum_per_batch(diffs)
            term2 = 2.0 * div_no_nan(math_ops.square(sum_diff),
                                     math_ops.maximum(math_ops.multiply(present, present - 1), 0),
                                     name="value")
            loss = math_ops.reduce_sum(math_ops.multiply(term1 - term2, weights))
            mean_loss = where(math_ops.reduce_sum(present) > 0, loss, array_ops.zeros_like(loss),
                              name="value")
            add_loss(mean_loss, loss_collection)
            return mean_loss


def sigmoid_cross_entropy(multi_class_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: Any = GraphKeys.LOSSES,
                          reduction: str = _DEFAULT) -> Tensor:
    """sigmoid_cross_entropy_with_logits; labels smoothed towards 1/2 by ``label_smoothing``."""
    _require(multi_class_labels=multi_class_labels, logits=logits)
    with get_default_graph().name_scope(scope or "sigmoid_cross_entropy_loss") as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(multi_class_labels, logits.dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            labels = labels * (1 - label_smoothing) + 0.5 * label_smoothing
        losses = sigmoid_cross_entropy_with_logits(labels=labels, logits=logits, name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def softmax_cross_entropy(onehot_labels: Any, logits: Any, weights: Any = 1.0,
                          label_smoothing: float = 0, scope: str | None = None,
                          loss_collection: Any = GraphKeys.LOSSES,
                          reduction: str = _DEFAULT) -> Tensor:
    """Per-example softmax cross-entropy ([batch]); labels smoothed towards 1/num_classes."""
    _require(onehot_labels=onehot_labels, logits=logits)
    with get_default_graph().name_scope(scope or "softmax_cross_entropy_loss") as scope:
        logits = convert_to_tensor(logits)
        labels = math_ops.cast(onehot_labels, logits.dtype)
        _assert_compatible(logits, labels)
        if label_smoothing > 0:
            num_classes = math_ops.cast(array_ops.shape(labels)[-1], logits.dtype)
            labels = labels * (1.0 - label_smoothing) + label_smoothing / num_classes
        labels = array_ops.stop_gradient(labels, name="labels_stop_gradient")
        losses = nn_ops.softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                          name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def _squeeze_for_sparse(labels: Tensor, logits: Tensor, weights: Any) -> tuple[Tensor, Any]:
    """TF's _remove_squeezable_dimensions(expected_rank_diff=1) for static ranks: labels
    [batch, 1] become [batch]; weights one rank above the labels lose their last dimension."""
    l_rank, p_rank = labels.shape.ndims, logits.shape.ndims
    if l_rank is not None and p_rank is not None and p_rank - l_rank == 0 \
            and labels.shape.as_list()[-1] in (1, None):
        labels = array_ops.squeeze(labels, [-1])
    weights = convert_to_tensor(weights)
    l_rank, w_rank = labels.shape.ndims, weights.shape.ndims
    if l_rank is not None and w_rank is not None and w_rank - l_rank == 1:
        weights = array_ops.squeeze(weights, [-1])
    return labels, weights


def sparse_softmax_cross_entropy(labels: Any, logits: Any, weights: Any = 1.0,
                                 scope: str | None = None, loss_collection: Any = GraphKeys.LOSSES,
                                 reduction: str = _DEFAULT) -> Tensor:
    """Per-example softmax cross-entropy against integer class ids ([batch] or [batch, 1])."""
    _require(labels=labels, logits=logits)
    with get_default_graph().name_scope(scope or "sparse_softmax_cross_entropy_loss") as scope:
        labels, logits = convert_to_tensor(labels), convert_to_tensor(logits)
        labels, weights = _squeeze_for_sparse(labels, logits, weights)
        losses = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits,
                                                                 name="xentropy")
        return compute_weighted_loss(losses, weights, scope, loss_collection, reduction)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Tensor]:
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Tensor]:
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None, name: str = "total_regularization_loss") -> Tensor:
    """The sum of the regularization losses (0.0 when there are none)."""
    losses = get_regularization_losses(scope)
    if not losses:
        return constant(0.0, name=name)
    return math_ops.add_n(losses, name=name)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Tensor:
    """The sum of the collected losses, plus the regularization losses by default."""
    losses = get_losses(scope) + (get_regularization_losses(scope) if add_regularization_losses else [])
    if not losses:
        raise ValueError("No losses found: build them with tf.losses.* (or tf.losses.add_loss) first")
    return math_ops.add_n(losses, name=name)

"""``tf.keras.losses`` as functions of (y_true, y_pred) giving one loss per sample (the mean
or sum over the last axis), as keras defines them; reduce them yourself (``tf.reduce_mean``)."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.ops import composite_ops, math_ops, nn_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.keras import backend


def _pair(y_true: Any, y_pred: Any) -> tuple[Any, Any]:
    y_pred = convert_to_tensor(y_pred)
    return math_ops.cast(convert_to_tensor(y_true), y_pred.dtype), y_pred


def _clipped(probabilities: Any) -> Any:
    eps = backend.epsilon()
    return composite_ops.clip_by_value(probabilities, eps, 1.0 - eps)


def mean_squared_error(y_true: Any, y_pred: Any) -> Any:
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.square(y_pred - y_true), -1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Any:
    y_true, y_pred = _pair(y_true, y_pred)
    return math_ops.reduce_mean(math_ops.abs(y_pred - y_true), -1)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> Any:
    """-sum(y_true * log(p)); probabilities are renormalized and clipped to [eps, 1 - eps]."""
    y_true, y_pred = _pair(y_true, y_pred)
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits_v2(labels=y_true, logits=y_pred)
    probabilities = _clipped(y_pred / math_ops.reduce_sum(y_pred, -1, keepdims=True))
    return -math_ops.reduce_sum(y_true * math_ops.log(probabilities), -1)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> Any:
    """-log(p[label]) with integer labels."""
    y_pred = convert_to_tensor(y_pred)
    labels = math_ops.cast(convert_to_tensor(y_true), dtypes.int64)
    logits = y_pred if from_logits else math_ops.log(_clipped(y_pred))
    return nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False) -> Any:
    """The mean over the last axis of the sigmoid cross-entropy."""
    y_true, y_pred = _pair(y_true, y_pred)
    if not from_logits:
        p = _clipped(y_pred)
        y_pred = math_ops.log(p / (1.0 - p))
    return math_ops.reduce_mean(
        composite_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred), -1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error

__all__ = ["MAE", "MSE", "binary_crossentropy", "categorical_crossentropy", "mae",
           "mean_absolute_error", "mean_squared_error", "mse", "sparse_categorical_crossentropy"]

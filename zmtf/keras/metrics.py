"""``tf.keras.metrics`` as per-sample functions of (y_true, y_pred): the accuracies and the
losses; the stateful Metric classes are not built in zmtf (use ``tf.metrics``)."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.ops import math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.keras.losses import (  # keras exports the losses as metrics too
    MAE, MSE, binary_crossentropy, categorical_crossentropy, mae, mean_absolute_error,
    mean_squared_error, mse, sparse_categorical_crossentropy,
)


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Any:
    y_pred = convert_to_tensor(y_pred)
    predicted = math_ops.cast(math_ops.greater(y_pred, threshold), y_pred.dtype)
    hits = math_ops.equal(math_ops.cast(convert_to_tensor(y_true), y_pred.dtype), predicted)
    return math_ops.reduce_mean(math_ops.cast(hits, dtypes.float32), -1)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    hits = math_ops.equal(math_ops.argmax(y_true, -1), math_ops.argmax(y_pred, -1))
    return math_ops.cast(hits, dtypes.float32)


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Any:
    y_true = convert_to_tensor(y_true)
    if y_true.shape.ndims is not None and y_true.shape.ndims > 1 and y_true.shape.as_list()[-1] == 1:
        y_true = y_true[..., 0]
    predicted = math_ops.argmax(y_pred, -1)
    hits = math_ops.equal(math_ops.cast(y_true, predicted.dtype), predicted)
    return math_ops.cast(hits, dtypes.float32)


__all__ = ["MAE", "MSE", "binary_accuracy", "categorical_accuracy", "sparse_categorical_accuracy",
           "binary_crossentropy", "categorical_crossentropy", "mae", "mean_absolute_error",
           "mean_squared_error", "mse", "sparse_categorical_crossentropy"]

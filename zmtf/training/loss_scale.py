"""``tf.train.experimental.LossScale``, ``FixedLossScale`` and ``DynamicLossScale`` (TF 1.15,
still in TF 2.x's compat.v1): the loss scale MixedPrecisionLossScaleOptimizer multiplies the
loss by, and its update from this step's gradients.

DynamicLossScale keeps "current_loss_scale" (float32) and "good_steps" (int64): after
``increment_period`` finite steps in a row the scale is multiplied by ``multiplier`` (if the
product is finite); a step with a non-finite gradient divides it by ``multiplier`` (never
below 1) and restarts the count. TF builds the update from tf.conds; zmtf computes the same
new values with where().
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops import array_ops, math_ops, state_ops
from zmtf.ops.cond_ops import cond
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import group, no_op
from zmtf.ops.selection_ops import where_v2
from zmtf.ops.variables import Variable


class LossScale:
    """A loss scale: ``loss_scale()`` is the scale, ``update(grads)`` returns
    ``(update_op, should_apply_gradients)``."""

    def __call__(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define __call__()")

    def update(self, grads: Any) -> tuple[Operation, Any]:
        raise NotImplementedError(f"{type(self).__name__} must define update(grads)")


class FixedLossScale(LossScale):
    """The same scale every step; gradients are always applied."""

    def __init__(self, loss_scale_value: float) -> None:
        if not isinstance(loss_scale_value, (int, float)):
            raise ValueError("loss_scale_value must be a Python int or float.")
        if loss_scale_value < 1:
            raise ValueError("loss_scale_value must be at least 1.")
        self._loss_scale_value = float(loss_scale_value)

    def __call__(self) -> Tensor:
        return convert_to_tensor(self._loss_scale_value, dtype=dtypes.float32)

    def update(self, grads: Any) -> tuple[Operation, Any]:
        del grads
        return no_op(), True


class DynamicLossScale(LossScale):
    """Grows the scale after ``increment_period`` finite steps, shrinks it on a non-finite one."""

    def __init__(self, initial_loss_scale: float = 2 ** 15, increment_period: int = 2000,
                 multiplier: float = 2.0) -> None:
        self._initial_loss_scale = float(initial_loss_scale)
        self._increment_period = int(increment_period)
        self._multiplier = float(multiplier)
        self._current_loss_scale = Variable(
            convert_to_tensor(self._initial_loss_scale, dtype=dtypes.float32),
            name="current_loss_scale", dtype=dtypes.float32, trainable=False)
        self._num_good_steps = Variable(convert_to_tensor(0, dtype=dtypes.int64),
                                        name="good_steps", dtype=dtypes.int64, trainable=False)

    initial_loss_scale = property(lambda self: self._initial_loss_scale)
    increment_period = property(lambda self: self._increment_period)
    multiplier = property(lambda self: self._multiplier)

    def __call__(self) -> Tensor:
        return self._current_loss_scale.value()

    def update(self, grads: Any) -> tuple[Operation, Tensor]:
        finite = all_finite(grads)
        scale, good = self._current_loss_scale.value(), self._num_good_steps.value()
        grow = math_ops.greater_equal(good + 1, self._increment_period)
        grown = scale * self._multiplier
        grown = where_v2(math_ops.is_finite(grown), grown, scale)
        shrunk = math_ops.maximum(scale / self._multiplier, 1.0)
        new_scale = where_v2(finite, where_v2(grow, grown, scale), shrunk)
        zero = convert_to_tensor(0, dtype=dtypes.int64)
        new_good = where_v2(math_ops.logical_and(finite, math_ops.logical_not(grow)), good + 1, zero)
        update = group(state_ops.assign(self._current_loss_scale, new_scale),
                       state_ops.assign(self._num_good_steps, new_good))
        return update, finite


def get(identifier: Any) -> LossScale | None:
    """A number is a FixedLossScale, "dynamic" a DynamicLossScale() (TF's loss_scale.get)."""
    if isinstance(identifier, (int, float)):
        return FixedLossScale(identifier)
    if isinstance(identifier, str) and identifier == "dynamic":
        return DynamicLossScale()
    if isinstance(identifier, LossScale) or identifier is None:
        return identifier
    raise ValueError(f"Could not interpret loss scale identifier: {identifier}")


def all_finite(grads: Any) -> Tensor:
    """One bool: every element of every gradient (an IndexedSlices' values) is finite."""
    flags = [math_ops.reduce_all(math_ops.is_finite(
        grad.values if isinstance(grad, IndexedSlices) else grad))
        for grad in grads if grad is not None]
    return math_ops.reduce_all(array_ops.stack(flags))


def scaled_gradient(grad: Any, factor: Tensor) -> Any:
    """``grad * factor`` in grad's dtype; an IndexedSlices' values are scaled."""
    if grad is None:
        return None
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(grad.values * math_ops.cast(factor, grad.values.dtype.base_dtype),
                             grad.indices, grad.dense_shape)
    return grad * math_ops.cast(factor, grad.dtype.base_dtype)


def run_if(pred: Any, make_op: Any) -> Tensor:
    """Builds ``make_op()`` inside a tf.cond on ``pred``, so it runs only when pred holds;
    the result is pred's value once that is done."""
    graph = get_default_graph()

    def run() -> Tensor:
        with graph.control_dependencies([make_op()]):
            return array_ops.identity(True)

    return cond(pred, run, lambda: array_ops.identity(False))

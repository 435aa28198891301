"""TF 1.15's ``tf.contrib.mixed_precision`` loss scale managers: what the loss is multiplied
by before its gradients are taken, and how that number moves when gradients overflow.

ExponentialUpdateLossScaleManager keeps three variables ("loss_scale", "good_steps",
"bad_steps"). After ``incr_every_n_steps`` steps in a row with finite gradients the scale is
multiplied by ``incr_ratio`` (unless that overflows float32); after ``decr_every_n_nan_or_inf``
non-finite steps (counted since the last change; a finite step resets the count of good steps
only) it is multiplied by ``decr_ratio``, but never below 1. Each change resets both counts.
TF builds the update from nested tf.conds; zmtf computes the same new values with where().
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Operation, Tensor
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops import math_ops, state_ops
from zmtf.ops.control_flow_ops import group, no_op
from zmtf.ops.selection_ops import where_v2
from zmtf.ops.variables import Variable


class LossScaleManager:
    """The interface LossScaleOptimizer uses: the scale to multiply the loss by, and the op
    that updates it from whether this step's gradients were all finite."""

    def get_loss_scale(self) -> Tensor:
        raise NotImplementedError(f"{type(self).__name__} must define get_loss_scale()")

    def update_loss_scale(self, finite_grads: Any) -> Operation:
        raise NotImplementedError(f"{type(self).__name__} must define update_loss_scale()")


class FixedLossScaleManager(LossScaleManager):
    """The same scale every step."""

    def __init__(self, loss_scale: float) -> None:
        if loss_scale < 1:
            raise ValueError("loss scale must be at least 1.")
        self._loss_scale = convert_to_tensor(loss_scale, dtype=dtypes.float32)

    def get_loss_scale(self) -> Tensor:
        return self._loss_scale

    def update_loss_scale(self, finite_grads: Any) -> Operation:
        del finite_grads
        return no_op()


class ExponentialUpdateLossScaleManager(LossScaleManager):
    """Grows the scale after a run of finite steps, shrinks it after non-finite ones."""

    def __init__(self, init_loss_scale: float, incr_every_n_steps: int,
                 decr_every_n_nan_or_inf: int = 2, incr_ratio: float = 2,
                 decr_ratio: float = 0.8) -> None:
        self._incr_every_n_steps = incr_every_n_steps
        self._decr_every_n_nan_or_inf = decr_every_n_nan_or_inf
        self._incr_ratio = incr_ratio
        self._decr_ratio = decr_ratio
        self._loss_scale = Variable(convert_to_tensor(init_loss_scale, dtype=dtypes.float32),
                                    name="loss_scale", dtype=dtypes.float32, trainable=False)
        self._num_good_steps = Variable(0, name="good_steps", dtype=dtypes.int32, trainable=False)
        self._num_bad_steps = Variable(0, name="bad_steps", dtype=dtypes.int32, trainable=False)

    def get_loss_scale(self) -> Tensor:
        return self._loss_scale.value()

    def update_loss_scale(self, finite_grads: Any) -> Operation:
        finite = convert_to_tensor(finite_grads)
        scale = self._loss_scale.value()
        good, bad = self._num_good_steps.value(), self._num_bad_steps.value()
        zero = convert_to_tensor(0, dtype=dtypes.int32)
        grow = math_ops.greater_equal(good + 1, self._incr_every_n_steps)
        shrink = math_ops.greater_equal(bad + 1, self._decr_every_n_nan_or_inf)
        grown = scale * self._incr_ratio
        grown = where_v2(math_ops.is_finite(grown), grown, scale)
        shrunk = math_ops.maximum(1.0, scale * self._decr_ratio)
        new_scale = where_v2(finite, where_v2(grow, grown, scale), where_v2(shrink, shrunk, scale))
        new_good = where_v2(math_ops.logical_and(finite, math_ops.logical_not(grow)), good + 1, zero)
        new_bad = where_v2(finite, where_v2(grow, zero, bad), where_v2(shrink, zero, bad + 1))
        return group(state_ops.assign(self._loss_scale, new_scale),
                     state_ops.assign(self._num_good_steps, new_good),
                     state_ops.assign(self._num_bad_steps, new_bad))

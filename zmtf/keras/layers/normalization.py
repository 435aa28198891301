"""Keras BatchNormalization in TF1 graph mode.

Training (``training`` true, or the learning phase when not given) normalizes with the
batch's mean and biased variance and builds the moving-average updates
``moving -= (moving - batch) * (1 - momentum)``; as in TF1's keras (and unlike
``tf.layers``), those updates go to ``layer.updates`` / ``model.updates`` only, not to
``tf.GraphKeys.UPDATE_OPS``: run them with the train op. For 4-D channels-last inputs TF1
uses its fused kernel, whose batch variance in the moving average is Bessel-corrected
(n / (n - 1)); zmtf reproduces that (``fused=False`` gives the biased one).
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import get_default_graph
from zmtf.ops import array_ops, composite_ops, math_ops, state_ops
from zmtf.ops.constant_op import constant
from zmtf.keras.base_layer import Layer, smart_cond, training_value


class BatchNormalization(Layer):
    """Variables "gamma", "beta" (trainable) and "moving_mean", "moving_variance" [channels]."""

    def __init__(self, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, renorm: bool = False, fused: Any = None,
                 virtual_batch_size: Any = None, adjustment: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if renorm or virtual_batch_size is not None or adjustment is not None:
            raise NotImplementedError("BatchNormalization renorm, virtual_batch_size and "
                                      "adjustment are not built in zmtf")
        if not isinstance(axis, int):
            raise NotImplementedError("BatchNormalization over several axes is not built in zmtf")
        self.axis, self.momentum, self.epsilon = axis, float(momentum), float(epsilon)
        self.center, self.scale, self.fused = center, scale, fused
        self.initializers = (gamma_initializer, beta_initializer, moving_mean_initializer,
                             moving_variance_initializer)
        self.gamma_regularizer, self.beta_regularizer = gamma_regularizer, beta_regularizer
        self.gamma_constraint, self.beta_constraint = gamma_constraint, beta_constraint

    def build(self, input_shape: Any) -> None:
        rank = input_shape.ndims
        if rank is None:
            raise ValueError(f"Input has undefined rank: {input_shape}")
        self._rank, self._axis = rank, self.axis % rank
        channels = input_shape.as_list()[self._axis]
        if channels is None:
            raise ValueError(f"Input has undefined `axis` dimension. Input shape: {input_shape}")
        self._fused = self.fused is not False and rank == 4 and self._axis == 3
        gamma_init, beta_init, mean_init, var_init = self.initializers
        self.gamma = (self.add_weight("gamma", [channels], initializer=gamma_init,
                                      regularizer=self.gamma_regularizer,
                                      constraint=self.gamma_constraint)
                      if self.scale else None)
        self.beta = (self.add_weight("beta", [channels], initializer=beta_init,
                                     regularizer=self.beta_regularizer,
                                     constraint=self.beta_constraint)
                     if self.center else None)
        self.moving_mean = self.add_weight("moving_mean", [channels], initializer=mean_init,
                                           trainable=False)
        self.moving_variance = self.add_weight("moving_variance", [channels],
                                               initializer=var_init, trainable=False)

    def _shaped(self, t: Any) -> Any:
        if t is None or self._axis == self._rank - 1:
            return t
        broadcast = [1] * self._rank
        broadcast[self._axis] = -1
        return array_ops.reshape(t, broadcast)

    def _normalize(self, inputs: Any, mean: Any, variance: Any) -> Any:
        return composite_ops.batch_normalization(
            inputs, self._shaped(mean), self._shaped(variance), self._shaped(self.beta),
            self._shaped(self.gamma), self.epsilon)

    def call(self, inputs: Any, training: Any = None) -> Any:
        training = training_value(training)
        if isinstance(training, (bool, int)) and not training:
            return self._normalize(inputs, self.moving_mean, self.moving_variance)
        mean, variance = composite_ops.moments(inputs, [a for a in range(self._rank) if a != self._axis])
        moving_variance_target = variance
        if self._fused:
            count = (math_ops.cast(array_ops.size(inputs), variance.dtype)
                     / math_ops.cast(array_ops.size(variance), variance.dtype))
            moving_variance_target = variance * count / (count - 1.0)
        decay = smart_cond(training, lambda: constant(1.0 - self.momentum, inputs.dtype),
                           lambda: constant(0.0, inputs.dtype))
        graph = get_default_graph()
        for moving, batch in ((self.moving_mean, mean), (self.moving_variance, moving_variance_target)):
            with graph.colocate_with(moving.op):
                self.add_update(state_ops.assign_sub(moving, (moving - batch) * decay,
                                                     name="AssignMovingAvg"))
        return smart_cond(training, lambda: self._normalize(inputs, mean, variance),
                          lambda: self._normalize(inputs, self.moving_mean, self.moving_variance))


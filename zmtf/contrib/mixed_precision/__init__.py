"""``tf.contrib.mixed_precision``: TF 1.15's LossScaleOptimizer and its loss scale managers
(FixedLossScaleManager, ExponentialUpdateLossScaleManager)."""

from zmtf.contrib.mixed_precision.loss_scale_manager import (
    ExponentialUpdateLossScaleManager, FixedLossScaleManager, LossScaleManager,
)
from zmtf.contrib.mixed_precision.loss_scale_optimizer import LossScaleOptimizer

__all__ = ["ExponentialUpdateLossScaleManager", "FixedLossScaleManager", "LossScaleManager",
           "LossScaleOptimizer"]

"""``tf.train.experimental``: the mixed precision loss scaling of TF 1.15
(MixedPrecisionLossScaleOptimizer, LossScale, FixedLossScale, DynamicLossScale). Its other
names (enable_mixed_precision_graph_rewrite, sharding policies) are an AttributeError that
says so."""

from __future__ import annotations

from typing import Any

from zmtf.training.loss_scale import DynamicLossScale, FixedLossScale, LossScale
from zmtf.training.loss_scale_optimizer import MixedPrecisionLossScaleOptimizer

__all__ = ["DynamicLossScale", "FixedLossScale", "LossScale", "MixedPrecisionLossScaleOptimizer"]


def __getattr__(name: str) -> Any:
    raise AttributeError(f"tf.train.experimental.{name} is not in zmtf: of "
                         f"tf.train.experimental, zmtf has only {', '.join(__all__)} "
                         f"(docs/supported.md lists what is built)")

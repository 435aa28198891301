"""``tf.contrib.layers``' initializers: variance scaling with contrib's own truncated-normal
stddev, and Xavier (Glorot) as its FAN_AVG case."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.ops.init_ops import VarianceScaling

#: contrib's truncated normal has stddev sqrt(1.3 factor / n); the core initializer divides
#: sqrt(scale / n) by the truncated unit normal's stddev 0.8796..., so scale it to match
_TRUNCATION = 1.3 * 0.87962566103423978 ** 2


def variance_scaling_initializer(factor: float = 2.0, mode: str = "FAN_IN", uniform: bool = False,
                                 seed: int | None = None, dtype: Any = dtypes.float32) -> Any:
    """Values with variance ``factor / n``: uniform in +-sqrt(3 factor / n), or a truncated
    normal of stddev sqrt(1.3 factor / n); n is the fan in, fan out or their mean."""
    if not dtypes.as_dtype(dtype).is_floating:
        raise TypeError("Cannot create initializer for non-floating point type.")
    if mode not in ("FAN_IN", "FAN_OUT", "FAN_AVG"):
        raise TypeError(f"Unknown mode {mode} [FAN_IN, FAN_OUT, FAN_AVG]")
    if uniform:
        return VarianceScaling(factor, mode.lower(), "uniform", seed, dtype)
    return VarianceScaling(factor * _TRUNCATION, mode.lower(), "truncated_normal", seed, dtype)


def xavier_initializer(uniform: bool = True, seed: int | None = None,
                       dtype: Any = dtypes.float32) -> Any:
    """Glorot's initializer: variance 1 / mean(fan in, fan out)."""
    return variance_scaling_initializer(1.0, "FAN_AVG", uniform, seed, dtype)


xavier_initializer_conv2d = xavier_initializer


__all__ = ["variance_scaling_initializer", "xavier_initializer", "xavier_initializer_conv2d"]

"""Learning-rate schedules of TF1 that take the global step: graph ops, evaluated per run."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.ops import math_ops
from zmtf.framework.ops.constant_op import convert_to_tensor


def exponential_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Tensor:
    """learning_rate * decay_rate ^ (global_step / decay_steps), the exponent floored with
    ``staircase``."""
    if global_step is None:
        raise ValueError("global_step is required for exponential_decay.")
    with get_default_graph().name_scope(name or "ExponentialDecay"):
        lr = convert_to_tensor(learning_rate, dtype=dtypes.float32, name="learning_rate")
        step = math_ops.cast(global_step, lr.dtype)
        p = math_ops.divide(step, math_ops.cast(convert_to_tensor(decay_steps), lr.dtype))
        if staircase:
            p = math_ops.floordiv(step, math_ops.cast(convert_to_tensor(decay_steps), lr.dtype))
        return math_ops.multiply(lr, math_ops.pow(math_ops.cast(convert_to_tensor(decay_rate), lr.dtype), p))

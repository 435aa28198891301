"""Learning-rate schedules of TF1 that take the global step: graph ops, evaluated per run."""

from __future__ import annotations

import math

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.random_ops import random_normal


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


def _schedule_inputs(learning_rate: Any, global_step: Any, what: str) -> tuple[Tensor, Tensor]:
    if global_step is None:
        raise ValueError(f"global_step is required for {what}.")
    lr = convert_to_tensor(learning_rate, dtype=dtypes.float32, name="learning_rate")
    return lr, math_ops.cast(global_step, lr.dtype)


def inverse_time_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                       staircase: bool = False, name: str | None = None) -> Tensor:
    """learning_rate / (1 + decay_rate * global_step / decay_steps) (the ratio floored with
    ``staircase``)."""
    with get_default_graph().name_scope(name or "InverseTimeDecay"):
        lr, step = _schedule_inputs(learning_rate, global_step, "inverse_time_decay")
        p = step / math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        if staircase:
            p = math_ops.floor(p)
        return lr / (1.0 + math_ops.cast(convert_to_tensor(decay_rate), lr.dtype) * p)


def natural_exp_decay(learning_rate: Any, global_step: Any, decay_steps: Any, decay_rate: Any,
                      staircase: bool = False, name: str | None = None) -> Tensor:
    """learning_rate * exp(-decay_rate * global_step / decay_steps)."""
    with get_default_graph().name_scope(name or "NaturalExpDecay"):
        lr, step = _schedule_inputs(learning_rate, global_step, "natural_exp_decay")
        p = step / math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        if staircase:
            p = math_ops.floor(p)
        return lr * math_ops.exp(-math_ops.cast(convert_to_tensor(decay_rate), lr.dtype) * p)


def polynomial_decay(learning_rate: Any, global_step: Any, decay_steps: Any,
                     end_learning_rate: float = 0.0001, power: float = 1.0, cycle: bool = False,
                     name: str | None = None) -> Tensor:
    """(lr - end) * (1 - step / decay_steps) ^ power + end, the step capped at decay_steps
    (with ``cycle``, decay_steps grows to the next multiple of itself instead)."""
    with get_default_graph().name_scope(name or "PolynomialDecay"):
        lr, step = _schedule_inputs(learning_rate, global_step, "polynomial_decay")
        steps = math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        if cycle:
            multiple = math_ops.ceil(step / steps)
            steps = steps * math_ops.maximum(multiple, 1.0)   # step 0 keeps the first cycle
        else:
            step = math_ops.minimum(step, steps)
        end = convert_to_tensor(end_learning_rate, dtype=lr.dtype)
        return (lr - end) * math_ops.pow(1.0 - step / steps, power) + end


def piecewise_constant(x: Any, boundaries: list[Any], values: list[Any], name: str | None = None) -> Tensor:
    """values[0] while x <= boundaries[0], values[i] while boundaries[i-1] < x <= boundaries[i],
    values[-1] after the last boundary (TF's piecewise_constant)."""
    if len(values) != len(boundaries) + 1:
        raise ValueError(f"piecewise_constant: values needs len(boundaries) + 1 = "
                         f"{len(boundaries) + 1} entries, got {len(values)}")
    from zmtf.ops.selection_ops import where

    with get_default_graph().name_scope(name or "PiecewiseConstant"):
        xt = convert_to_tensor(x)
        result = convert_to_tensor(values[-1], dtype=dtypes.float32 if isinstance(values[-1], float)
                                   else None)
        for boundary, value in reversed(list(zip(boundaries, values[:-1]))):
            below = math_ops.less_equal(xt, math_ops.cast(convert_to_tensor(boundary), xt.dtype))
            result = where(below, math_ops.cast(convert_to_tensor(value), result.dtype), result)
        return result


def cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any, alpha: float = 0.0,
                 name: str | None = None) -> Tensor:
    """learning_rate * ((1 - alpha) * 0.5 * (1 + cos(pi * step / decay_steps)) + alpha), the
    step capped at decay_steps (SGDR without restarts)."""
    with get_default_graph().name_scope(name or "CosineDecay"):
        lr, step = _schedule_inputs(learning_rate, global_step, "cosine_decay")
        steps = math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        fraction = math_ops.minimum(step, steps) / steps
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * fraction))
        return lr * ((1.0 - alpha) * cosine + alpha)


def linear_cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any,
                        num_periods: float = 0.5, alpha: float = 0.0, beta: float = 0.001,
                        name: str | None = None) -> Tensor:
    """learning_rate * ((alpha + (decay_steps - step) / decay_steps) * 0.5 * (1 + cos(2 pi
    num_periods step / decay_steps)) + beta), the step capped at decay_steps."""
    with get_default_graph().name_scope(name or "LinearCosineDecay"):
        lr, step = _schedule_inputs(learning_rate, global_step, "linear_cosine_decay")
        steps = math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        step = math_ops.minimum(step, steps)
        linear = (steps - step) / steps
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * 2.0 * num_periods * step / steps))
        return lr * ((alpha + linear) * cosine + beta)


piecewise_constant_decay = piecewise_constant   # the TF 1.13+ name


def cosine_decay_restarts(learning_rate: Any, global_step: Any, first_decay_steps: Any,
                          t_mul: float = 2.0, m_mul: float = 1.0, alpha: float = 0.0,
                          name: str | None = None) -> Tensor:
    """SGDR: cosine decay that restarts, each period ``t_mul`` times longer and its peak
    ``m_mul`` times lower than the last (TF1's formula)."""
    with get_default_graph().name_scope(name or "SGDRDecay"):
        lr, step = _schedule_inputs(learning_rate, global_step, "cosine_decay_restarts")
        first = math_ops.cast(convert_to_tensor(first_decay_steps), lr.dtype)
        fraction = step / first
        if t_mul == 1.0:
            restart = math_ops.floor(fraction)
            fraction = fraction - restart
        else:
            restart = math_ops.floor(math_ops.log(1.0 - fraction * (1.0 - t_mul)) / math.log(t_mul))
            done = (1.0 - math_ops.pow(t_mul, restart)) / (1.0 - t_mul)
            fraction = (fraction - done) / math_ops.pow(t_mul, restart)
        cosine = 0.5 * math_ops.pow(m_mul, restart) * (1.0 + math_ops.cos(math.pi * fraction))
        return lr * ((1.0 - alpha) * cosine + alpha)


def noisy_linear_cosine_decay(learning_rate: Any, global_step: Any, decay_steps: Any,
                              initial_variance: float = 1.0, variance_decay: float = 0.55,
                              num_periods: float = 0.5, alpha: float = 0.0, beta: float = 0.001,
                              name: str | None = None) -> Tensor:
    """linear_cosine_decay with Gaussian noise on the linear part, of variance
    initial_variance / (1 + step) ** variance_decay (a fresh draw each run)."""
    with get_default_graph().name_scope(name or "NoisyLinearCosineDecay"):
        lr, step = _schedule_inputs(learning_rate, global_step, "noisy_linear_cosine_decay")
        steps = math_ops.cast(convert_to_tensor(decay_steps), lr.dtype)
        step = math_ops.minimum(step, steps)
        linear = (steps - step) / steps
        std = math_ops.sqrt(initial_variance / math_ops.pow(1.0 + step, variance_decay))
        noisy = alpha + linear + random_normal([], stddev=std)
        cosine = 0.5 * (1.0 + math_ops.cos(math.pi * 2.0 * num_periods * step / steps))
        return lr * (noisy * cosine + beta)

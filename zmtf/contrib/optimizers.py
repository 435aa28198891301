"""``tf.contrib.layers.optimize_loss``: TF 1.15's one-call training op of the tf.learn and
estimator era. It builds, under variable scope "OptimizeLoss", the learning-rate variable
(a Python float becomes the non-trainable "OptimizeLoss/learning_rate"), the optimizer
(a name from OPTIMIZER_CLS_NAMES, a class, an instance or a function of the rate), the
gradients (noised, multiplied, clipped as asked), TF's summaries, and returns the loss
behind a control dependency on the update ("OptimizeLoss/train"), so running it trains and
gives the loss. Also ``adaptive_clipping_fn``, contrib's clipping by the norm's history.
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Tensor, get_default_graph
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops import array_ops, math_ops, random_ops, summary_ops
from zmtf.ops.check_ops import assert_scalar
from zmtf.ops.composite_ops import clip_by_global_norm, global_norm
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import with_dependencies
from zmtf.ops.init_ops import Constant, Zeros
from zmtf.ops.selection_ops import where
from zmtf.ops.variable_scope import get_variable, variable_scope
from zmtf.ops.variables import trainable_variables
from zmtf.training.ftrl import FtrlOptimizer
from zmtf.training.moving_averages import assign_moving_average
from zmtf.training.optimizers import (
    AdagradOptimizer, AdamOptimizer, GradientDescentOptimizer, MomentumOptimizer, Optimizer,
    RMSPropOptimizer, assert_global_step, get_global_step,
)

__all__ = ["OPTIMIZER_CLS_NAMES", "OPTIMIZER_SUMMARIES", "adaptive_clipping_fn", "optimize_loss"]

GradsAndVars = list[tuple[Any, Any]]

OPTIMIZER_CLS_NAMES: dict[str, Callable[..., Optimizer]] = {
    "Adagrad": AdagradOptimizer,
    "Adam": AdamOptimizer,
    "Ftrl": FtrlOptimizer,
    "Momentum": lambda learning_rate: MomentumOptimizer(learning_rate, momentum=0.9),
    "RMSProp": RMSPropOptimizer,
    "SGD": GradientDescentOptimizer,
}

OPTIMIZER_SUMMARIES = ["learning_rate", "loss", "gradients", "gradient_norm", "global_gradient_norm"]

_DEFAULT_SUMMARIES = ["loss", "learning_rate", "global_gradient_norm"]


def optimize_loss(loss: Any, global_step: Any, learning_rate: Any, optimizer: Any,
                  gradient_noise_scale: Any = None, gradient_multipliers: Any = None,
                  clip_gradients: Any = None, learning_rate_decay_fn: Any = None,
                  update_ops: Any = None, variables: Any = None, name: str | None = None,
                  summaries: Any = None, colocate_gradients_with_ops: bool = False,
                  increment_global_step: bool = True) -> Tensor:
    """The training op for ``loss``: a Tensor whose value is the loss, computed after the
    UPDATE_OPS (or ``update_ops``) and before one optimizer step (``global_step`` += 1)."""
    loss = assert_scalar(convert_to_tensor(loss))
    if global_step is None:
        global_step = get_global_step()
    else:
        assert_global_step(global_step)
    with variable_scope(name, "OptimizeLoss", [loss, global_step]):
        if update_ops is None:
            update_ops = set(get_default_graph().get_collection(GraphKeys.UPDATE_OPS))
        if update_ops:
            loss = with_dependencies(list(update_ops), loss)
        lr = _learning_rate(learning_rate)
        summaries = _checked_summaries(summaries)
        if learning_rate is not None and learning_rate_decay_fn is not None:
            if global_step is None:
                raise ValueError("global_step is required for learning_rate_decay_fn.")
            lr = learning_rate_decay_fn(lr, global_step)
            if "learning_rate" in summaries:
                summary_ops.scalar("learning_rate", lr)
        opt = _optimizer(optimizer, lr, learning_rate)
        variables = trainable_variables() if variables is None else variables
        gradients = opt.compute_gradients(loss, variables,
                                          colocate_gradients_with_ops=colocate_gradients_with_ops)
        gradients = _transformed(gradients, gradient_noise_scale, gradient_multipliers)
        gradients = _clipped(gradients, clip_gradients, summaries)
        if "loss" in summaries:
            summary_ops.scalar("loss", loss)
        _add_gradient_summaries(gradients, summaries)
        if clip_gradients is not None and _wants_global_norm(summaries):
            summary_ops.scalar("global_norm/clipped_gradient_norm", _global_norm(gradients))
        grad_updates = opt.apply_gradients(
            gradients, global_step=global_step if increment_global_step else None, name="train")
        return with_dependencies([grad_updates], loss)


def _learning_rate(learning_rate: Any) -> Any:
    """None, a 0-d Tensor as given, or a Python float as the "learning_rate" variable."""
    if learning_rate is None:
        return None
    if isinstance(learning_rate, Tensor) and learning_rate.shape.ndims == 0:
        return learning_rate
    if isinstance(learning_rate, float):
        if learning_rate < 0.0:
            raise ValueError(f"Invalid learning_rate {learning_rate}.")
        return get_variable("learning_rate", [], trainable=False, initializer=Constant(learning_rate))
    raise ValueError(f"Learning rate should be 0d Tensor or float. Got {learning_rate} of type "
                     f"{type(learning_rate)}")


def _checked_summaries(summaries: Any) -> list[str]:
    if summaries is None:
        return list(_DEFAULT_SUMMARIES)
    for summ in summaries:
        if summ not in OPTIMIZER_SUMMARIES:
            raise ValueError(f"Summaries should be one of [{', '.join(OPTIMIZER_SUMMARIES)}], "
                             f"you provided {summ}.")
    return list(summaries)


def _optimizer(optimizer: Any, lr: Any, learning_rate: Any) -> Optimizer:
    """The Optimizer ``optimizer`` names, is, constructs or returns (TF's four ways)."""
    if isinstance(optimizer, str):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer is "
                             f"string ({optimizer}).")
        if optimizer not in OPTIMIZER_CLS_NAMES:
            raise ValueError(f"Optimizer name should be one of [{', '.join(OPTIMIZER_CLS_NAMES)}], "
                             f"you provided {optimizer}.")
        return OPTIMIZER_CLS_NAMES[optimizer](learning_rate=lr)
    if isinstance(optimizer, type) and issubclass(optimizer, Optimizer):
        if lr is None:
            raise ValueError(f"Learning rate is None, but should be specified if optimizer is "
                             f"class ({optimizer}).")
        return optimizer(learning_rate=lr)
    if isinstance(optimizer, Optimizer):
        return optimizer
    if callable(optimizer):
        opt = optimizer(lr) if learning_rate is not None else optimizer()
        if not isinstance(opt, Optimizer):
            raise ValueError(f"Unrecognized optimizer: function should return subclass of "
                             f"Optimizer. Got {opt}.")
        return opt
    raise ValueError(f"Unrecognized optimizer: should be string, subclass of Optimizer, instance "
                     f"of subclass of Optimizer or function with one argument. Got {optimizer}.")


def _transformed(gradients: GradsAndVars, noise_scale: Any, multipliers: Any) -> GradsAndVars:
    """The gradients with scaled truncated-normal noise added and multipliers applied."""
    if noise_scale is not None:
        gradients = [(None if g is None else _map_values(g, lambda v: v + _noise(v, noise_scale)), var)
                     for g, var in gradients]
    if multipliers is not None:
        gradients = [(_multiplied(g, var, multipliers), var) for g, var in gradients]
        if not gradients:
            raise ValueError("Empty list of (gradient, var) pairs encountered. This is most likely "
                             "to be caused by an improper value of gradient_multipliers.")
    return gradients


def _noise(values: Tensor, scale: Any) -> Tensor:
    # NOTE: TF draws the noise for an IndexedSlices in its dense shape, then adds it to the
    # slices (which only works when they cover every row); zmtf noises the rows sent.
    shape = values.shape if values.shape.is_fully_defined() else array_ops.shape(values)
    return random_ops.truncated_normal(shape, dtype=values.dtype) * scale


def _multiplied(grad: Any, var: Any, multipliers: dict) -> Any:
    if grad is None:
        return None
    key = var if var in multipliers else var.name if var.name in multipliers else None
    if key is None:
        return grad
    return _map_values(grad, lambda v: v * math_ops.cast(multipliers[key], v.dtype))


def _clipped(gradients: GradsAndVars, clip_gradients: Any, summaries: list[str]) -> GradsAndVars:
    """The global-norm summary of the raw gradients, then clipping by a float or a callable."""
    if _wants_global_norm(summaries):
        summary_ops.scalar("global_norm/gradient_norm", _global_norm(gradients))
    if isinstance(clip_gradients, float):
        grads = [g.values if isinstance(g, IndexedSlices) else g for g, _ in gradients]
        clipped, _ = clip_by_global_norm(grads, clip_gradients)
        return [(_with_values(g, c), var) for (g, var), c in zip(gradients, clipped)]
    if callable(clip_gradients):
        return clip_gradients(gradients)
    if clip_gradients is not None:
        raise ValueError(f"Unknown type {type(clip_gradients)} for clip_gradients")
    return gradients


def _add_gradient_summaries(gradients: GradsAndVars, summaries: list[str]) -> None:
    for grad, var in gradients:
        values = grad.values if isinstance(grad, IndexedSlices) else grad
        if values is None:
            continue
        var_name = var.name.replace(":", "_")
        if "gradients" in summaries:
            summary_ops.histogram(f"gradients/{var_name}", values)
        if "gradient_norm" in summaries:
            summary_ops.scalar(f"gradient_norm/{var_name}", global_norm([values]))


def _wants_global_norm(summaries: list[str]) -> bool:
    return "global_gradient_norm" in summaries or "gradient_norm" in summaries


def _global_norm(gradients: GradsAndVars) -> Tensor:
    """The global norm of the gradients (an IndexedSlices counts by its values, as TF's)."""
    return global_norm([g.values if isinstance(g, IndexedSlices) else g for g, _ in gradients])


def _with_values(grad: Any, values: Any) -> Any:
    """``values`` in place of the gradient's (its values, for an IndexedSlices)."""
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(values, grad.indices, grad.dense_shape)
    return values


def _map_values(grad: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """``fn`` applied to a dense gradient, or to the values of an IndexedSlices one."""
    if isinstance(grad, IndexedSlices):
        return IndexedSlices(fn(grad.values), grad.indices, grad.dense_shape)
    return fn(convert_to_tensor(grad))


# ---- adaptive clipping ------------------------------------------------------------------
def adaptive_clipping_fn(std_factor: Any = 2.0, decay: Any = 0.95, static_max_norm: Any = None,
                         global_step: Any = None, report_summary: bool = False,
                         epsilon: float = 1e-8, name: str | None = None) -> Callable[[GradsAndVars], GradsAndVars]:
    """A ``clip_gradients`` callable: keeps moving averages of log(global norm) and its
    square; a norm above exp(mean + std_factor * std) is scaled down to exp(mean)
    (arXiv:1412.1602, 3.2.1), and never above ``static_max_norm`` when that is given."""

    def gradient_clipping(grads_and_vars: GradsAndVars) -> GradsAndVars:
        norm = _global_norm(grads_and_vars)
        max_norm, log_mean = _adaptive_max_norm(norm, std_factor, decay, global_step, epsilon, name)
        if report_summary:
            summary_ops.scalar("global_norm/adaptive_max_gradient_norm", max_norm)
        factor = where(norm < max_norm, array_ops.ones_like(norm), math_ops.exp(log_mean) / norm)
        if static_max_norm is not None:
            factor = math_ops.minimum(static_max_norm / norm, factor)
        return [(None if g is None else _map_values(g, lambda v: v * factor), var)
                for g, var in grads_and_vars]

    return gradient_clipping


def _adaptive_max_norm(norm: Tensor, std_factor: Any, decay: Any, global_step: Any,
                       epsilon: float, name: str | None) -> tuple[Tensor, Tensor]:
    """(exp(mean + std_factor * std), mean) of log(norm)'s moving averages "mean", "sq_mean"."""
    with variable_scope(name, "AdaptiveMaxNorm", [norm]):
        log_norm = math_ops.log(norm + epsilon)
        if global_step is not None:  # adapt faster over the first steps
            n = math_ops.cast(global_step, dtypes.float32)
            decay = math_ops.minimum(decay, n / (n + 1.0))

        def moving_average(var_name: str, value: Tensor) -> Tensor:
            average = get_variable(var_name, shape=value.shape, dtype=value.dtype,
                                   initializer=Zeros(), trainable=False)
            return assign_moving_average(average, value, decay, zero_debias=False)

        mean = moving_average("mean", log_norm)
        sq_mean = moving_average("sq_mean", math_ops.square(log_norm))
        std = math_ops.sqrt(math_ops.maximum(epsilon, sq_mean - math_ops.square(mean)))
        return math_ops.exp(mean + std_factor * std), mean

"""More of tf.nn, as compositions of existing ops (their gradients come with them):
``zero_fraction`` (the CIFAR-10 tutorial's sparsity summaries), ``lrn`` /
``local_response_normalization`` (its norm layers), ``selu``, ``crelu``,
``weighted_cross_entropy_with_logits``, ``log_poisson_loss`` and the moments helpers
``sufficient_statistics``, ``normalize_moments``, ``weighted_moments``. Formulas as TF1's.
"""

from __future__ import annotations

import math
from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.nn_ops import relu
from zmtf.ops.selection_ops import gather, pad, where

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _scope(name: str | None, default: str) -> Any:
    return get_default_graph().name_scope(name or default)


def zero_fraction(value: Any, name: str | None = None) -> Tensor:
    """The fraction of zeros in ``value`` (a float32 scalar)."""
    with _scope(name, "zero_fraction"):
        x = convert_to_tensor(value)
        zero = array_ops.zeros_like(x)
        return math_ops.reduce_mean(math_ops.cast(math_ops.equal(x, zero), dtypes.float32))


def lrn(input: Any, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,  # noqa: A002
        beta: float = 0.5, name: str | None = None) -> Tensor:
    """Local response normalization over the last axis of a 4-D NHWC tensor:
    ``input / (bias + alpha * sum(input[..., d-r:d+r+1] ** 2)) ** beta``."""
    with _scope(name, "LRN"):
        x = convert_to_tensor(input)
        if x.shape.ndims not in (None, 4):
            raise ValueError(f"lrn: input must be 4-D (NHWC), got shape {x.shape} ({x.name})")
        r = int(depth_radius)
        if r < 0:
            raise ValueError(f"lrn: depth_radius must be >= 0, got {depth_radius}")
        depth = x.shape.as_list()[3] if x.shape.ndims == 4 else None
        if depth is None:
            raise ValueError(f"lrn in zmtf needs the channel depth of {x.name} at graph time")
        squared = pad(math_ops.square(x), [[0, 0], [0, 0], [0, 0], [r, r]])
        window = squared[:, :, :, 0:depth]
        for k in range(1, 2 * r + 1):
            window = window + squared[:, :, :, k:k + depth]
        scale = bias + alpha * window
        return x * math_ops.pow(scale, -beta)


local_response_normalization = lrn


def selu(features: Any, name: str | None = None) -> Tensor:
    """Scaled exponential linear unit (Klambauer et al.), TF's constants."""
    with _scope(name, "Selu"):
        x = convert_to_tensor(features)
        zero = array_ops.zeros_like(x)
        negative = _SELU_ALPHA * (math_ops.exp(math_ops.minimum(x, zero)) - 1.0)
        return _SELU_SCALE * where(math_ops.greater(x, zero), x, negative)


def crelu(features: Any, name: str | None = None, axis: int = -1) -> Tensor:
    """``concat([relu(x), relu(-x)], axis)``: twice the depth."""
    with _scope(name, "CRelu"):
        x = convert_to_tensor(features)
        return array_ops.concat([relu(x), relu(math_ops.negative(x))], axis)


def weighted_cross_entropy_with_logits(targets: Any = None, logits: Any = None, pos_weight: Any = 1.0,
                                       name: str | None = None, labels: Any = None) -> Tensor:
    """Sigmoid cross entropy with the positive term weighted by ``pos_weight`` (TF's stable
    form: (1 - z) x + (1 + (q - 1) z) (log(1 + exp(-|x|)) + max(-x, 0)))."""
    targets = labels if targets is None else targets
    with _scope(name, "logistic_loss"):
        x = convert_to_tensor(logits)
        z = convert_to_tensor(targets, dtype=x.dtype)
        q = convert_to_tensor(pos_weight, dtype=x.dtype)
        log_weight = 1.0 + (q - 1.0) * z
        softplus_neg = math_ops.log1p(math_ops.exp(math_ops.negative(math_ops.abs(x)))) + \
            relu(math_ops.negative(x))
        return (1.0 - z) * x + log_weight * softplus_neg


def log_poisson_loss(targets: Any, log_input: Any, compute_full_loss: bool = False,
                     name: str | None = None) -> Tensor:
    """``exp(log_input) - log_input * targets``, plus Stirling's term for targets > 1 with
    ``compute_full_loss``."""
    with _scope(name, "log_poisson_loss"):
        c = convert_to_tensor(log_input)
        z = convert_to_tensor(targets, dtype=c.dtype)
        result = math_ops.exp(c) - c * z
        if not compute_full_loss:
            return result
        ones, zeros = array_ops.ones_like(z), array_ops.zeros_like(z)
        safe = where(math_ops.greater(z, ones), z, ones)   # log of the branch not taken stays finite
        stirling = safe * math_ops.log(safe) - safe + 0.5 * math_ops.log(2.0 * math.pi * safe)
        return result + where(math_ops.greater(z, ones), stirling, zeros)


def sufficient_statistics(x: Any, axes: Any, shift: Any = None, keep_dims: bool = False,
                          name: str | None = None, keepdims: Any = None) -> tuple[Any, ...]:
    """(count, sum of x - shift, sum of (x - shift)^2, shift) over ``axes``."""
    keep = bool(keepdims) if keepdims is not None else keep_dims
    with _scope(name, "sufficient_statistics"):
        t = convert_to_tensor(x)
        shape = array_ops.shape(t)
        count = math_ops.reduce_prod(math_ops.cast(gather(shape, list(axes)), t.dtype))
        shifted = t - convert_to_tensor(shift, dtype=t.dtype) if shift is not None else t
        mean_ss = math_ops.reduce_sum(shifted, axis=list(axes), keepdims=keep)
        var_ss = math_ops.reduce_sum(math_ops.square(shifted), axis=list(axes), keepdims=keep)
        return count, mean_ss, var_ss, (convert_to_tensor(shift, dtype=t.dtype) if shift is not None else None)


def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any,
                      name: str | None = None) -> tuple[Tensor, Tensor]:
    """(mean, variance) from sufficient statistics."""
    with _scope(name, "normalize"):
        divisor = math_ops.reciprocal(convert_to_tensor(counts))
        shifted_mean = convert_to_tensor(mean_ss) * divisor
        mean = shifted_mean + convert_to_tensor(shift) if shift is not None else shifted_mean
        variance = convert_to_tensor(variance_ss) * divisor - math_ops.square(shifted_mean)
        return mean, variance


def weighted_moments(x: Any, axes: Any, frequency_weights: Any, name: str | None = None,
                     keep_dims: bool = False, keepdims: Any = None) -> tuple[Tensor, Tensor]:
    """Mean and variance of ``x`` over ``axes``, each value counted ``frequency_weights``
    times (broadcast to x)."""
    keep = bool(keepdims) if keepdims is not None else keep_dims
    with _scope(name, "weighted_moments"):
        t = convert_to_tensor(x)
        w = convert_to_tensor(frequency_weights, dtype=t.dtype)
        weighted_sum = math_ops.reduce_sum(w * t, axis=list(axes), keepdims=True)
        total = math_ops.reduce_sum(w * array_ops.ones_like(t), axis=list(axes), keepdims=True)
        divisor = math_ops.reciprocal(total)
        mean = weighted_sum * divisor
        variance = math_ops.reduce_sum(w * math_ops.square(t - mean), axis=list(axes), keepdims=True) * divisor
        if not keep:
            mean = array_ops.squeeze(mean, list(axes))
            variance = array_ops.squeeze(variance, list(axes))
        return mean, variance


__all__ = ["crelu", "local_response_normalization", "log_poisson_loss", "lrn", "normalize_moments",
           "selu", "sufficient_statistics", "weighted_cross_entropy_with_logits", "weighted_moments",
           "zero_fraction"]

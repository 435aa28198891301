"""Multinomial, RandomGamma and RandomPoissonV2: samples from ``ctx.random_generator``, one
numpy Generator per (session, node) as for the other random kernels."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import check_output_size, shape_input, shape_str
from zmtf.kernels.registry import register


def _rng(ctx: Any, attrs: dict) -> np.random.Generator:
    return ctx.random_generator(attrs["_node_name"], int(attrs.get("seed") or 0),
                                int(attrs.get("seed2") or 0))


@register("Multinomial", dtypes=("float16", "float32", "float64"))
def multinomial(ctx: Any, inputs: list, attrs: dict) -> list:
    """Multinomial(logits, num_samples): class draws from softmax(logits) per row."""
    logits, count = np.asarray(inputs[0], np.float64), int(inputs[1])
    node = attrs["_node_name"]
    if logits.ndim != 2:
        raise InvalidArgumentError(f"logits should be a matrix, got shape {shape_str(logits.shape)} "
                                   f"(node '{node}')")
    if count < 0:
        raise InvalidArgumentError(f"num_samples should be nonnegative, got {count} (node '{node}')")
    if logits.shape[1] == 0 and logits.shape[0] and count:
        raise InvalidArgumentError(f"num_classes should be positive, got 0 (node '{node}')")
    rng = _rng(ctx, attrs)
    check_output_size((logits.shape[0], count), as_dtype(attrs["output_dtype"]).np, node)
    out = np.empty((logits.shape[0], count), as_dtype(attrs["output_dtype"]).np)
    for row, values in enumerate(logits):
        finite = np.where(np.isfinite(values), values, -np.inf)
        weights = np.exp(finite - finite.max()) if np.isfinite(finite).any() else np.ones_like(values)
        cumulative = np.cumsum(weights)
        draws = rng.random(count) * cumulative[-1]
        out[row] = np.minimum(np.searchsorted(cumulative, draws, side="right"), values.size - 1)
    return [out]


@register("RandomGamma", dtypes=("int32", "int64"))
def random_gamma(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomGamma(shape, alpha): Gamma(alpha, 1) samples of shape ``shape + alpha.shape``."""
    shape = shape_input(inputs[0], attrs["_node_name"])
    alpha = np.asarray(inputs[1])
    dtype = as_dtype(attrs["dtype"]).np
    samples = _rng(ctx, attrs).standard_gamma(np.broadcast_to(alpha, shape + alpha.shape))
    return [np.asarray(samples).astype(dtype)]


@register("RandomPoissonV2", dtypes=("int32", "int64"))
def random_poisson(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomPoissonV2(shape, rate): Poisson(rate) samples of shape ``shape + rate.shape``."""
    node = attrs["_node_name"]
    shape = shape_input(inputs[0], node)
    rate = np.asarray(inputs[1], np.float64)
    if (rate < 0).any():
        raise InvalidArgumentError(f"random_poisson: rate must be non-negative, got "
                                   f"{rate.min()} (node '{node}')")
    samples = _rng(ctx, attrs).poisson(np.broadcast_to(rate, shape + rate.shape))
    return [np.asarray(samples).astype(as_dtype(attrs["dtype"]).np)]

"""Random kernels: RandomStandardNormal, RandomUniform(Int), TruncatedNormal, RandomShuffle.

Numbers come from ``ctx.random_generator(node_name, seed, seed2)``: the runtime keeps one
numpy Generator per (session, node), so each run draws new numbers and a seeded graph
replays the same sequence.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from zmtf.framework.dtypes import as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_input
from zmtf.kernels.registry import register

_SHAPE_DTYPES = ("int32", "int64")


def _draw_setup(ctx: Any, inputs: list, attrs: dict) -> tuple[np.random.Generator, tuple, np.dtype]:
    node_name = attrs["_node_name"]
    shape = shape_input(inputs[0], node_name)
    dtype = np.dtype(as_dtype(attrs.get("dtype") or "float32").name)
    if dtype.kind != "f":
        raise InvalidArgumentError(
            f"random op '{node_name}' produces floats; dtype {dtype.name} is not supported"
        )
    seed, seed2 = int(attrs.get("seed") or 0), int(attrs.get("seed2") or 0)
    return ctx.random_generator(node_name, seed, seed2), shape, dtype


def _generator_dtype(dtype: np.dtype) -> np.dtype:
    """numpy generates float32 and float64 only; float16 is drawn as float32 and rounded."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


@register("RandomStandardNormal", dtypes=_SHAPE_DTYPES)
def random_standard_normal(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomStandardNormal(shape): N(0, 1) samples of ``dtype``."""
    rng, shape, dtype = _draw_setup(ctx, inputs, attrs)
    return [rng.standard_normal(shape, dtype=_generator_dtype(dtype)).astype(dtype, copy=False)]


@register("RandomUniform", dtypes=_SHAPE_DTYPES)
def random_uniform(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomUniform(shape): samples from [0, 1) of ``dtype``."""
    rng, shape, dtype = _draw_setup(ctx, inputs, attrs)
    values = rng.random(shape, dtype=_generator_dtype(dtype)).astype(dtype, copy=False)
    if dtype == np.float16:  # rounding to half can reach 1.0; keep the interval half-open
        np.minimum(values, np.nextafter(np.float16(1), np.float16(0)), out=values)
    return [values]


@register("RandomUniformInt", dtypes=_SHAPE_DTYPES)
def random_uniform_int(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomUniformInt(shape, minval, maxval): integers from [minval, maxval)."""
    node_name = attrs["_node_name"]
    shape = shape_input(inputs[0], node_name)
    low, high = np.asarray(inputs[1]), np.asarray(inputs[2])
    if low.ndim or high.ndim:
        raise InvalidArgumentError(f"minval and maxval must be 0-D, got shapes {low.shape} and "
                                   f"{high.shape} (node '{node_name}')")
    if math.prod(shape) and low >= high:
        raise InvalidArgumentError(f"Need minval < maxval: {low} >= {high} (node '{node_name}')")
    rng = ctx.random_generator(node_name, int(attrs.get("seed") or 0), int(attrs.get("seed2") or 0))
    return [rng.integers(low, high, size=shape, dtype=low.dtype)]


@register("TruncatedNormal", dtypes=_SHAPE_DTYPES)
def truncated_normal(ctx: Any, inputs: list, attrs: dict) -> list:
    """TruncatedNormal(shape): N(0, 1) samples, redrawn until within 2 standard deviations."""
    rng, shape, dtype = _draw_setup(ctx, inputs, attrs)
    gen_dtype = _generator_dtype(dtype)
    values = rng.standard_normal(shape, dtype=gen_dtype)
    outside = np.flatnonzero(np.abs(values) > 2)
    flat = values.reshape(-1)
    while outside.size:  # ~4.6% redrawn per round
        flat[outside] = rng.standard_normal(outside.size, dtype=gen_dtype)
        outside = outside[np.abs(flat[outside]) > 2]
    return [values.astype(dtype, copy=False)]


@register("RandomShuffle")
def random_shuffle(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomShuffle(value): ``value`` with its first dimension randomly permuted."""
    value = np.asarray(inputs[0])
    if value.ndim == 0:
        return [value.copy()]
    seed, seed2 = int(attrs.get("seed") or 0), int(attrs.get("seed2") or 0)
    rng = ctx.random_generator(attrs["_node_name"], seed, seed2)
    return [value[rng.permutation(value.shape[0])]]

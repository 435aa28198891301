"""Random kernels on the GPU: RandomStandardNormal, RandomUniform, TruncatedNormal.

The numbers are drawn on the host by the CPU kernels, from the same per-node generator
(``ctx.random_generator(node_name, seed, seed2)``), then copied to the device. So a seeded
graph gives the same numbers on either device, and the sequence follows TF1's per-session
semantics. The cost is one host->device copy per draw. NOTE: numba's xoroshiro128+
device RNG (``numba.cuda.random``) could generate on the device later; it would need
per-node device state in the context and would change the numbers drawn.
"""

from __future__ import annotations

from typing import Any

from zmtf.kernels.cpu import random as cpu_random
from zmtf.kernels.cuda import _device
from zmtf.kernels.registry import register

_SHAPE_DTYPES = ("int32", "int64")


def _on_device(host_kernel: Any, ctx: Any, inputs: list, attrs: dict) -> list:
    shape = _device.to_host(ctx, inputs[0])  # a few ints
    (values,) = host_kernel(ctx, [shape], attrs)
    return [_device.to_device(ctx, values)]


@register("RandomStandardNormal", "GPU", _SHAPE_DTYPES)
def random_standard_normal(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomStandardNormal(shape): N(0, 1) samples of ``dtype``."""
    return _on_device(cpu_random.random_standard_normal, ctx, inputs, attrs)


@register("RandomUniform", "GPU", _SHAPE_DTYPES)
def random_uniform(ctx: Any, inputs: list, attrs: dict) -> list:
    """RandomUniform(shape): samples from [0, 1) of ``dtype``."""
    return _on_device(cpu_random.random_uniform, ctx, inputs, attrs)


@register("TruncatedNormal", "GPU", _SHAPE_DTYPES)
def truncated_normal(ctx: Any, inputs: list, attrs: dict) -> list:
    """TruncatedNormal(shape): N(0, 1) samples within 2 standard deviations."""
    return _on_device(cpu_random.truncated_normal, ctx, inputs, attrs)

"""FusedBatchNormV3 and FusedBatchNormGradV3 on CPU (numpy, computed in float32 as TF's
kernel does for float16 inputs)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.registry import register

_XDTYPES = ("float16", "float32")


def _layout(x: np.ndarray, attrs: dict) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(reduction axes, the shape a per-channel vector broadcasts as)."""
    node = attrs["_node_name"]
    if x.ndim != 4:
        raise InvalidArgumentError(f"input must be 4-dimensional, got shape {shape_str(x.shape)} "
                                   f"(node '{node}')")
    if attrs["data_format"] == "NCHW":
        return (0, 2, 3), (1, -1, 1, 1)
    return (0, 1, 2), (1, 1, 1, -1)


def _check_vectors(depth: int, named: dict, node: str) -> None:
    for arg, vector in named.items():
        if vector.shape != (depth,):
            raise InvalidArgumentError(f"{arg} must have shape [{depth}] (the depth of x), got "
                                       f"{shape_str(vector.shape)} (node '{node}')")


@register("FusedBatchNormV3", dtypes=_XDTYPES)
def fused_batch_norm(ctx: Any, inputs: list, attrs: dict) -> list:
    x, scale, offset, mean, variance = inputs
    node = attrs["_node_name"]
    axes, vec = _layout(x, attrs)
    depth = x.shape[-1 if vec[-1] == -1 else 1]
    _check_vectors(depth, {"scale": scale, "offset": offset}, node)
    xf = x.astype(np.float32)
    eps = np.float32(attrs["epsilon"])
    factor = np.float32(attrs.get("exponential_avg_factor", 1.0))
    if not attrs["is_training"]:
        _check_vectors(depth, {"mean": mean, "variance": variance}, node)
        inv = scale / np.sqrt(variance + eps)
        y = (xf - mean.reshape(vec)) * inv.reshape(vec) + offset.reshape(vec)
        return [y.astype(x.dtype), mean.copy(), variance.copy(), mean.copy(), variance.copy(),
                np.zeros(0, np.float32)]
    count = x.size // max(depth, 1)
    batch_mean = xf.mean(axis=axes)
    batch_var = ((xf - batch_mean.reshape(vec)) ** 2).mean(axis=axes)
    corrected = batch_var * np.float32(count / max(count - 1, 1))
    if factor != 1.0:
        _check_vectors(depth, {"mean": mean, "variance": variance}, node)
        running_mean = (1 - factor) * mean + factor * batch_mean
        running_var = (1 - factor) * variance + factor * corrected
    else:
        running_mean, running_var = batch_mean, corrected
    inv = scale / np.sqrt(batch_var + eps)
    y = (xf - batch_mean.reshape(vec)) * inv.reshape(vec) + offset.reshape(vec)
    return [y.astype(x.dtype), running_mean.astype(np.float32), running_var.astype(np.float32),
            batch_mean.astype(np.float32), batch_var.astype(np.float32), np.zeros(0, np.float32)]


@register("FusedBatchNormGradV3", dtypes=_XDTYPES)
def fused_batch_norm_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    grad_y, x, scale, saved_mean, saved_var, _ = inputs
    node = attrs["_node_name"]
    axes, vec = _layout(x, attrs)
    if grad_y.shape != x.shape:
        raise InvalidArgumentError(f"y_backprop must have the shape of x {shape_str(x.shape)}, got "
                                   f"{shape_str(grad_y.shape)} (node '{node}')")
    depth = x.shape[-1 if vec[-1] == -1 else 1]
    _check_vectors(depth, {"scale": scale, "reserve_space_1": saved_mean,
                           "reserve_space_2": saved_var}, node)
    dy = grad_y.astype(np.float32)
    inv_std = 1.0 / np.sqrt(saved_var + np.float32(attrs["epsilon"]))
    centered = x.astype(np.float32) - saved_mean.reshape(vec)
    offset_grad = dy.sum(axis=axes)
    scale_grad = (dy * centered).sum(axis=axes) * inv_std
    if attrs["is_training"]:
        count = x.size // max(depth, 1)
        mean_dy = (offset_grad / count).reshape(vec)
        mean_dy_centered = ((dy * centered).mean(axis=axes) * inv_std ** 2).reshape(vec)
        dx = (scale * inv_std).reshape(vec) * (dy - mean_dy - centered * mean_dy_centered)
    else:
        dx = dy * (scale * inv_std).reshape(vec)
    empty = np.zeros(0, np.float32)
    return [dx.astype(x.dtype), scale_grad.astype(np.float32), offset_grad.astype(np.float32),
            empty, empty.copy()]

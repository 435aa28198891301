"""Depthwise convolution kernels (NHWC): DepthwiseConv2dNative and its two backprops.

Each input channel ``c`` meets its own filters ``filter[:, :, c, :]``, so there is no sum
over channels to hand to BLAS: the kernels loop over the (few) window taps instead and do
one vectorized multiply-add per tap over the window view of windows.py. For a 3x3 filter
that is 9 numpy passes over the output, milliseconds for an 8x32x32x16 batch. The input
gradient adds each tap's contribution back through a writeable window view (one tap's
windows never overlap), so no col2im loop is needed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import FLOATS, quiet_fp, shape_input, shape_str
from zmtf.kernels.cpu.windows import (
    compute_dtype, require_rank4, window_plan, window_view, zeros_padded,
)
from zmtf.kernels.registry import register

_Array = np.ndarray


class _Depthwise:
    """One depthwise convolution's shapes, checked against each other."""

    def __init__(self, in_shape: tuple, filter_shape: tuple, attrs: dict) -> None:
        self.node = attrs["_node_name"]
        batch, height, width, channels = in_shape
        f_h, f_w, f_in, multiplier = filter_shape
        if channels != f_in:
            raise InvalidArgumentError(
                f"input depth must match the depthwise filter's third dimension: {channels} vs "
                f"{f_in} (input {shape_str(in_shape)}, filter {shape_str(filter_shape)}, node "
                f"'{self.node}')")
        self.in_shape, self.filter_shape = tuple(in_shape), tuple(filter_shape)
        self.plan = window_plan(attrs, (height, width), (f_h, f_w), self.node)
        self.split_shape = (batch, self.plan.rows.size, self.plan.cols.size, channels,
                            multiplier)
        self.out_shape = (*self.split_shape[:3], channels * multiplier)

    def out_backprop(self, grad: _Array, work: np.dtype) -> _Array:
        """``grad`` checked against the output shape, as [batch, h, w, in_c, m]."""
        if tuple(grad.shape) != self.out_shape:
            raise InvalidArgumentError(
                f"out_backprop must have shape {shape_str(self.out_shape)} for input "
                f"{shape_str(self.in_shape)} and filter {shape_str(self.filter_shape)}, got "
                f"{shape_str(grad.shape)} (node '{self.node}')")
        return grad.astype(work, copy=False).reshape(self.split_shape)


def _sizes(value: Any, what: str, node: str) -> tuple[int, ...]:
    sizes = shape_input(value, node)
    if len(sizes) != 4:
        raise InvalidArgumentError(f"{what} must have 4 elements, got {shape_str(sizes)} "
                                   f"(node '{node}')")
    return sizes


@register("DepthwiseConv2dNative", dtypes=FLOATS)
def depthwise_conv2d_native(ctx: Any, inputs: list, attrs: dict) -> list:
    """out[n, i, j, c * m + k] = sum over taps of window[n, i, j, tap, c] * filter[tap, c, k]."""
    x, kernel = inputs
    require_rank4(x, "input", attrs["_node_name"])
    require_rank4(kernel, "filter", attrs["_node_name"])
    conv = _Depthwise(x.shape, kernel.shape, attrs)
    work = compute_dtype(x.dtype)
    windows = window_view(conv.plan.padded(x.astype(work, copy=False), 0), conv.plan)
    weights = kernel.astype(work, copy=False)
    out = np.zeros(conv.split_shape, work)
    term = np.empty_like(out)
    tap = np.empty(conv.split_shape[:4], work)
    with quiet_fp():
        for _, a, e in conv.plan.taps():
            np.copyto(tap, windows[:, :, :, a, e, :])   # strided reads once, then contiguous
            np.multiply(tap[..., None], weights[a, e], out=term)
            out += term
    return [out.reshape(conv.out_shape).astype(x.dtype, copy=False)]


@register("DepthwiseConv2dNativeBackpropFilter", dtypes=FLOATS)
def depthwise_conv2d_native_backprop_filter(ctx: Any, inputs: list, attrs: dict) -> list:
    """d filter[tap, c, k] = sum over n, i, j of window[n, i, j, tap, c] * dy[n, i, j, c, k]."""
    x, filter_sizes, grad = inputs
    node = attrs["_node_name"]
    require_rank4(x, "input", node)
    conv = _Depthwise(x.shape, _sizes(filter_sizes, "filter_sizes", node), attrs)
    work = compute_dtype(x.dtype)
    dy = conv.out_backprop(grad, work)
    windows = window_view(conv.plan.padded(x.astype(work, copy=False), 0), conv.plan)
    d_filter = np.empty(conv.filter_shape, work)
    rows = dy.reshape(-1, *conv.split_shape[3:])   # [pixels, in_c, m]
    with quiet_fp():
        for _, a, e in conv.plan.taps():
            tap = np.ascontiguousarray(windows[:, :, :, a, e, :]).reshape(-1, rows.shape[1])
            d_filter[a, e] = (tap[:, :, None] * rows).sum(axis=0)
    return [d_filter.astype(x.dtype, copy=False)]


@register("DepthwiseConv2dNativeBackpropInput", dtypes=["int32", "int64"])
def depthwise_conv2d_native_backprop_input(ctx: Any, inputs: list, attrs: dict) -> list:
    """Each tap's ``dy @ filter[tap].T`` per channel, added back where the tap read from.

    Registered by ``input_sizes``' dtype (the op's first input), as Conv2DBackpropInput."""
    input_sizes, kernel, grad = inputs
    node = attrs["_node_name"]
    if kernel.dtype.name not in FLOATS:
        raise InvalidArgumentError(f"filter must be float16, float32 or float64, got "
                                   f"{kernel.dtype.name} (node '{node}')")
    require_rank4(kernel, "filter", node)
    in_shape = _sizes(input_sizes, "input_sizes", node)
    conv = _Depthwise(in_shape, kernel.shape, attrs)
    work = compute_dtype(kernel.dtype)
    dy = conv.out_backprop(grad, work)
    weights = kernel.astype(work, copy=False)
    padded = zeros_padded(conv.plan, in_shape, work)
    targets = window_view(padded, conv.plan, writeable=True)
    with quiet_fp():
        for _, a, e in conv.plan.taps():
            targets[:, :, :, a, e, :] += (dy * weights[a, e]).sum(axis=-1)
    dx = conv.plan.cropped(padded, in_shape[1], in_shape[2])
    return [np.ascontiguousarray(dx, dtype=kernel.dtype)]

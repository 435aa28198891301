"""N-D windowed kernels by tap: Conv3D and its backprops, MaxPool3D / AvgPool3D and their
gradients, and MaxPoolWithArgmax (2-D) with its gradient.

Layout is channels-last ([batch, *spatial, channels]). Each op loops over the window's taps
(27 for a 3x3x3 window): a tap reads one strided slice of the padded input, shaped like the
output, so every tap is a whole-array numpy operation (a tensordot for convolutions, a
maximum for pooling). Gradients add back through the same slices.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.framework.window_geometry import Span, span
from zmtf.kernels.cpu.common import FLOATS, check_output_size, dtype_attr, int_list, quiet_fp, shape_str
from zmtf.kernels.cpu.windows import compute_dtype
from zmtf.kernels.registry import register

_Array = np.ndarray


@dataclass(frozen=True, slots=True)
class TapPlan:
    """Where the windows of one N-D op land: one Span per spatial axis."""

    spans: tuple[Span, ...]
    window: tuple[int, ...]
    strides: tuple[int, ...]
    dilations: tuple[int, ...]

    @property
    def out_spatial(self) -> tuple[int, ...]:
        return tuple(s.size for s in self.spans)

    def pad(self, x: _Array, fill: float) -> _Array:
        widths = [(0, 0)] + [(s.pad_before, s.pad_after) for s in self.spans] + [(0, 0)]
        if not any(a or b for a, b in widths):
            return x
        return np.pad(x, widths, mode="constant", constant_values=fill)

    def padded_zeros(self, shape: tuple, dtype: Any) -> _Array:
        spatial = [n + s.pad_before + s.pad_after for n, s in zip(shape[1:-1], self.spans)]
        return np.zeros((shape[0], *spatial, shape[-1]), dtype)

    def crop(self, padded: _Array, shape: tuple) -> _Array:
        window = [slice(s.pad_before, s.pad_before + n) for s, n in zip(self.spans, shape[1:-1])]
        return padded[(slice(None), *window, slice(None))]

    def taps(self) -> Iterator[tuple[tuple[int, ...], tuple]]:
        """(tap, index of its slice of the padded input), row-major over the window."""
        for tap in itertools.product(*(range(w) for w in self.window)):
            index = [slice(None)]
            for t, stride, dilation, size in zip(tap, self.strides, self.dilations,
                                                 self.out_spatial):
                start = t * dilation
                index.append(slice(start, start + (size - 1) * stride + 1, stride))
            yield tap, (*index, slice(None))


def tap_plan(attrs: dict, in_spatial: tuple, window: tuple, node: str,
             channels_last: str) -> TapPlan:
    """The plan for a node's ``strides`` / ``padding`` / ``dilations`` (full-rank lists,
    1 on batch and channels), checked."""
    fmt = attrs.get("data_format", channels_last)
    if fmt != channels_last:
        raise InvalidArgumentError(f"zmtf's CPU kernels support data_format {channels_last} only, "
                                   f"got {fmt!r} (node '{node}'); transpose the input to "
                                   f"channels-last")
    rank = len(in_spatial) + 2
    strides = [int(s) for s in attrs["strides"]]
    dilations = [int(d) for d in attrs.get("dilations", [1] * rank)]
    if strides[0] != 1 or strides[-1] != 1 or dilations[0] != 1 or dilations[-1] != 1:
        raise UnimplementedError(f"strides {strides} and dilations {dilations} must be 1 in the "
                                 f"batch and depth dimensions (node '{node}')")
    try:
        spans = tuple(span(n, w, s, d, attrs["padding"]) for n, w, s, d in
                      zip(in_spatial, window, strides[1:-1], dilations[1:-1]))
    except ValueError as error:
        raise InvalidArgumentError(f"{error} (node '{node}')") from None
    return TapPlan(spans, tuple(window), tuple(strides[1:-1]), tuple(dilations[1:-1]))


def _require_rank(x: _Array, rank: int, what: str, node: str) -> None:
    if x.ndim != rank:
        raise InvalidArgumentError(f"{what} must be {rank}-dimensional, got shape "
                                   f"{shape_str(x.shape)} (node '{node}')")


def _check_grad(grad: _Array, expected: tuple, node: str) -> None:
    if tuple(grad.shape) != tuple(expected):
        raise InvalidArgumentError(f"out_backprop must have shape {shape_str(expected)}, got "
                                   f"{shape_str(grad.shape)} (node '{node}')")


# ---- Conv3D ----------------------------------------------------------------------------------
def _conv_plan(in_shape: tuple, filter_shape: tuple, attrs: dict) -> TapPlan:
    node = attrs["_node_name"]
    if in_shape[-1] != filter_shape[-2]:
        raise InvalidArgumentError(f"Input depth must be equal to filter depth: {in_shape[-1]} vs "
                                   f"{filter_shape[-2]} (input {shape_str(in_shape)}, filter "
                                   f"{shape_str(filter_shape)}, node '{node}')")
    return tap_plan(attrs, tuple(in_shape[1:-1]), tuple(filter_shape[:-2]), node, "NDHWC")


@register("Conv3D", dtypes=FLOATS)
def conv3d(ctx: Any, inputs: list, attrs: dict) -> list:
    x, kernel = inputs
    node = attrs["_node_name"]
    _require_rank(x, 5, "input", node)
    _require_rank(kernel, 5, "filter", node)
    plan = _conv_plan(x.shape, kernel.shape, attrs)
    work = compute_dtype(x.dtype)
    padded = plan.pad(x.astype(work, copy=False), 0)
    out = np.zeros((x.shape[0], *plan.out_spatial, kernel.shape[-1]), work)
    for tap, index in plan.taps():
        out += padded[index] @ kernel[tap].astype(work, copy=False)
    return [out.astype(x.dtype, copy=False)]


@register("Conv3DBackpropInputV2", dtypes=["int32", "int64"])
def conv3d_backprop_input(ctx: Any, inputs: list, attrs: dict) -> list:
    sizes, kernel, grad = inputs
    node = attrs["_node_name"]
    in_shape = tuple(int_list(sizes, "input_sizes", node))
    if len(in_shape) != 5:
        raise InvalidArgumentError(f"input_sizes must have 5 elements, got {shape_str(in_shape)} "
                                   f"(node '{node}')")
    plan = _conv_plan(in_shape, kernel.shape, attrs)
    _check_grad(grad, (in_shape[0], *plan.out_spatial, kernel.shape[-1]), node)
    work = compute_dtype(grad.dtype)
    dx = plan.padded_zeros(in_shape, work)
    g = grad.astype(work, copy=False)
    for tap, index in plan.taps():
        dx[index] += g @ kernel[tap].astype(work, copy=False).T
    return [np.ascontiguousarray(plan.crop(dx, in_shape)).astype(grad.dtype, copy=False)]


@register("Conv3DBackpropFilterV2", dtypes=FLOATS)
def conv3d_backprop_filter(ctx: Any, inputs: list, attrs: dict) -> list:
    x, sizes, grad = inputs
    node = attrs["_node_name"]
    filter_shape = tuple(int_list(sizes, "filter_sizes", node))
    _require_rank(x, 5, "input", node)
    if len(filter_shape) != 5:
        raise InvalidArgumentError(f"filter_sizes must have 5 elements, got "
                                   f"{shape_str(filter_shape)} (node '{node}')")
    plan = _conv_plan(x.shape, filter_shape, attrs)
    _check_grad(grad, (x.shape[0], *plan.out_spatial, filter_shape[-1]), node)
    work = compute_dtype(x.dtype)
    padded = plan.pad(x.astype(work, copy=False), 0)
    g = grad.astype(work, copy=False).reshape(-1, filter_shape[-1])
    dw = np.zeros(filter_shape, work)
    for tap, index in plan.taps():
        dw[tap] = padded[index].reshape(-1, filter_shape[-2]).T @ g
    return [dw.astype(x.dtype, copy=False)]


# ---- 3-D pooling -----------------------------------------------------------------------------
def _pool_plan(in_shape: tuple, attrs: dict, channels_last: str) -> TapPlan:
    node = attrs["_node_name"]
    ksize = [int(k) for k in attrs["ksize"]]
    if ksize[0] != 1 or ksize[-1] != 1:
        raise UnimplementedError(f"Pooling is not yet supported on the batch nor depth "
                                 f"dimensions: ksize {ksize} (node '{node}')")
    return tap_plan(attrs, tuple(in_shape[1:-1]), tuple(ksize[1:-1]), node, channels_last)


def _window_counts(plan: TapPlan, in_spatial: tuple) -> _Array:
    """[*out_spatial, 1]: the real (unpadded) elements of each window."""
    counts = np.ones((), np.int64)
    for s, n, w, stride in zip(plan.spans, in_spatial, plan.window, plan.strides):
        starts = np.arange(s.size) * stride - s.pad_before
        axis = np.minimum(starts + w, n) - np.maximum(starts, 0)
        counts = np.multiply.outer(counts, axis)
    return counts[..., None]


def _max_pool(x: _Array, plan: TapPlan) -> _Array:
    padded = plan.pad(x, -np.inf)
    out = None
    for _, index in plan.taps():
        out = padded[index].copy() if out is None else np.maximum(out, padded[index], out=out)
    return out


@register("MaxPool3D", dtypes=FLOATS)
def max_pool3d(ctx: Any, inputs: list, attrs: dict) -> list:
    x = inputs[0]
    _require_rank(x, 5, "input", attrs["_node_name"])
    return [_max_pool(x, _pool_plan(x.shape, attrs, "NDHWC"))]


@register("AvgPool3D", dtypes=FLOATS)
def avg_pool3d(ctx: Any, inputs: list, attrs: dict) -> list:
    x = inputs[0]
    _require_rank(x, 5, "input", attrs["_node_name"])
    plan = _pool_plan(x.shape, attrs, "NDHWC")
    work = compute_dtype(x.dtype)
    padded = plan.pad(x.astype(work, copy=False), 0)
    total = np.zeros((x.shape[0], *plan.out_spatial, x.shape[-1]), work)
    for _, index in plan.taps():
        total += padded[index]
    with quiet_fp():
        total /= _window_counts(plan, x.shape[1:-1])
    return [total.astype(x.dtype, copy=False)]


@register("MaxPool3DGrad", dtypes=FLOATS)
def max_pool3d_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """Every input element equal to its window's maximum gets that window's gradient (TF's
    3-D rule: ties all receive it)."""
    x, out, grad = inputs
    node = attrs["_node_name"]
    _require_rank(x, 5, "orig_input", node)
    plan = _pool_plan(x.shape, attrs, "NDHWC")
    _check_grad(grad, (x.shape[0], *plan.out_spatial, x.shape[-1]), node)
    padded = plan.pad(x, -np.inf)
    work = compute_dtype(x.dtype)
    dx = plan.padded_zeros(x.shape, work)
    for _, index in plan.taps():
        dx[index] += np.where(padded[index] == out, grad, 0).astype(work, copy=False)
    return [np.ascontiguousarray(plan.crop(dx, x.shape)).astype(x.dtype, copy=False)]


@register("AvgPool3DGrad", dtypes=["int32", "int64"])
def avg_pool3d_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    sizes, grad = inputs
    node = attrs["_node_name"]
    in_shape = tuple(int_list(sizes, "orig_input_shape", node))
    if len(in_shape) != 5:
        raise InvalidArgumentError(f"orig_input_shape must have 5 elements, got "
                                   f"{shape_str(in_shape)} (node '{node}')")
    plan = _pool_plan(in_shape, attrs, "NDHWC")
    _check_grad(grad, (in_shape[0], *plan.out_spatial, in_shape[-1]), node)
    work = compute_dtype(grad.dtype)
    with quiet_fp():
        shares = grad.astype(work) / _window_counts(plan, in_shape[1:-1])
    dx = plan.padded_zeros(in_shape, work)
    for _, index in plan.taps():
        dx[index] += shares
    return [np.ascontiguousarray(plan.crop(dx, in_shape)).astype(grad.dtype, copy=False)]


# ---- MaxPoolWithArgmax -----------------------------------------------------------------------
def _flat_positions(shape: tuple, plan: TapPlan, tap: tuple, include_batch: bool) -> _Array:
    """[batch, out_h, out_w, channels] flat input index each output's tap reads (-1 in the
    padding): ((b * H + y) * W + x) * C + c, without the b term unless include_batch."""
    batch, height, width, channels = shape
    ys = np.arange(plan.spans[0].size) * plan.strides[0] + tap[0] - plan.spans[0].pad_before
    xs = np.arange(plan.spans[1].size) * plan.strides[1] + tap[1] - plan.spans[1].pad_before
    inside = ((ys >= 0) & (ys < height))[:, None] & ((xs >= 0) & (xs < width))[None, :]
    pixel = (ys[:, None] * width + xs[None, :]) * channels
    flat = pixel[None, :, :, None] + np.arange(channels)[None, None, None, :]
    if include_batch:
        flat = flat + (np.arange(batch) * height * width * channels)[:, None, None, None]
    else:
        flat = np.broadcast_to(flat, (batch, *flat.shape[1:]))
    return np.where(inside[None, :, :, None], flat, -1)


@register("MaxPoolWithArgmax", dtypes=FLOATS)
def max_pool_with_argmax(ctx: Any, inputs: list, attrs: dict) -> list:
    x = inputs[0]
    node = attrs["_node_name"]
    _require_rank(x, 4, "input", node)
    plan = _pool_plan(x.shape, attrs, "NHWC")
    padded = plan.pad(x, -np.inf)
    include_batch = bool(attrs.get("include_batch_in_index", False))
    best, argmax = None, None
    for tap, index in plan.taps():
        values = padded[index]
        positions = _flat_positions(x.shape, plan, tap, include_batch)
        if best is None:
            best, argmax = values.copy(), positions.copy()
            continue
        wins = (values > best) | ((argmax < 0) & (positions >= 0))   # first maximum wins
        best = np.where(wins, values, best)
        argmax = np.where(wins, positions, argmax)
    return [best, argmax.astype(dtype_attr(attrs, "Targmax", attrs["_node_name"],
                                                ("int32", "int64"), "int64"))]


@register("MaxPoolGradWithArgmax", dtypes=FLOATS)
def max_pool_grad_with_argmax(ctx: Any, inputs: list, attrs: dict) -> list:
    x, grad, argmax = inputs
    node = attrs["_node_name"]
    if grad.shape != argmax.shape:
        raise InvalidArgumentError(f"grad {shape_str(grad.shape)} and argmax "
                                   f"{shape_str(argmax.shape)} must have the same shape (node "
                                   f"'{node}')")
    per_image = int(np.prod(x.shape[1:]))
    flat = argmax.astype(np.int64).reshape(x.shape[0], -1)
    if not attrs.get("include_batch_in_index", False):
        flat = flat + (np.arange(x.shape[0]) * per_image)[:, None]
    flat = flat.reshape(-1)
    if flat.size and (flat.min() < 0 or flat.max() >= x.size):
        raise InvalidArgumentError(f"Invalid argmax: an index is outside the input of shape "
                                   f"{shape_str(x.shape)} (node '{node}')")
    work = compute_dtype(x.dtype)
    dx = np.zeros(x.size, work)
    np.add.at(dx, flat, grad.astype(work, copy=False).reshape(-1))
    return [dx.reshape(x.shape).astype(x.dtype, copy=False)]


# ---- ExtractImagePatches ---------------------------------------------------------------------
@register("ExtractImagePatches")
def extract_image_patches(ctx: Any, inputs: list, attrs: dict) -> list:
    """Each tap's strided slice becomes one ``depth``-wide band of the output's channels."""
    x = inputs[0]
    node = attrs["_node_name"]
    _require_rank(x, 4, "images", node)
    ksizes = [int(k) for k in attrs["ksizes"]]
    if ksizes[0] != 1 or ksizes[3] != 1:
        raise UnimplementedError(f"ksizes must be 1 in the batch and depth dimensions, got "
                                 f"{ksizes} (node '{node}')")
    plan = tap_plan({**attrs, "dilations": attrs["rates"], "data_format": "NHWC"},
                    x.shape[1:3], tuple(ksizes[1:3]), node, "NHWC")
    depth = x.shape[3]
    out_shape = (x.shape[0], *plan.out_spatial, depth * ksizes[1] * ksizes[2])
    check_output_size(out_shape, x.dtype, node)
    padded = plan.pad(x, 0)
    out = np.empty(out_shape, x.dtype)
    for k, (_, index) in enumerate(plan.taps()):
        out[..., k * depth:(k + 1) * depth] = padded[index]
    return [out]

"""Pooling kernels (NHWC): MaxPool, AvgPool and their gradients.

MaxPool and MaxPoolGrad are serial numba loops over the windows, channels innermost
(float16's MaxPool keeps numpy's per-tap maxima over the window view, windows.py).
MaxPoolGrad finds each window's first maximum per channel with selects, not branches, so
the channel loop vectorizes, and then adds the gradient to every tap where it won. Windows
that tile the input (stride = window, no padding) skip bounds checks and write each
gradient element once; 2-wide ones (2x2 above all) run in long loops over a whole row of
windows: a 64x26x26x16 input's MaxPool 350 -> ~105 us, its gradient 900 -> ~210 us.
No parallel region: these run between BLAS calls, where numba's OpenMP threads would spin
against OpenBLAS's (i29-design.md). AvgPool visits the taps with whole-array numpy ops;
AvgPoolGrad shares each gradient among the real (unpadded) elements of its window, the
count AvgPool divided by.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np
from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.framework.window_geometry import Span
from zmtf.kernels.cpu.common import FLOATS, empty, quiet_fp, shape_input, shape_str
from zmtf.kernels.cpu._jit import NUMBA_NP_DTYPES, jit
from zmtf.kernels.cpu.reduce import leading_sum_applies
from zmtf.kernels.cpu.windows import (
    WindowPlan, compute_dtype, require_rank4, window_plan, window_view, zeros_padded,
)
from zmtf.kernels.registry import register

_Array = np.ndarray


def _pool_plan(x_shape: tuple, attrs: dict) -> WindowPlan:
    """The window plan of a pooling node: ``ksize`` is the window, over height and width only."""
    node = attrs["_node_name"]
    ksize = [int(k) for k in attrs["ksize"]]
    if ksize[0] != 1 or ksize[3] != 1:
        raise UnimplementedError(f"Pooling is not yet supported on the batch nor depth "
                                 f"dimensions: ksize {ksize} (node '{node}')")
    return window_plan(attrs, (x_shape[1], x_shape[2]), (ksize[1], ksize[2]), node)


def _valid_counts(axis: Span, in_size: int, window: int, stride: int) -> _Array:
    """Per output position along one axis: how many window taps fall inside the input."""
    starts = np.arange(axis.size) * stride - axis.pad_before
    return np.minimum(starts + window, in_size) - np.maximum(starts, 0)


def _window_sizes(plan: WindowPlan, height: int, width: int) -> _Array:
    """[out_h, out_w, 1]: the real (unpadded) elements in each window; AvgPool divides by it."""
    rows = _valid_counts(plan.rows, height, plan.window[0], plan.strides[0])
    cols = _valid_counts(plan.cols, width, plan.window[1], plan.strides[1])
    return np.multiply.outer(rows, cols)[:, :, None]


@register("MaxPool", dtypes=FLOATS)
def max_pool(ctx: Any, inputs: list, attrs: dict) -> list:
    """MaxPool(value) with ``ksize``, ``strides``, ``padding``: padding never wins a window,
    and a NaN in a window is its maximum (as np.maximum)."""
    x = inputs[0]
    require_rank4(x, "input", attrs["_node_name"])
    plan = _pool_plan(x.shape, attrs)
    out = empty(ctx, (x.shape[0], plan.rows.size, plan.cols.size, x.shape[3]), x.dtype)
    if x.dtype in NUMBA_NP_DTYPES:
        if _tiles(plan) and plan.window[1] == 2:
            _paired_max_pool_kernel(np.ascontiguousarray(x), out, plan.window[0])
        elif _tiles(plan):
            _tiled_max_pool_kernel(np.ascontiguousarray(x), out, *plan.window)
        else:
            _max_pool_kernel(np.ascontiguousarray(x), out, *plan.window, *plan.strides,
                             plan.rows.pad_before, plan.cols.pad_before)
        return [out]
    windows = window_view(plan.padded(x, -np.inf), plan)
    for index, row, col in plan.taps():
        if index == 0:
            np.copyto(out, windows[:, :, :, row, col, :])
        else:
            np.maximum(out, windows[:, :, :, row, col, :], out=out)
    return [out]


@jit()
def _max_pool_kernel(x, out, f_h, f_w, s_h, s_w, top, left):  # type: ignore[no-untyped-def]
    """out[b, i, j, c]: the maximum of window (i, j)'s real elements, NaN if one is NaN
    (np.maximum's rule, from -inf); the channel loop vectorizes."""
    batch, height, width, channels = x.shape
    out_h, out_w = out.shape[1], out.shape[2]
    for b in range(batch):
        for i in range(out_h):
            for j in range(out_w):
                best = out[b, i, j]
                best[:] = -np.inf
                for a in range(f_h):
                    r = i * s_h + a - top
                    if r < 0 or r >= height:
                        continue
                    for e in range(f_w):
                        q = j * s_w + e - left
                        if q < 0 or q >= width:
                            continue
                        row = x[b, r, q]
                        for c in range(channels):
                            best[c] = np.maximum(best[c], row[c])


@jit()
def _max_pool_grad_kernel(x, grad, dx, f_h, f_w, s_h, s_w, top,  # type: ignore[no-untyped-def]
                          left):
    """dx[winner] += grad for every window, the winner being the first real element holding
    the window's maximum: TF scans rows then columns and replaces only on a strictly greater
    value, so ties (and NaNs) keep the earlier one, and padding never wins. The winning tap
    is kept per channel by selects (vectorizable), then each tap adds where it won."""
    batch, height, width, channels = x.shape
    out_h, out_w = grad.shape[1], grad.shape[2]
    best = np.empty(channels, x.dtype)
    winner = np.empty(channels, np.int64)
    for b in range(batch):
        for i in range(out_h):
            for j in range(out_w):
                tap = 0
                first = True
                for a in range(f_h):
                    r = i * s_h + a - top
                    for e in range(f_w):
                        q = j * s_w + e - left
                        if 0 <= r < height and 0 <= q < width:
                            if first:
                                for c in range(channels):
                                    best[c] = x[b, r, q, c]
                                    winner[c] = tap
                                first = False
                            else:
                                for c in range(channels):
                                    value = x[b, r, q, c]
                                    better = value > best[c]
                                    best[c] = value if better else best[c]
                                    winner[c] = tap if better else winner[c]
                        tap += 1
                if first:
                    continue   # no real element in this window
                tap = 0
                for a in range(f_h):
                    r = i * s_h + a - top
                    for e in range(f_w):
                        q = j * s_w + e - left
                        if 0 <= r < height and 0 <= q < width:
                            for c in range(channels):
                                share = grad[b, i, j, c] if winner[c] == tap else 0
                                dx[b, r, q, c] += share
                        tap += 1


@jit()
def _paired_max_pool_grad_kernel(x, grad, dx, f_h, relu, sums, zero):  # type: ignore[no-untyped-def]
    """_tiled_max_pool_grad_kernel for windows 2 wide, in long loops over a row of windows
    instead of a short one per window. The scan's winner is found row by row: row 0 as the
    scan starts it (its first element, NaN or not, then strictly greater), each later row's
    own first strict maximum ignoring NaNs (which never win), taken when strictly greater
    than the best so far: the same winner as one scan of the window in row-major order.
    With ``relu`` the winner's share is ReluGrad's too, ``share * float(winner > 0)`` (x is
    the Relu's output: ReluGrad(MaxPoolGrad(x, y, g), x) in one pass; every other element
    is 0 either way). A non-empty ``sums`` (+0.0 each) gets dx summed over all but the
    channel axis, in dx's element order as ``reduce._leading_sum`` adds them (the bias's
    gradient): the elements left out are the +0.0s, which leave such a sum as it is."""
    summing = sums.shape[0] > 0
    batch, channels = x.shape[0], x.shape[3]
    out_h, out_w = grad.shape[1], grad.shape[2]
    width = out_w * channels
    best = np.empty(width, x.dtype)
    winner = np.empty(width, np.int64)
    for b in range(batch):
        for i in range(out_h):
            for a in range(f_h):
                row = x[b, i * f_h + a].reshape(-1)
                for j in range(out_w):
                    start, done = 2 * j * channels, j * channels
                    for c in range(channels):
                        left, right = row[start + c], row[start + channels + c]
                        if a == 0:
                            take = right > left
                            best[done + c] = right if take else left
                            winner[done + c] = 1 if take else 0
                        else:
                            pick = (right > left) | (left != left)   # NaNs never win
                            top = right if pick else left
                            better = top > best[done + c]
                            best[done + c] = top if better else best[done + c]
                            winner[done + c] = 2 * a + pick if better else winner[done + c]
            g = grad[b, i].reshape(-1)
            if relu:
                for k in range(width):
                    best[k] = g[k] * np.float32(best[k] > 0)
                g = best
            for a in range(f_h):
                target = dx[b, i * f_h + a].reshape(-1)
                for j in range(out_w):
                    start, done = 2 * j * channels, j * channels
                    for c in range(channels):
                        tap = winner[done + c] - 2 * a
                        share = g[done + c]
                        target[start + c] = share if tap == 0 else 0
                        target[start + channels + c] = share if tap == 1 else 0
                        if summing:
                            sums[c] += share if (tap == 0) | (tap == 1) else zero


@register("MaxPoolGrad", dtypes=FLOATS)
def max_pool_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """MaxPoolGrad(orig_input, orig_output, grad): each output's gradient goes to the input
    element that won its window (the first, on ties)."""
    x, _, grad = inputs
    require_rank4(x, "input", attrs["_node_name"])
    plan = _pool_plan(x.shape, attrs)
    expected = (x.shape[0], plan.rows.size, plan.cols.size, x.shape[3])
    if tuple(grad.shape) != expected:
        raise InvalidArgumentError(f"grad must have shape {shape_str(expected)}, got "
                                   f"{shape_str(grad.shape)} (node '{attrs['_node_name']}')")
    work = compute_dtype(x.dtype)
    x, grad = np.ascontiguousarray(x, work), np.ascontiguousarray(grad, work)
    if _tiles(plan):   # every element in one window at most: written once, not added to
        dx = np.empty(x.shape, work)
        if plan.window[1] == 2:
            _paired_max_pool_grad_kernel(x, grad, dx, plan.window[0], False, _NO_SUMS[work],
                                         work.type(0))
        else:
            _tiled_max_pool_grad_kernel(x, grad, dx, *plan.window)
        dx[:, plan.rows.size * plan.strides[0]:] = 0   # rows and columns no window covers
        dx[:, :, plan.cols.size * plan.strides[1]:] = 0
    else:
        dx = np.zeros(x.shape, work)
        _max_pool_grad_kernel(x, grad, dx, *plan.window, *plan.strides, plan.rows.pad_before,
                              plan.cols.pad_before)
    return [dx.astype(inputs[0].dtype, copy=False)]


def max_pool_grad_relu_grad(ctx: Any, x: _Array, grad: _Array, attrs: dict, sum_channels: bool = False
                            ) -> list | None:
    """ReluGrad(MaxPoolGrad(x, _, grad), x) in one pass where x is a Relu's output: the
    fused node of runtime.conv_fusion; with ``sum_channels`` also its sum over all but the
    channel axis (the bias's gradient, SumToShape's value) in the same pass. The same bits
    as the kernels; None for windows other than 2 wide tiling ones (or float16), which run
    the kernels, and with ``sum_channels`` for inputs SumToShape would not sum in dx's
    order (``reduce.leading_sum_applies``)."""
    by_images = relu_pool_grad_by_images(x, grad, attrs, sum_channels)
    if by_images is None:
        return None
    fill, sums = by_images
    dx = empty(ctx, x.shape, x.dtype)
    fill(0, x.shape[0], dx)
    return [dx, sums] if sum_channels else [dx]


def relu_pool_grad_by_images(x: _Array, grad: _Array, attrs: dict, sum_channels: bool = False
                             ) -> tuple[Callable[[int, int, _Array], None], _Array] | None:
    """``max_pool_grad_relu_grad`` a few images at a time: ``(fill, sums)`` where
    ``fill(lo, hi, out)`` writes images [lo, hi)'s gradient into ``out`` (an [hi - lo, ...]
    array of x's dtype) and adds their share to ``sums`` (empty without ``sum_channels``).
    Images filled in order, [0, n) in all, give ``sums`` the bits of the whole batch's
    (runtime/pooled_filter_gradient.py uses each chunk before the next is computed)."""
    if x.dtype not in _PAIRED_DTYPES or grad.dtype != x.dtype or x.ndim != 4:
        return None
    if sum_channels and not leading_sum_applies(x, 3):
        return None
    plan = _pool_plan(x.shape, attrs)
    if not (_tiles(plan) and plan.window[1] == 2 and grad.shape == (x.shape[0], plan.rows.size,
                                                                     plan.cols.size, x.shape[3])):
        return None
    x, grad = np.ascontiguousarray(x), np.ascontiguousarray(grad)
    sums = np.zeros(x.shape[3], x.dtype) if sum_channels else _NO_SUMS[x.dtype]
    zero = x.dtype.type(0)

    def fill(lo: int, hi: int, out: _Array) -> None:
        _paired_max_pool_grad_kernel(x[lo:hi], grad[lo:hi], out, plan.window[0], True, sums, zero)
        out[:, plan.rows.size * plan.strides[0]:] = 0   # rows and columns no window covers
        out[:, :, plan.cols.size * plan.strides[1]:] = 0

    return fill, sums


_PAIRED_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_NO_SUMS = {np.dtype(np.float32): np.zeros(0, np.float32), np.dtype(np.float64): np.zeros(0, np.float64)}


def _tiles(plan: WindowPlan) -> bool:
    """Whether the windows tile the input without overlap or padding (2x2, stride 2, VALID):
    the kernels then skip bounds checks, and the gradient writes each element once."""
    return (plan.strides == plan.window and not plan.rows.pad_before and not plan.rows.pad_after
            and not plan.cols.pad_before and not plan.cols.pad_after)


@jit()
def _tiled_max_pool_kernel(x, out, f_h, f_w):  # type: ignore[no-untyped-def]
    """MaxPool where window (i, j) is x[:, i*f_h:(i+1)*f_h, j*f_w:(j+1)*f_w]: np.maximum's
    rule from the first tap, without bounds checks."""
    batch, channels = x.shape[0], x.shape[3]
    out_h, out_w = out.shape[1], out.shape[2]
    for b in range(batch):
        for i in range(out_h):
            for j in range(out_w):
                best = out[b, i, j]
                first = x[b, i * f_h, j * f_w]
                for c in range(channels):
                    best[c] = first[c]
                for a in range(f_h):
                    for e in range(f_w):
                        if a + e > 0:
                            row = x[b, i * f_h + a, j * f_w + e]
                            for c in range(channels):
                                best[c] = np.maximum(best[c], row[c])


@jit()
def _paired_max_pool_kernel(x, out, f_h):  # type: ignore[no-untyped-def]
    """_tiled_max_pool_kernel for windows 2 wide (2x2 above all): first the window's rows
    down into one row, a long contiguous loop that vectorizes, then each pair of pixels of
    that row across. 3x fewer cycles than per window and channel run (64x26x26x16: 300 ->
    105 us); for wider windows the across step loses that, so they keep the other kernel."""
    batch, channels = x.shape[0], x.shape[3]
    out_h, out_w = out.shape[1], out.shape[2]
    span = out_w * 2 * channels   # the part of an input row the windows cover
    rows = np.empty(span, x.dtype)
    for b in range(batch):
        for i in range(out_h):
            top = x[b, i * f_h].reshape(-1)
            if f_h == 1:
                rows[:] = top[:span]
            else:
                second = x[b, i * f_h + 1].reshape(-1)
                for t in range(span):
                    rows[t] = np.maximum(top[t], second[t])
            for a in range(2, f_h):
                below = x[b, i * f_h + a].reshape(-1)
                for t in range(span):
                    rows[t] = np.maximum(rows[t], below[t])
            target = out[b, i].reshape(-1)
            for j in range(out_w):
                start = 2 * j * channels
                for c in range(channels):
                    target[j * channels + c] = np.maximum(rows[start + c],
                                                          rows[start + channels + c])


@jit()
def _tiled_max_pool_grad_kernel(x, grad, dx, f_h, f_w):  # type: ignore[no-untyped-def]
    """MaxPoolGrad for tiling windows: dx[window tap] = grad where the tap won (the first
    strictly greater, as _max_pool_grad_kernel), 0 elsewhere in the window."""
    batch, channels = x.shape[0], x.shape[3]
    out_h, out_w = grad.shape[1], grad.shape[2]
    best = np.empty(channels, x.dtype)
    winner = np.empty(channels, np.int64)
    for b in range(batch):
        for i in range(out_h):
            for j in range(out_w):
                first = x[b, i * f_h, j * f_w]
                for c in range(channels):
                    best[c] = first[c]
                    winner[c] = 0
                tap = 0
                for a in range(f_h):
                    for e in range(f_w):
                        if tap > 0:
                            row = x[b, i * f_h + a, j * f_w + e]
                            for c in range(channels):
                                value = row[c]
                                better = value > best[c]
                                best[c] = value if better else best[c]
                                winner[c] = tap if better else winner[c]
                        tap += 1
                tap = 0
                for a in range(f_h):
                    for e in range(f_w):
                        target = dx[b, i * f_h + a, j * f_w + e]
                        for c in range(channels):
                            target[c] = grad[b, i, j, c] if winner[c] == tap else 0
                        tap += 1


@register("AvgPool", dtypes=FLOATS)
def avg_pool(ctx: Any, inputs: list, attrs: dict) -> list:
    """AvgPool(value): each window's mean over its real elements (SAME padding not counted)."""
    x = inputs[0]
    require_rank4(x, "input", attrs["_node_name"])
    plan = _pool_plan(x.shape, attrs)
    work = compute_dtype(x.dtype)
    windows = window_view(plan.padded(x.astype(work, copy=False), 0), plan)
    total = np.zeros((x.shape[0], plan.rows.size, plan.cols.size, x.shape[3]), work)
    for _, row, col in plan.taps():
        total += windows[:, :, :, row, col, :]
    with quiet_fp():
        total /= _window_sizes(plan, x.shape[1], x.shape[2])
    return [total.astype(x.dtype, copy=False)]


@register("AvgPoolGrad", dtypes=["int32", "int64"])
def avg_pool_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """AvgPoolGrad(orig_input_shape, grad): each output's gradient shared evenly by the real
    elements of its window. Registered by the shape's dtype (the op's first input)."""
    shape_arg, grad = inputs
    node = attrs["_node_name"]
    in_shape = shape_input(shape_arg, node)
    if len(in_shape) != 4:
        raise InvalidArgumentError(f"orig_input_shape must have 4 elements, got "
                                   f"{shape_str(in_shape)} (node '{node}')")
    plan = _pool_plan(in_shape, attrs)
    expected = (in_shape[0], plan.rows.size, plan.cols.size, in_shape[3])
    if tuple(grad.shape) != expected:
        raise InvalidArgumentError(f"grad must have shape {shape_str(expected)}, got "
                                   f"{shape_str(grad.shape)} (node '{node}')")
    work = compute_dtype(grad.dtype)
    with quiet_fp():
        shares = grad.astype(work) / _window_sizes(plan, in_shape[1], in_shape[2])
    padded = zeros_padded(plan, in_shape, work)
    targets = window_view(padded, plan, writeable=True)
    for _, row, col in plan.taps():
        targets[:, :, :, row, col, :] += shares
    dx = plan.cropped(padded, in_shape[1], in_shape[2])
    return [np.ascontiguousarray(dx, dtype=grad.dtype)]

"""Convolution kernels (NHWC): Conv2D, Conv2DBackpropInput, Conv2DBackpropFilter.

* Conv2D is im2col + BLAS: the window view (windows.py) is copied, a chunk of images at a
  time, into a reused column buffer (one row per output pixel) and multiplied by the filter
  as an [f_h * f_w * in_c, out_c] matrix. Chunks keep the buffer near ``_COLUMN_BUDGET``
  elements instead of materializing every image's columns at once (160 MB for a 64x28x28x32
  input under a 5x5 filter).
* The filter gradient is columns.T @ dy over the same chunks; the input gradient is
  dy @ filter.T (columns again), added back where each window was read from by a numba
  loop (col2im).

* A one-channel input (the first layer of an image model) takes its columns transposed,
  [depth, pixels]: a row per filter tap, each a copy of the image shifted, whose runs along
  the width are contiguous. Row-major columns would copy one float at a time (64x28x28x1
  under a 3x3 filter: 660 us against 93 us; BLAS takes the transposed operand at the same
  speed). Measured with 3 channels the two layouts tie, with 8 row-major wins.

float16 is computed in float32 and rounded once at the end, as in nn.py.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import FLOATS, empty, quiet_fp, shape_input, shape_str
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.cpu.blas import use_threads_for
from zmtf.kernels.cpu.windows import (
    compute_dtype, require_rank4, window_plan, window_view, zeros_padded,
)
from zmtf.kernels.registry import register

_Array = np.ndarray

#: Elements of im2col buffer per chunk (4 MB in float32): the columns are still in cache when
#: the matmul reads them. Measured on the 2-vCPU target, 64x28x28x32 input, 5x5x32x64 filter,
#: SAME: 33 ms per Conv2D at 1M elements, 47 ms at 4M, 52 ms unchunked (all 160 MB at once).
_COLUMN_BUDGET = 1 << 20


def _batch_chunks(batch: int, per_image: int) -> Iterator[tuple[int, int]]:
    """[lo, hi) image ranges whose columns fit ``_COLUMN_BUDGET`` (at least one image each)."""
    step = max(1, _COLUMN_BUDGET // max(per_image, 1))
    for lo in range(0, batch, step):
        yield lo, min(batch, lo + step)


class _Conv:
    """One convolution's shapes, checked, plus the im2col column chunks they lead to."""

    def __init__(self, ctx: Any, in_shape: tuple, filter_shape: tuple, attrs: dict) -> None:
        node = attrs["_node_name"]
        batch, height, width, channels = in_shape
        f_h, f_w, f_in, f_out = filter_shape
        if channels != f_in:
            raise InvalidArgumentError(
                f"input depth must match the filter's input depth: {channels} vs {f_in} (input "
                f"{shape_str(in_shape)}, filter {shape_str(filter_shape)}, node '{node}')")
        self.ctx, self.node = ctx, node
        self.in_shape, self.filter_shape = tuple(in_shape), tuple(filter_shape)
        self.plan = window_plan(attrs, (height, width), (f_h, f_w), node)
        self.out_shape = (batch, self.plan.rows.size, self.plan.cols.size, f_out)
        self.depth = f_h * f_w * channels  # one column row per output pixel
        #: columns stored [depth, pixels] (one row per tap) rather than [pixels, depth]
        self.transposed = channels == 1

    def check_out_backprop(self, grad: _Array) -> None:
        if tuple(grad.shape) != self.out_shape:
            raise InvalidArgumentError(
                f"out_backprop must have shape {shape_str(self.out_shape)} for input "
                f"{shape_str(self.in_shape)} and filter {shape_str(self.filter_shape)}, got "
                f"{shape_str(grad.shape)} (node '{self.node}')")

    def chunks(self, dtype: np.dtype, transposed: bool | None = None
               ) -> Iterator[tuple[int, int, _Array]]:
        """(lo, hi, buffer): a [(hi-lo) * out_h * out_w, depth] buffer per batch chunk,
        stored transposed if ``transposed`` (by default ``self.transposed``)."""
        transposed = self.transposed if transposed is None else transposed
        pixels = self.out_shape[1] * self.out_shape[2]
        chunks = list(_batch_chunks(self.in_shape[0], pixels * self.depth))
        largest = max((hi - lo for lo, hi in chunks), default=0)
        buffer = empty(self.ctx, (largest * pixels * self.depth,), dtype)
        for lo, hi in chunks:
            rows = (hi - lo) * pixels
            if transposed:   # a [pixels, depth] view of [depth, pixels] memory
                yield lo, hi, buffer[:rows * self.depth].reshape(self.depth, rows).T
            else:
                yield lo, hi, buffer[:rows * self.depth].reshape(rows, self.depth)


def _im2col(windows: _Array, lo: int, hi: int, buffer: _Array) -> _Array:
    """Images [lo, hi)'s windows copied into ``buffer`` (a [pixels, depth] array, maybe a
    transposed view, see ``_Conv.transposed``), one row per output pixel."""
    chunk = windows[lo:hi]
    if buffer.flags.c_contiguous:
        np.copyto(buffer.reshape(chunk.shape), chunk)
    else:   # [depth, pixels] memory: the taps outermost
        n, out_h, out_w, f_h, f_w, channels = chunk.shape
        np.copyto(buffer.T.reshape(f_h, f_w, channels, n, out_h, out_w),
                  chunk.transpose(3, 4, 5, 0, 1, 2))
    return buffer


def _matmul(a: _Array, b: _Array, out: _Array) -> None:
    use_threads_for(2 * a.shape[0] * a.shape[1] * b.shape[1])
    np.matmul(a, b, out=out)


@register("Conv2D", dtypes=FLOATS)
def conv2d(ctx: Any, inputs: list, attrs: dict) -> list:
    """Conv2D(input [n,h,w,c], filter [fh,fw,c,o]) with ``strides``, ``padding``, ``dilations``."""
    x, kernel = inputs
    require_rank4(x, "input", attrs["_node_name"])
    require_rank4(kernel, "filter", attrs["_node_name"])
    conv = _Conv(ctx, x.shape, kernel.shape, attrs)
    work = compute_dtype(x.dtype)
    weights = kernel.astype(work, copy=False).reshape(conv.depth, kernel.shape[3])
    out = empty(ctx, conv.out_shape, work)
    windows = window_view(conv.plan.padded(x.astype(work, copy=False), 0), conv.plan)
    rows = out.reshape(-1, conv.out_shape[3])
    pixels = conv.out_shape[1] * conv.out_shape[2]
    with quiet_fp():
        for lo, hi, buffer in conv.chunks(work):
            columns = _im2col(windows, lo, hi, buffer)
            _matmul(columns, weights, rows[lo * pixels:hi * pixels])
    return [out.astype(x.dtype, copy=False)]


@register("Conv2DBackpropFilter", dtypes=FLOATS)
def conv2d_backprop_filter(ctx: Any, inputs: list, attrs: dict) -> list:
    """Conv2DBackpropFilter(input, filter_sizes, out_backprop) -> d loss / d filter."""
    x, filter_sizes, grad = inputs
    node = attrs["_node_name"]
    require_rank4(x, "input", node)
    filter_shape = shape_input(filter_sizes, node)
    if len(filter_shape) != 4:
        raise InvalidArgumentError(f"filter_sizes must have 4 elements, got "
                                   f"{shape_str(filter_shape)} (node '{node}')")
    conv = _Conv(ctx, x.shape, filter_shape, attrs)
    conv.check_out_backprop(grad)
    work = compute_dtype(x.dtype)
    windows = window_view(conv.plan.padded(x.astype(work, copy=False), 0), conv.plan)
    grad_rows = grad.astype(work, copy=False).reshape(-1, filter_shape[3])
    total = np.zeros((conv.depth, filter_shape[3]), work)
    partial = np.empty_like(total)
    pixels = conv.out_shape[1] * conv.out_shape[2]
    with quiet_fp():
        for lo, hi, buffer in conv.chunks(work):
            columns = _im2col(windows, lo, hi, buffer)
            _matmul(columns.T, grad_rows[lo * pixels:hi * pixels], partial)
            total += partial
    return [total.reshape(filter_shape).astype(x.dtype, copy=False)]


@register("Conv2DBackpropInput", dtypes=["int32", "int64"])
def conv2d_backprop_input(ctx: Any, inputs: list, attrs: dict) -> list:
    """Conv2DBackpropInput(input_sizes, filter, out_backprop) -> d loss / d input.

    Registered by ``input_sizes``' dtype (the op's first input), like Fill; the float dtype
    is the filter's."""
    input_sizes, kernel, grad = inputs
    node = attrs["_node_name"]
    in_shape = shape_input(input_sizes, node)
    if len(in_shape) != 4:
        raise InvalidArgumentError(f"input_sizes must have 4 elements, got {shape_str(in_shape)} "
                                   f"(node '{node}')")
    if kernel.dtype.name not in FLOATS:
        raise InvalidArgumentError(f"filter must be float16, float32 or float64, got "
                                   f"{kernel.dtype.name} (node '{node}')")
    require_rank4(kernel, "filter", node)
    conv = _Conv(ctx, in_shape, kernel.shape, attrs)
    conv.check_out_backprop(grad)
    work = compute_dtype(kernel.dtype)
    weights_t = kernel.astype(work, copy=False).reshape(conv.depth, kernel.shape[3]).T
    grad_rows = grad.astype(work, copy=False).reshape(-1, kernel.shape[3])
    plan = conv.plan
    padded = zeros_padded(plan, in_shape, work)
    pixels = conv.out_shape[1] * conv.out_shape[2]
    with quiet_fp():
        for lo, hi, buffer in conv.chunks(work, transposed=False):   # col2im reads rows
            _matmul(grad_rows[lo * pixels:hi * pixels], weights_t, buffer)
            columns = buffer.reshape((hi - lo, *conv.out_shape[1:3], *plan.window, in_shape[3]))
            _col2im_kernel(columns, padded[lo:hi], *plan.strides, *plan.dilations)
    dx = plan.cropped(padded, in_shape[1], in_shape[2])
    return [np.ascontiguousarray(dx, dtype=kernel.dtype)]


# NOTE: serial on purpose. It runs between two BLAS calls once per chunk; a parallel region
# there leaves numba's OpenMP threads spinning while OpenBLAS's want the same cores (without
# OMP_WAIT_POLICY=passive a 64x28x28x32 input gradient took 480 ms instead of 30).
@jit()
def _col2im_kernel(columns, padded, s_h, s_w, d_h, d_w):  # type: ignore[no-untyped-def]
    """padded[b, i*s_h + a*d_h, j*s_w + e*d_w, :] += columns[b, i, j, a, e, :]: each window
    row added back where it was read from."""
    batch, out_h, out_w, f_h, f_w, channels = columns.shape
    for b in range(batch):
        for i in range(out_h):
            for j in range(out_w):
                for a in range(f_h):
                    r = i * s_h + a * d_h
                    for e in range(f_w):
                        q = j * s_w + e * d_w
                        for c in range(channels):
                            padded[b, r, q, c] += columns[b, i, j, a, e, c]

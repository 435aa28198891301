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

from collections.abc import Callable
from typing import Any, Iterator

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import FLOATS, empty, quiet_fp, shape_input, shape_str
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.cpu.blas import use_threads_for
from zmtf.kernels.cpu import parts
from zmtf.kernels.cpu.windows import (
    compute_dtype, require_rank4, window_plan, window_view, zeros_padded,
)
from zmtf.kernels.registry import register

_Array = np.ndarray

#: Elements of im2col buffer per chunk (4 MB in float32): the columns are still in cache when
#: the matmul reads them. Measured on the 2-vCPU target, 64x28x28x32 input, 5x5x32x64 filter,
#: SAME: 33 ms per Conv2D at 1M elements, 47 ms at 4M, 52 ms unchunked (all 160 MB at once).
_COLUMN_BUDGET = 1 << 20


#: A convolution of at least this many flops (one GEMM's 2*m*n*k over the whole batch) runs
#: in at least ``parts.WORKERS`` batch chunks, which the calling thread and the intra-op
#: helper share (parts.run_parts). The chunks depend on the shapes only, never on whether
#: the helper runs, so the values do not either. The small CNN's first conv is 2^23.6.
SPLIT_MIN_FLOPS = 1 << 24


#: The same for a one-channel input's columns (``_Conv.transposed``), which a Conv2D keeps
#: for its filter gradient (SharedColumns): chunks of ~10 of the small CNN's 28x28 images
#: keep each chunk's columns and output rows in L2 through the GEMM and the epilogue, and
#: the filter gradient's [9, pixels] x [pixels, 16] products run faster at that size.
#: Measured there (one thread, caches flushed before each call, 64 images): forward
#: 546-557 -> 491-508 us, filter gradient 534-535 -> 349-382 us, against one chunk; chunks of
#: 16 or of 5 images were slower than 10.
_ONE_CHANNEL_BUDGET = 1 << 16


def _batch_chunks(batch: int, per_image: int, min_count: int = 1,
                  budget: int | None = None) -> Iterator[tuple[int, int]]:
    """[lo, hi) image ranges whose columns fit ``budget`` (``_COLUMN_BUDGET``; at least one image each),
    at least ``min_count`` of them (as the batch allows), of equal sizes: 64 images in
    chunks of 60 and 4 left a GEMM too small to run at speed (the small CNN's second conv:
    32 + 32 took ~10% less than 60 + 4, forward and filter gradient alike)."""
    most = max(1, (_COLUMN_BUDGET if budget is None else budget) // max(per_image, 1))
    count = min(batch, max(-(-batch // most), min_count))
    step = -(-batch // max(count, 1))
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

    def batch_chunks(self) -> list[tuple[int, int]]:
        """The [lo, hi) image ranges every GEMM of this convolution runs over."""
        rows = self.out_shape[0] * self.out_shape[1] * self.out_shape[2]
        split = 2 * rows * self.depth * self.out_shape[3] >= SPLIT_MIN_FLOPS
        return list(_batch_chunks(self.in_shape[0], self.out_shape[1] * self.out_shape[2] * self.depth,
                                  parts.WORKERS if split else 1,
                                  _ONE_CHANNEL_BUDGET if self.transposed else None))

    def columns(self, dtype: np.dtype) -> _Array:
        """A [pixels of all images, depth] buffer for the whole batch's columns (a transposed
        view if ``self.transposed``)."""
        batch = self.in_shape[0]
        return self.column_view(self.columns_buffer(dtype, batch), 0, batch)

    def key(self, kind: str, dtype: np.dtype) -> tuple:
        """What ``parts`` times this convolution's kernel ``kind`` under."""
        return (kind, dtype.str, self.in_shape, self.filter_shape, self.out_shape, self.transposed)

    def run_chunks(self, kind: str, dtype: np.dtype, fn: Callable[[int, int, int, _Array], None],
                   transposed: bool | None = None, windows: _Array | None = None,
                   in_order: bool = False) -> None:
        """``fn(k, lo, hi, buffer)`` for each batch chunk k, images [lo, hi), with a
        [(hi-lo) * out_h * out_w, depth] column buffer (stored transposed if ``transposed``,
        by default ``self.transposed``), holding the chunk's im2col columns of ``windows``
        when given. The chunks run in groups of ``parts.WORKERS``, shared out between the
        calling thread and the intra-op helper (parts.run_parts), a buffer per chunk of the
        group. Each part copies its own columns: np.copyto releases the GIL (two threads
        copying the small CNN's 32-image columns took 101 us together, 103 us one alone; on
        2026-12-07 155-226 us together, 101 alone: the copies share one memory bus).
        ``kind`` names the kernel: whether two workers win is timed per kind and shapes
        (parts.run_keyed). ``in_order``: every chunk on this thread, in order, untimed (an
        ``fn`` that must see the chunks one after another)."""
        transposed = self.transposed if transposed is None else transposed
        chunks = self.batch_chunks()
        self._run(kind, dtype, len(chunks), in_order, lambda workers: self._run_groups(
            dtype, fn, transposed, windows, chunks, workers))

    def run_over_chunks(self, kind: str, dtype: np.dtype, fn: Callable[[int, int, int], None],
                        in_order: bool = False) -> None:
        """``fn(k, lo, hi)`` for each batch chunk k, images [lo, hi), shared out and timed
        as in ``run_chunks``, without column buffers (for the forward's kept columns)."""
        chunks = self.batch_chunks()
        self._run(kind, dtype, len(chunks), in_order, lambda workers: parts.run_parts(
            len(chunks), lambda k, worker: fn(k, *chunks[k]), workers))

    def _run(self, kind: str, dtype: np.dtype, count: int, in_order: bool,
             body: Callable[[int], None]) -> None:
        if in_order:
            body(1)
        else:
            parts.run_keyed(self.key(kind, dtype), count, body)

    def columns_buffer(self, dtype: np.dtype, images: int) -> _Array:
        """Memory for ``images`` images' columns (see ``column_view``)."""
        return empty(self.ctx, (images * self.out_shape[1] * self.out_shape[2] * self.depth,), dtype)

    def column_view(self, memory: _Array, lo: int, hi: int, transposed: bool | None = None) -> _Array:
        """Images [lo, hi)'s [pixels, depth] columns in ``memory`` (a transposed view of
        [depth, pixels] memory if ``transposed``, by default ``self.transposed``)."""
        rows = (hi - lo) * self.out_shape[1] * self.out_shape[2]
        memory = memory[:rows * self.depth]
        if self.transposed if transposed is None else transposed:
            return memory.reshape(self.depth, rows).T
        return memory.reshape(rows, self.depth)

    def _run_groups(self, dtype: np.dtype, fn: Callable[[int, int, int, _Array], None], transposed: bool,
                    windows: _Array | None, chunks: list[tuple[int, int]], workers: int) -> None:
        largest = max((hi - lo for lo, hi in chunks), default=0)
        buffers = [self.columns_buffer(dtype, largest) for _ in range(workers)]
        for g in range(0, len(chunks), workers):
            group = chunks[g:g + workers]

            def part(j: int, worker: int, g: int = g, group: list = group) -> None:
                lo, hi = group[j]
                buffer = self.column_view(buffers[j], lo, hi, transposed)
                if windows is not None:
                    _im2col(windows, lo, hi, buffer)
                fn(g + j, lo, hi, buffer)

            parts.run_parts(len(group), part, workers)


def _im2col(windows: _Array, lo: int, hi: int, buffer: _Array) -> _Array:
    """Images [lo, hi)'s windows copied into ``buffer`` (a [pixels, depth] array, maybe a
    transposed view, see ``_Conv.transposed``), one row per output pixel.
    np.copyto, which releases the GIL, so the parts of ``_Conv.run_chunks`` copy in parallel;
    a numba loop took 2-5x as long for row-major columns (the short inner loops of i29conv)."""
    chunk = windows[lo:hi]
    if buffer.flags.c_contiguous:
        np.copyto(buffer.reshape(chunk.shape), chunk)
    else:   # [depth, pixels] memory: the taps outermost
        n, out_h, out_w, f_h, f_w, channels = chunk.shape
        np.copyto(buffer.T.reshape(f_h, f_w, channels, n, out_h, out_w), chunk.transpose(3, 4, 5, 0, 1, 2))
    return buffer


def _matmul(a: _Array, b: _Array, out: _Array) -> None:
    use_threads_for(2 * a.shape[0] * a.shape[1] * b.shape[1])
    np.matmul(a, b, out=out)


@register("Conv2D", dtypes=FLOATS)
def conv2d(ctx: Any, inputs: list, attrs: dict) -> list:
    """Conv2D(input [n,h,w,c], filter [fh,fw,c,o]) with ``strides``, ``padding``, ``dilations``."""
    x, kernel = inputs
    out, _ = _forward(ctx, x, kernel, attrs, keep_columns=False)
    return [out.astype(x.dtype, copy=False)]


class SharedColumns:
    """A Conv2D's im2col columns of ``x`` (all images, one buffer), handed to the filter
    gradient of the same input in the same step (runtime.conv_fusion) so it does not copy
    them again. The filter gradient uses them only for the very same input array and
    window, else it copies its own."""

    __slots__ = ("x", "window", "columns")

    def __init__(self, x: _Array, window: tuple[int, int], columns: _Array) -> None:
        self.x, self.window, self.columns = x, window, columns


#: Columns a Conv2D keeps for its filter gradient at most (elements; 16 MB in float32): past
#: that the forward copies them a chunk at a time, and the gradient again.
SHARED_COLUMNS_BUDGET = 1 << 22


def _forward(ctx: Any, x: _Array, kernel: _Array, attrs: dict, keep_columns: bool,
             epilogue: Callable[[_Array], None] | None = None) -> tuple[_Array, SharedColumns | None]:
    """The convolution in the compute dtype, and with ``keep_columns`` its im2col columns
    for the filter gradient, when they are the transposed (one-channel) kind and fit
    ``SHARED_COLUMNS_BUDGET``. The GEMMs run over the same chunks either way, so the values
    are the same bits. Measured (thread CPU, small CNN): the first conv's filter gradient
    424 -> 313 us with them; the second's (16 channels, 4.4 MB of columns) no faster, and
    its forward slower by as much: its own copy leaves the columns in cache for its GEMM,
    the kept ones come back from memory. ``epilogue`` runs on each chunk's output rows
    right after its GEMM, on the same thread, while they are in cache."""
    require_rank4(x, "input", attrs["_node_name"])
    require_rank4(kernel, "filter", attrs["_node_name"])
    conv = _Conv(ctx, x.shape, kernel.shape, attrs)
    work = compute_dtype(x.dtype)
    weights = kernel.astype(work, copy=False).reshape(conv.depth, kernel.shape[3])
    out = empty(ctx, conv.out_shape, work)
    windows = window_view(conv.plan.padded(x.astype(work, copy=False), 0), conv.plan)
    rows = out.reshape(-1, conv.out_shape[3])
    pixels = conv.out_shape[1] * conv.out_shape[2]
    shared = None
    if keep_columns and conv.transposed and rows.shape[0] * conv.depth <= SHARED_COLUMNS_BUDGET:
        shared = SharedColumns(x, conv.plan.window, conv.columns(work))

    def gemm(k: int, lo: int, hi: int, columns: _Array) -> None:
        out_rows = rows[lo * pixels:hi * pixels]
        _matmul(columns, weights, out_rows)
        if epilogue is not None:
            epilogue(out_rows)

    with quiet_fp():
        if shared is not None:   # each chunk's columns copied into its rows of the kept ones
            kept = shared.columns
            conv.run_over_chunks("forward, kept columns", work, lambda k, lo, hi: gemm(
                k, lo, hi, _im2col(windows, lo, hi, kept[lo * pixels:hi * pixels])))
        else:
            conv.run_chunks("forward", work, gemm, windows=windows)
    return out, shared


def conv2d_bias_relu(ctx: Any, x: _Array, kernel: _Array, bias: _Array | None, relu: bool,
                     attrs: dict, keep_columns: bool) -> list | None:
    """Conv2D, then ``+ bias`` (a [out_c] vector) and Relu in one pass over the output while
    it is in cache: the fused node of runtime.conv_fusion. The same bits as the three
    kernels (Add's float sum, Relu's ``np.maximum(v, 0)``: NaN kept, -0.0 -> 0.0). None when
    the inputs do not fit this path (float16, a bias of another shape or dtype): the caller
    runs the members one by one."""
    if x.dtype not in _BIAS_DTYPES or kernel.dtype != x.dtype:
        return None
    if bias is not None and (bias.ndim != 1 or bias.dtype != x.dtype or kernel.ndim != 4
                             or bias.shape[0] != kernel.shape[3]):
        return None
    epilogue = None
    if bias is not None or relu:
        channels = kernel.shape[3]
        vector = np.ascontiguousarray(bias) if bias is not None else np.zeros(channels, x.dtype)

        def epilogue(out_rows: _Array) -> None:
            _bias_relu_in_place(out_rows, vector, bias is not None, relu)

    out, shared = _forward(ctx, x, kernel, attrs, keep_columns, epilogue)
    return [out, shared] if keep_columns else [out]


_BIAS_DTYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})


@jit()
def _bias_relu_in_place(rows, bias, add, relu):  # type: ignore[no-untyped-def]
    """rows[r, c] = relu(rows[r, c] + bias[c]), each step as its kernel computes it."""
    for r in range(rows.shape[0]):
        for c in range(rows.shape[1]):
            value = rows[r, c] + bias[c] if add else rows[r, c]
            if relu:
                value = value if (value > 0) | (value != value) else 0
            rows[r, c] = value


@register("Conv2DBackpropFilter", dtypes=FLOATS)
def conv2d_backprop_filter(ctx: Any, inputs: list, attrs: dict) -> list:
    """Conv2DBackpropFilter(input, filter_sizes, out_backprop) -> d loss / d filter.

    A fourth input (runtime.conv_fusion) is the forward Conv2D's ``SharedColumns`` or None."""
    x, filter_sizes, grad = inputs[:3]
    conv = _filter_conv(ctx, x, filter_sizes, attrs)
    conv.check_out_backprop(grad)
    grad_rows = grad.astype(compute_dtype(x.dtype), copy=False).reshape(-1, conv.filter_shape[3])
    pixels = conv.out_shape[1] * conv.out_shape[2]
    shared = inputs[3] if len(inputs) > 3 else None
    return [_filter_gradient(conv, x, shared, lambda lo, hi: grad_rows[lo * pixels:hi * pixels], False)]


def conv2d_backprop_filter_by_chunks(ctx: Any, x: _Array, filter_sizes: Any, shared: SharedColumns | None,
                                     attrs: dict, out_shape: tuple, dtype: np.dtype,
                                     fill: Callable[[int, int, _Array], None]) -> _Array | None:
    """The filter gradient for an out_backprop that ``fill(lo, hi, out)`` computes a batch
    chunk at a time into ``out``, chunk after chunk on this thread, each used by its GEMM
    while in cache (runtime/pooled_filter_gradient.py: a first layer's gradient from its
    max pool's). The same bits as conv2d_backprop_filter on the whole out_backprop. None,
    before any ``fill``, when the out_backprop would not be ``out_shape`` of ``dtype`` (the
    compute dtype) for this convolution."""
    conv = _filter_conv(ctx, x, filter_sizes, attrs)
    if tuple(out_shape) != conv.out_shape or dtype != compute_dtype(x.dtype):
        return None
    pixels = conv.out_shape[1] * conv.out_shape[2]
    largest = max(hi - lo for lo, hi in conv.batch_chunks())
    buffer = empty(ctx, (largest, *conv.out_shape[1:]), dtype)

    def rows(lo: int, hi: int) -> _Array:
        out = buffer[:hi - lo]
        fill(lo, hi, out)
        return out.reshape((hi - lo) * pixels, -1)

    return _filter_gradient(conv, x, shared, rows, True)


def _filter_conv(ctx: Any, x: _Array, filter_sizes: Any, attrs: dict) -> _Conv:
    node = attrs["_node_name"]
    require_rank4(x, "input", node)
    filter_shape = shape_input(filter_sizes, node)
    if len(filter_shape) != 4:
        raise InvalidArgumentError(f"filter_sizes must have 4 elements, got "
                                   f"{shape_str(filter_shape)} (node '{node}')")
    return _Conv(ctx, x.shape, filter_shape, attrs)


def _filter_gradient(conv: _Conv, x: _Array, shared: SharedColumns | None,
                     grad_rows: Callable[[int, int], _Array], in_order: bool) -> _Array:
    """columns.T @ out_backprop summed over the batch chunks, ``grad_rows(lo, hi)`` giving
    a chunk's out_backprop rows; ``in_order``: every chunk on this thread, in order."""
    filter_shape = conv.filter_shape
    work = compute_dtype(x.dtype)
    chunks = conv.batch_chunks()
    partials = np.empty((len(chunks), conv.depth, filter_shape[3]), work)
    pixels = conv.out_shape[1] * conv.out_shape[2]
    if shared is not None and not (shared.x is x and shared.window == tuple(filter_shape[:2])
                                   and shared.columns.shape == (conv.in_shape[0] * pixels, conv.depth)
                                   and shared.columns.dtype == work):
        shared = None

    def gemm(k: int, lo: int, hi: int, columns: _Array) -> None:
        _matmul(columns.T, grad_rows(lo, hi), partials[k])

    with quiet_fp():
        if shared is not None:   # the forward's columns, over the same chunks: the same bits
            kept = shared.columns
            conv.run_over_chunks("filter gradient, kept columns", work, lambda k, lo, hi: gemm(
                k, lo, hi, kept[lo * pixels:hi * pixels]), in_order)
        else:
            windows = window_view(conv.plan.padded(x.astype(work, copy=False), 0), conv.plan)
            conv.run_chunks("filter gradient", work, gemm, windows=windows, in_order=in_order)
        total = np.zeros((conv.depth, filter_shape[3]), work)
        for partial in partials:   # in chunk order, whoever computed them: the same bits
            total += partial
    return total.reshape(filter_shape).astype(x.dtype, copy=False)


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

    def part(k: int, lo: int, hi: int, buffer: _Array) -> None:   # chunks write disjoint images
        _matmul(grad_rows[lo * pixels:hi * pixels], weights_t, buffer)
        columns = buffer.reshape((hi - lo, *conv.out_shape[1:3], *plan.window, in_shape[3]))
        _col2im_kernel(columns, padded[lo:hi], *plan.strides, *plan.dilations)

    with quiet_fp():
        conv.run_chunks("input gradient", work, part, transposed=False)   # col2im reads rows
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

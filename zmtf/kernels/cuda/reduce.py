"""Reductions on the GPU: Sum, Mean, Max over any set of axes, ArgMax, SumToShape, MeanGrad.

Adjacent reduced axes (nearly every reduction a model makes) view the input as [A, R, B]
and reduce R with no index arrays: for long rows (B == 1) a block of threads reduces each
output, reading coalesced and summing in shared memory; otherwise (columns, short rows)
a thread per output walks R, neighbouring threads reading neighbouring elements. Long
reductions with few outputs are split into chunks whose float64 partials a second launch
reduces.

Scattered axes use one general kernel: a thread per (output, chunk) pair walks the chunk's reduced elements
(``_plan.reduce_plan`` gives the index arithmetic) and accumulates in float64. When there
are few outputs (a reduce over all axes, a loss), each output's elements are split into
chunks so the GPU has enough threads, and a second launch of the same kernel reduces the
float64 partial results, which are laid out [outputs, chunks]. Empty reductions never
reach a kernel: the output is filled with 0 (Sum), nan (Mean) or -inf (Max), as on CPU.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda, float64

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import normalize_axis, shape_str
from zmtf.kernels.cpu.reduce import reduction_axes
from zmtf.kernels.cuda import _device
from zmtf.kernels.cuda._plan import ReducePlan, chunking, contiguous_reduction, reduce_plan
from zmtf.kernels.cuda.array import fill_with
from zmtf.kernels.cuda.elementwise import MATH
from zmtf.kernels.registry import register
from zmtf.kernels.cuda._plan import broadcast_plan
from zmtf.kernels.shapes import mean_grad_geometry, sum_to_shape_axes


@cuda.jit(device=True)
def _offset(index, dims, strides):  # type: ignore[no-untyped-def]
    """The element offset of row-major ``index`` over ``dims`` with ``strides``."""
    offset = 0
    for d in range(dims.size - 1, -1, -1):
        q = index // dims[d]
        offset += (index - q * dims[d]) * strides[d]
        index = q
    return offset


@cuda.jit(device=True)
def _combine(acc, v, is_max):  # type: ignore[no-untyped-def]
    """acc + v in float64 (float() keeps the simulator in float64 too), or the max of the
    two with NaN winning, as in np.maximum."""
    if is_max:
        if v > acc or v != v:
            return float(v)
        return acc
    return acc + float(v)


@cuda.jit(device=True)
def _chunk(q, chunks, chunk_len, length):  # type: ignore[no-untyped-def]
    """(output, lo, hi): work item q is chunk q % chunks of output q // chunks, which covers
    elements [lo, hi) of that output's ``length``."""
    o = q // chunks
    lo = (q - o * chunks) * chunk_len
    hi = lo + chunk_len
    if hi > length:  # NOTE: not min(): keeps to what every CUDA target lowers natively
        hi = length
    return o, lo, hi


@cuda.jit
def reduce_kernel(  # type: ignore[no-untyped-def]
    x, out, out_dims, out_strides, red_dims, red_strides, red_count, chunks, chunk_len,
    is_max, divisor,
):
    """out[o * chunks + c] = sum (or max) of chunk c of output o's elements, / divisor."""
    for p in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        o, lo, hi = _chunk(p, chunks, chunk_len, red_count)
        base = _offset(o, out_dims, out_strides)
        acc = -math.inf if is_max else 0.0
        for j in range(lo, hi):
            acc = _combine(acc, x[base + _offset(j, red_dims, red_strides)], is_max)
        out[p] = acc / divisor


#: Threads per block of ``row_reduce_kernel``: a power of two (the shared-memory tree).
_ROW_THREADS = 8 if _device.SIMULATOR else 256


@cuda.jit
def row_reduce_kernel(x, out, length, chunks, chunk_len, is_max, divisor):  # type: ignore[no-untyped-def]
    """out[a * chunks + c] = the sum (or max) of chunk c of row a of x ([rows, length]),
    / divisor: one block per output, coalesced reads, a tree in shared memory."""
    partial = cuda.shared.array(_ROW_THREADS, float64)
    tid = cuda.threadIdx.x
    for p in range(cuda.blockIdx.x, out.size, cuda.gridDim.x):
        a, lo, hi = _chunk(p, chunks, chunk_len, length)
        acc = -math.inf if is_max else 0.0
        for j in range(lo + tid, hi, _ROW_THREADS):
            acc = _combine(acc, x[a * length + j], is_max)
        partial[tid] = acc
        cuda.syncthreads()
        step = _ROW_THREADS // 2
        while step > 0:
            if tid < step:
                partial[tid] = _combine(partial[tid], partial[tid + step], is_max)
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            out[p] = partial[0] / divisor
        cuda.syncthreads()   # partial[] is reused by this block's next output


@cuda.jit
def column_reduce_kernel(x, out, length, width, chunks, chunk_len, is_max, divisor):  # type: ignore[no-untyped-def]
    """out[(a * chunks + c) * width + b] = the sum (or max) over chunk c of
    x[a, :, b] (x is [rows, length, width]), / divisor: a thread per output."""
    for p in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        q = p // width
        b = p - q * width
        a, lo, hi = _chunk(q, chunks, chunk_len, length)
        acc = -math.inf if is_max else 0.0
        for r in range(lo, hi):
            acc = _combine(acc, x[(a * length + r) * width + b], is_max)
        out[p] = acc / divisor


@cuda.jit
def arg_max_kernel(  # type: ignore[no-untyped-def]
    x, out, out_dims, out_strides, axis_len, axis_stride
):
    """out[o] = the first index of the maximum along the axis (the first NaN, as numpy)."""
    for o in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        base = _offset(o, out_dims, out_strides)
        best = x[base]
        best_index = 0
        for j in range(1, axis_len):
            v = x[base + j * axis_stride]
            if (v > best or v != v) and best == best:
                best = v
                best_index = j
        out[o] = best_index


#: Blocks a row reduction aims for (each SM of an H100 holds several).
_ROW_BLOCKS = 4 if _device.SIMULATOR else 1024


def _reduce_rows(ctx: Any, x: Any, out: Any, rows: int, length: int, is_max: bool,
                 divisor: float) -> None:
    """out[a] = reduce of row a of flat ``x`` seen as [rows, length]."""
    chunks, chunk_len = chunking(rows, length, _ROW_BLOCKS, 4 * _ROW_THREADS)
    target = out if chunks == 1 else _device.empty(ctx, (rows * chunks,), np.float64)
    _device.launch_blocks(ctx, row_reduce_kernel, target.size, _ROW_THREADS, x, target,
                          length, chunks, chunk_len, is_max, divisor if chunks == 1 else 1.0)
    if chunks > 1:
        _reduce_rows(ctx, target, out, rows, chunks, is_max, divisor)


def _reduce_columns(ctx: Any, x: Any, out: Any, rows: int, length: int, width: int,
                    is_max: bool, divisor: float) -> None:
    """out[a, b] = reduce of flat ``x`` seen as [rows, length, width] over its middle axis."""
    chunks, chunk_len = chunking(rows * width, length, _device.parallel_width())
    if chunks == 1:
        _device.launch(ctx, column_reduce_kernel, out.size, x, out, length, width, 1, length,
                       is_max, divisor)
        return
    partials = _device.empty(ctx, (rows * chunks * width,), np.float64)
    _device.launch(ctx, column_reduce_kernel, partials.size, x, partials, length, width, chunks,
                   chunk_len, is_max, 1.0)
    _reduce_columns(ctx, partials, out, rows, chunks, width, is_max, divisor)


def _run_reduce(ctx: Any, x: Any, out: Any, plan: ReducePlan, is_max: bool, divisor: float) -> None:
    """One or two launches of ``reduce_kernel``; ``out`` is any array of out_count elements."""
    chunks, chunk_len = chunking(plan.out_count, plan.red_count, _device.parallel_width())
    index = [_device.index_array(ctx, a) for a in (plan.out_dims, plan.out_strides)]
    index += [_device.index_array(ctx, a) for a in (plan.red_dims, plan.red_strides)]
    xf = _device.flat(x)
    if chunks == 1:
        target = _device.flat(out)
        _device.launch(
            ctx, reduce_kernel, target.size, xf, target, *index, plan.red_count, 1,
            chunk_len, is_max, float(divisor),
        )
        return
    partials = _device.empty(ctx, (plan.out_count * chunks,), np.float64)
    _device.launch(
        ctx, reduce_kernel, partials.size, xf, partials, *index, plan.red_count, chunks,
        chunk_len, is_max, 1.0,
    )
    _reduce_rows(ctx, partials, _device.flat(out), plan.out_count, chunks, is_max, divisor)


def _reduce(ctx: Any, inputs: list, attrs: dict, kind: str) -> list:
    x = inputs[0]
    if len(inputs) > 1:  # the axes as an input: a few ints, read on the host
        inputs = [x, _device.to_host(ctx, inputs[1])]
    axes = reduction_axes(x, inputs, attrs)
    shape = tuple(
        1 if i in axes else d
        for i, d in enumerate(x.shape)
        if attrs.get("keep_dims", False) or i not in axes
    )
    return [reduce_to(ctx, x, axes, shape, kind)]


#: kind -> (is_max, divide by the count, the value of an empty reduction)
_KINDS: dict[str, tuple[bool, bool, float]] = {
    "sum": (False, False, 0.0),
    "mean": (False, True, math.nan),
    "max": (True, False, -math.inf),
}


def reduce_to(ctx: Any, x: Any, axes: tuple[int, ...], shape: tuple[int, ...], kind: str) -> Any:
    """x reduced over ``axes`` into a new array of ``shape`` (as many elements as the kept
    dims) and x's dtype; ``kind`` is "sum", "mean" or "max"."""
    is_max, mean, empty_value = _KINDS[kind]
    plan = reduce_plan(x.shape, axes)
    out = _device.empty(ctx, shape, x.dtype)
    if out.size == 0:
        return out
    if plan.red_count == 0:
        return fill_with(ctx, out, empty_value)
    divisor = plan.red_count if mean else 1
    view = contiguous_reduction(x.shape, axes)
    if view is None:
        _run_reduce(ctx, x, out, plan, is_max, divisor)
    elif view[2] == 1 and view[1] >= 4 * _ROW_THREADS:   # long rows: a block each
        _reduce_rows(ctx, _device.flat(x), _device.flat(out), view[0], view[1], is_max, divisor)
    else:
        _reduce_columns(ctx, _device.flat(x), _device.flat(out), *view, is_max, divisor)
    return out


@register("Sum", "GPU", MATH)
def sum_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """Sum(x) over ``axis`` (None = all), ``keep_dims``."""
    return _reduce(ctx, inputs, attrs, "sum")


@register("Mean", "GPU", MATH)
def mean_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """Mean(x) over ``axis`` (None = all), ``keep_dims``."""
    return _reduce(ctx, inputs, attrs, "mean")


@register("Max", "GPU", MATH)
def max_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """Max(x) over ``axis``; NaN propagates; an empty reduction gives -inf, as in TF."""
    return _reduce(ctx, inputs, attrs, "max")


@register("ArgMax", "GPU", MATH)
def arg_max(ctx: Any, inputs: list, attrs: dict) -> list:
    """ArgMax(x) along ``axis`` (attr or input 1); ``output_type`` int64 (default) or int32."""
    x = inputs[0]
    node_name = attrs["_node_name"]
    raw_axis = _device.to_host(ctx, inputs[1]) if len(inputs) > 1 else attrs.get("axis", 0)
    axis = normalize_axis(int(np.asarray(raw_axis)), x.ndim, node_name)
    if x.shape[axis] == 0:
        raise InvalidArgumentError(
            f"ArgMax (node '{node_name}'): reduction axis {axis} is empty in shape "
            f"{shape_str(x.shape)}"
        )
    shape = tuple(d for i, d in enumerate(x.shape) if i != axis)
    out = _device.empty(ctx, shape, attrs.get("output_type") or "int64")
    if out.size:
        plan = reduce_plan(x.shape, (axis,))
        index = [_device.index_array(ctx, a) for a in (plan.out_dims, plan.out_strides)]
        axis_stride = math.prod(x.shape[axis + 1 :])
        _device.launch(
            ctx, arg_max_kernel, out.size, _device.flat(x), _device.flat(out), *index,
            x.shape[axis], axis_stride,
        )
    return [out]


@register("SumToShape", "GPU", MATH)
def sum_to_shape(ctx: Any, inputs: list, attrs: dict) -> list:
    """SumToShape(x, shape): sum the dims numpy broadcasting added, to get exactly ``shape``."""
    x = inputs[0]
    target = tuple(int(d) for d in _device.to_host(ctx, inputs[1]).reshape(-1))
    axes = sum_to_shape_axes(tuple(x.shape), tuple(target), attrs["_node_name"])
    if not axes:
        return [x.reshape(target)]
    return [reduce_to(ctx, x, axes, target, "sum")]


@cuda.jit
def spread_kernel(grad, out, dims, strides, count):  # type: ignore[no-untyped-def]
    """out[i] = grad[broadcast offset of i] / count (MeanGrad)."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = grad[_offset(i, dims, strides)] / count


@register("MeanGrad", "GPU", MATH)
def mean_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    """MeanGrad(grad, shape): grad broadcast back over the reduced axes, divided by the count."""
    grad = inputs[0]
    node = attrs["_node_name"]
    target = tuple(int(d) for d in _device.to_host(ctx, inputs[1]).reshape(-1))
    kept, count = mean_grad_geometry(target, attrs.get("axis"), grad.size, node)
    out = _device.empty(ctx, target, grad.dtype)
    if out.size:
        plan = broadcast_plan([kept], target)
        dims, strides = (plan.dims, plan.strides[0]) if plan.dims else ((1,), (0,))
        _device.launch(
            ctx, spread_kernel, out.size, _device.flat(grad), _device.flat(out),
            _device.index_array(ctx, dims), _device.index_array(ctx, strides),
            grad.dtype.type(count),
        )
    return [out]

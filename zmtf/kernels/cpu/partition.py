"""Sparse-index kernels: DynamicPartition, DynamicStitch, UnsortedSegmentSum, InvertPermutation.

All work on rows: the index tensor's elements, flattened, each own one row (a slice
``data.shape[index.ndim:]``) of the data reshaped to 2-D in spirit. Errors name the first
bad index by its position, as TF's ``SliceDebugString`` does: ``partitions[1,2] = 5``.
Outputs are fresh, C-contiguous arrays (never views of an input).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, NUMERIC, check_output_size, shape_str
from zmtf.kernels.cpu.sparse_rows import add_rows, as_rows, fits
from zmtf.kernels.registry import register


def slice_str(shape: tuple[int, ...], flat_index: int) -> str:
    """Position ``flat_index`` of an array of ``shape`` in TF's words: ``[1,2]`` ("" for a scalar)."""
    if not shape:
        return ""
    return "[" + ",".join(str(int(i)) for i in np.unravel_index(flat_index, shape)) + "]"


def first_true(mask: np.ndarray) -> int | None:
    """The flat position of the first True in ``mask``, or None."""
    flat = mask.reshape(-1)
    return int(np.argmax(flat)) if flat.any() else None


def first_outside(ids: np.ndarray, high: int) -> int | None:
    """The flat position of the first id outside [0, high), or None if all are inside."""
    return first_true((ids < 0) | (ids >= high))


def last_wins(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(targets, sources) so that ``out[targets] = rows[sources]`` keeps each id's last row."""
    targets, first_in_reversed = np.unique(ids[::-1], return_index=True)
    return targets, ids.size - 1 - first_in_reversed


def _starts_with(shape: tuple[int, ...], prefix: tuple[int, ...]) -> bool:
    return shape[:len(prefix)] == prefix


@register("DynamicPartition", dtypes=ALL)
def dynamic_partition(ctx: Any, inputs: list, attrs: dict) -> list:
    """DynamicPartition(data, partitions): the rows of data with partition id k, for each k."""
    data, partitions = inputs
    count, node = attrs["num_partitions"], attrs["_node_name"]
    if not _starts_with(data.shape, partitions.shape):
        raise InvalidArgumentError(f"data.shape must start with partitions.shape, got data.shape = "
                                   f"{shape_str(data.shape)}, partitions.shape = "
                                   f"{shape_str(partitions.shape)} (node '{node}')")
    ids = partitions.reshape(-1)
    bad = first_outside(ids, count)
    if bad is not None:
        raise InvalidArgumentError(f"partitions{slice_str(partitions.shape, bad)} = {ids[bad]} is not "
                                   f"in [0, {count}) (node '{node}')")
    rows = data.reshape((ids.size,) + data.shape[partitions.ndim:])
    order = np.argsort(ids, kind="stable")   # stable: each partition keeps the rows' order
    ends = np.cumsum(np.bincount(ids, minlength=count))
    starts = ends - np.bincount(ids, minlength=count)
    return [rows.take(order[s:e], axis=0) for s, e in zip(starts, ends)]


@register("DynamicStitch", dtypes=["int32"])   # looked up by its first input, indices[0]
def dynamic_stitch(ctx: Any, inputs: list, attrs: dict) -> list:
    """DynamicStitch(indices..., data...): ``out[indices[m][i]] = data[m][i]``, later wins.

    Rows no index names are zeros (TF leaves them uninitialized)."""
    n, node = attrs["N"], attrs["_node_name"]
    indices, data = inputs[:n], inputs[n:]
    inner = data[0].shape[indices[0].ndim:]
    for m, (idx, values) in enumerate(zip(indices, data)):
        if not _starts_with(values.shape, idx.shape):
            raise InvalidArgumentError(f"data[{m}].shape = {shape_str(values.shape)} does not "
                                       f"start with indices[{m}].shape = {shape_str(idx.shape)} "
                                       f"(node '{node}')")
        if values.shape[idx.ndim:] != inner:
            raise InvalidArgumentError(
                f"Need data[0].shape[{indices[0].ndim}:] = data[{m}].shape[{idx.ndim}:], got "
                f"data[0].shape = {shape_str(data[0].shape)}, data[{m}].shape = "
                f"{shape_str(values.shape)}, indices[0].shape = {shape_str(indices[0].shape)}, "
                f"indices[{m}].shape = {shape_str(idx.shape)} (node '{node}')")
        bad = first_true(idx < 0)
        if bad is not None:
            raise InvalidArgumentError(f"indices[{m}]{slice_str(idx.shape, bad)} = "
                                       f"{idx.reshape(-1)[bad]} is out of range (node '{node}')")
    rows = max((int(idx.max()) + 1 for idx in indices if idx.size), default=0)
    out = np.zeros((rows,) + inner, data[0].dtype)
    for idx, values in zip(indices, data):   # in input order: a later input overwrites
        targets, sources = last_wins(idx.reshape(-1))
        out[targets] = values.reshape((idx.size,) + inner)[sources]
    return [out]


def unsorted_segment_rows(inputs: list, attrs: dict) -> tuple[np.ndarray, np.ndarray, int]:
    """(ids, rows, num_segments) of an UnsortedSegment* op after TF's CPU checks: the
    flattened ids and data's matching rows, negative ids (and their rows) dropped; an id
    >= num_segments is an error."""
    data, segment_ids, num_segments = inputs
    node = attrs["_node_name"]
    if np.ndim(num_segments) != 0:
        raise InvalidArgumentError(f"num_segments should be a scalar, not shape "
                                   f"{shape_str(np.shape(num_segments))} (node '{node}')")
    count = int(num_segments)
    if count < 0:
        raise InvalidArgumentError(f"Input num_segments == {count} must not be negative. "
                                   f"(node '{node}')")
    if not _starts_with(data.shape, segment_ids.shape):
        raise InvalidArgumentError(f"data.shape = {shape_str(data.shape)} does not start with "
                                   f"segment_ids.shape = {shape_str(segment_ids.shape)} (node '{node}')")
    check_output_size((count,) + data.shape[segment_ids.ndim:], data.dtype, node)
    ids = segment_ids.reshape(-1)
    bad = first_true(ids >= count)
    if bad is not None:
        raise InvalidArgumentError(f"segment_ids{slice_str(segment_ids.shape, bad)} = {ids[bad]} is "
                                   f"out of range [0, {count}) (node '{node}')")
    rows = data.reshape((ids.size,) + data.shape[segment_ids.ndim:])
    kept = ids >= 0
    if not kept.all():
        ids, rows = ids[kept], rows[kept]
    return ids, rows, count


@register("UnsortedSegmentSum", dtypes=NUMERIC)
def unsorted_segment_sum(ctx: Any, inputs: list, attrs: dict) -> list:
    """UnsortedSegmentSum(data, segment_ids, num_segments): per-segment row sums; negative
    ids are dropped, ids >= num_segments are an error (TF's CPU kernel)."""
    ids, rows, count = unsorted_segment_rows(inputs, attrs)
    out = np.zeros((count,) + rows.shape[1:], rows.dtype)
    if fits(rows, ids):   # one numba pass over the rows
        add_rows(as_rows(out), ids, as_rows(rows), rows.dtype.type(1))
    else:
        np.add.at(out, ids, rows)
    return [out]


@register("InvertPermutation", dtypes=["int32", "int64"])
def invert_permutation(ctx: Any, inputs: list, attrs: dict) -> list:
    """InvertPermutation(x): ``y[x[i]] = i``; x must hold each of 0..n-1 exactly once."""
    x, node = inputs[0], attrs["_node_name"]
    if x.ndim != 1:
        raise InvalidArgumentError(f"invert_permutation expects a 1D vector, got shape "
                                   f"{shape_str(x.shape)} (node '{node}')")
    n = x.size
    outside = first_outside(x, n)
    _, first_seen = np.unique(x, return_index=True)
    repeats = np.setdiff1d(np.arange(n), first_seen)   # positions whose value came before
    repeat = int(repeats[0]) if repeats.size else None
    if outside is not None and (repeat is None or outside < repeat):
        raise InvalidArgumentError(f"{x[outside]} is not between 0 and {n} (node '{node}')")
    if repeat is not None:
        raise InvalidArgumentError(f"{x[repeat]} is duplicated in the input. (node '{node}')")
    out = np.empty(n, x.dtype)
    out[x] = np.arange(n, dtype=x.dtype)
    return [out]

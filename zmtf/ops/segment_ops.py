"""Segment reductions: ``tf.segment_sum/mean/max/min/prod`` (sorted ids over the rows of
data) and ``tf.unsorted_segment_max/min/prod/mean`` (any order, a given segment count).

TF's rules, which the kernels follow: a sorted op's empty segment is 0 (1 for prod) and its
output has ``segment_ids[-1] + 1`` rows; an unsorted op's empty segment is the reduction's
identity (the lowest value for max, the highest for min) and rows with a negative id are
dropped. Constant segment ids are checked when the graph is built; fed ones at run time.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.partition_ops import (
    _INDEX_DTYPES, _check_index_dtype, _constant_value, unsorted_segment_outputs,
    unsorted_segment_sum,
)
from zmtf.framework.tensor_shape import TensorShape

#: sorted op type -> the TF1 function name its errors use
SORTED_SEGMENT_OPS = {"SegmentSum": "tf.segment_sum", "SegmentMean": "tf.segment_mean",
                      "SegmentMax": "tf.segment_max", "SegmentMin": "tf.segment_min",
                      "SegmentProd": "tf.segment_prod"}
UNSORTED_SEGMENT_OPS = {"UnsortedSegmentMax": "tf.unsorted_segment_max",
                        "UnsortedSegmentMin": "tf.unsorted_segment_min",
                        "UnsortedSegmentProd": "tf.unsorted_segment_prod"}


def _check_sorted_ids(ids: np.ndarray, where: str) -> None:
    """Constant ids must be non-negative and non-decreasing (TF's run-time rule, earlier)."""
    if ids.size and ids.min() < 0:
        raise InvalidArgumentError(f"{where}: segment ids must be >= 0, got {ids.tolist()}")
    if ids.size > 1 and (np.diff(ids) < 0).any():
        raise InvalidArgumentError(f"{where}: segment ids are not increasing: {ids.tolist()}; "
                                   f"sort them (with the rows of data) or use tf.unsorted_segment_*")


def _sorted_segment_outputs(function: str, inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    data, segment_ids = inputs
    _check_index_dtype(segment_ids, f"{function}: segment_ids", _INDEX_DTYPES)
    if not (data.dtype.is_integer or data.dtype.is_floating):
        raise TypeError(f"{function}: data must be numeric, got {data.dtype.name} ({data.name})")
    if segment_ids.shape.ndims not in (None, 1):
        raise InvalidArgumentError(f"{function}: segment_ids must be a vector (rank 1), got shape "
                                   f"{segment_ids.shape}")
    if data.shape.ndims == 0:
        raise InvalidArgumentError(f"{function}: data must have rank >= 1, got a scalar {data.name}")
    inner = None if data.shape.ndims is None else data.shape.as_list()[1:]
    if data.shape.ndims and segment_ids.shape.ndims:
        rows, count = data.shape.as_list()[0], segment_ids.shape.as_list()[0]
        if rows is not None and count is not None and rows != count:
            raise InvalidArgumentError(f"{function}: segment_ids has {count} entries but data has "
                                       f"{rows} rows; give one id per row of data")
    known = _constant_value(segment_ids)
    out_rows = None
    if known is not None:
        _check_sorted_ids(known.reshape(-1), function)
        out_rows = int(known[-1]) + 1 if known.size else 0
    return [(data.dtype, TensorShape(None) if inner is None else TensorShape([out_rows, *inner]))]


for _op_type, _function in SORTED_SEGMENT_OPS.items():
    op_def(_op_type)(partial(_sorted_segment_outputs, _function))

for _op_type, _function in UNSORTED_SEGMENT_OPS.items():
    op_def(_op_type)(partial(unsorted_segment_outputs, _function))


def _sorted(op_type: str, data: Any, segment_ids: Any, name: str | None) -> Tensor:
    d = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    return apply_op(op_type, [d, ids], name=name).outputs[0]


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """``out[j] = sum of data[i] with segment_ids[i] == j``; ids sorted, one per row of data."""
    return _sorted("SegmentSum", data, segment_ids, name)


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The mean of each segment's rows (0 for an empty segment; integer data divides as C)."""
    return _sorted("SegmentMean", data, segment_ids, name)


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The elementwise max of each segment's rows (0 for an empty segment, as TF)."""
    return _sorted("SegmentMax", data, segment_ids, name)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The elementwise min of each segment's rows (0 for an empty segment, as TF)."""
    return _sorted("SegmentMin", data, segment_ids, name)


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    """The elementwise product of each segment's rows (1 for an empty segment)."""
    return _sorted("SegmentProd", data, segment_ids, name)


def _unsorted(op_type: str, data: Any, segment_ids: Any, num_segments: Any,
              name: str | None) -> Tensor:
    d = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    count = convert_to_tensor(num_segments)
    return apply_op(op_type, [d, ids, count], name=name).outputs[0]


def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """Per-segment max; an empty segment holds the dtype's lowest value, as in TF."""
    return _unsorted("UnsortedSegmentMax", data, segment_ids, num_segments, name)


def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """Per-segment min; an empty segment holds the dtype's highest value, as in TF."""
    return _unsorted("UnsortedSegmentMin", data, segment_ids, num_segments, name)


def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    """Per-segment product; an empty segment is 1."""
    return _unsorted("UnsortedSegmentProd", data, segment_ids, num_segments, name)


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    """Per-segment mean (0 for an empty segment): the sum over the row count, as TF builds it."""
    with get_default_graph().name_scope(name or "UnsortedSegmentMean"):
        d = convert_to_tensor(data)
        ids = convert_to_tensor(segment_ids)
        count = _rows_per_segment(d, ids, num_segments)
        return unsorted_segment_sum(d, ids, num_segments) / count


def _rows_per_segment(data: Tensor, segment_ids: Tensor, num_segments: Any) -> Tensor:
    """How many rows each segment has (at least 1), shaped to broadcast against the sums."""
    ones = array_ops.ones_like(segment_ids, dtype=data.dtype)
    counts = math_ops.maximum(unsorted_segment_sum(ones, segment_ids, num_segments),
                              convert_to_tensor(1, dtype=data.dtype))
    inner_rank = None
    if data.shape.ndims is not None and segment_ids.shape.ndims is not None:
        inner_rank = data.shape.ndims - segment_ids.shape.ndims
    if inner_rank is None:
        raise InvalidArgumentError("tf.unsorted_segment_mean needs data and segment_ids of known "
                                   f"rank in zmtf, got {data.shape} and {segment_ids.shape}")
    return array_ops.reshape(counts, [-1] + [1] * inner_rank)

"""Segment reductions: Segment{Sum,Mean,Max,Min,Prod} over sorted ids and
UnsortedSegment{Max,Min,Prod} (UnsortedSegmentSum is in partition.py, whose checks these share).

Each op is a row of ``_REDUCERS``: the unbuffered numpy ufunc (``ufunc.at`` folds repeated
ids in place) and the value an empty segment starts from. Sorted ops then set their empty
segments to 0, as TF's CPU kernels do.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import NUMERIC, quiet_fp, shape_str
from zmtf.kernels.cpu.partition import slice_str, unsorted_segment_rows
from zmtf.kernels.registry import register


def _lowest(dtype: np.dtype) -> Any:
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _highest(dtype: np.dtype) -> Any:
    return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max


#: reduction -> (ufunc applied with .at, the start value of a segment for a dtype)
_REDUCERS: dict[str, tuple[np.ufunc, Callable[[np.dtype], Any]]] = {
    "Sum": (np.add, lambda dtype: 0),
    "Mean": (np.add, lambda dtype: 0),
    "Prod": (np.multiply, lambda dtype: 1),
    "Max": (np.maximum, _lowest),
    "Min": (np.minimum, _highest),
}


def _reduce(reduction: str, ids: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    ufunc, start = _REDUCERS[reduction]
    out = np.full((count,) + rows.shape[1:], start(rows.dtype), rows.dtype)
    with quiet_fp():
        ufunc.at(out, ids, rows)
    return out


def _sorted_ids(data: np.ndarray, segment_ids: np.ndarray, node: str) -> np.ndarray:
    """segment_ids after TF's checks: a vector, one id per row of data, >= 0, non-decreasing."""
    if segment_ids.ndim != 1:
        raise InvalidArgumentError(f"segment_ids should be a vector, got shape "
                                   f"{shape_str(segment_ids.shape)} (node '{node}')")
    if data.ndim == 0 or data.shape[0] != segment_ids.size:
        raise InvalidArgumentError(f"segment_ids should be the same size as dimension 0 of data, "
                                   f"got {segment_ids.size} ids for data of shape "
                                   f"{shape_str(data.shape)} (node '{node}')")
    negative = np.flatnonzero(segment_ids < 0)
    if negative.size:
        i = int(negative[0])
        raise InvalidArgumentError(f"segment_ids{slice_str(segment_ids.shape, i)} = "
                                   f"{segment_ids[i]} is negative; ids must be >= 0 (node '{node}')")
    falls = np.flatnonzero(np.diff(segment_ids) < 0)
    if falls.size:
        i = int(falls[0]) + 1
        raise InvalidArgumentError(f"segment ids are not increasing: segment_ids[{i}] = "
                                   f"{segment_ids[i]} follows {segment_ids[i - 1]}; sort them or "
                                   f"use the unsorted_segment_* op (node '{node}')")
    return segment_ids


def _truncating_mean(sums: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """sums / counts, with integer data divided as C does (towards zero), as TF's kernel."""
    if sums.dtype.kind == "f":
        return sums / counts.astype(sums.dtype)
    return (np.sign(sums) * (np.abs(sums) // counts)).astype(sums.dtype)


def _segment_kernel(reduction: str) -> Callable[[Any, list, dict], list]:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        data, segment_ids = inputs
        ids = _sorted_ids(data, segment_ids, attrs["_node_name"])
        count = int(ids[-1]) + 1 if ids.size else 0
        out = _reduce(reduction, ids, data, count)
        rows_per_segment = np.bincount(ids, minlength=count).reshape(
            (count,) + (1,) * (data.ndim - 1))
        if reduction == "Mean":
            out = _truncating_mean(out, np.maximum(rows_per_segment, 1))
        elif reduction in ("Max", "Min"):   # an empty segment is 0 here, not the start value
            out = np.where(rows_per_segment > 0, out, np.zeros((), data.dtype))
        return [np.ascontiguousarray(out)]

    kernel.__doc__ = f"Segment{reduction}(data, segment_ids): rows reduced by sorted id."
    return kernel


def _unsorted_kernel(reduction: str) -> Callable[[Any, list, dict], list]:
    def kernel(ctx: Any, inputs: list, attrs: dict) -> list:
        ids, rows, count = unsorted_segment_rows(inputs, attrs)
        return [_reduce(reduction, ids, rows, count)]

    kernel.__doc__ = f"UnsortedSegment{reduction}(data, segment_ids, num_segments)."
    return kernel


for _reduction in ("Sum", "Mean", "Max", "Min", "Prod"):
    register(f"Segment{_reduction}", dtypes=NUMERIC)(_segment_kernel(_reduction))
for _reduction in ("Max", "Min", "Prod"):
    register(f"UnsortedSegment{_reduction}", dtypes=NUMERIC)(_unsorted_kernel(_reduction))

"""Sparse-index ops: tf.dynamic_partition, tf.dynamic_stitch, tf.unsorted_segment_sum and
tf.invert_permutation.

Their output sizes depend on index values, so the static shapes know only the inner
dimensions (and the row count where the indices are constants). Errors in the values
(an id out of range) are InvalidArgumentErrors at run time, worded as TF's CPU kernels.
"""

from __future__ import annotations

from functools import partial
from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

_INDEX_DTYPES = (dtypes.int32, dtypes.int64)


def _check_index_dtype(t: Tensor, what: str, allowed: Sequence[dtypes.DType]) -> None:
    if t.dtype not in allowed:
        names = " or ".join(d.name for d in allowed)
        raise TypeError(f"{what} must be {names}, got {t.dtype.name} ({t.name})")


def _inner_shape(data: Tensor, prefix: Tensor, op_name: str, data_name: str,
                 prefix_name: str) -> list[int | None] | None:
    """data.shape[prefix.ndim:], after checking that data.shape starts with prefix.shape."""
    if data.shape.ndims is None or prefix.shape.ndims is None:
        return None
    rank = prefix.shape.ndims
    head = TensorShape(data.shape.as_list()[:rank]) if data.shape.ndims >= rank else None
    if head is None or not head.is_compatible_with(prefix.shape):
        raise ValueError(f"{op_name}: {data_name}.shape = {data.shape} must start with "
                         f"{prefix_name}.shape = {prefix.shape}")
    return data.shape.as_list()[rank:]


def _rows_then(rows: int | None, inner: list[int | None] | None) -> TensorShape:
    return TensorShape(None) if inner is None else TensorShape([rows, *inner])


def _constant_value(t: Tensor) -> np.ndarray | None:
    return np.asarray(t.op.get_attr("value")) if t.op.type == "Const" else None


# ---- DynamicPartition ------------------------------------------------------------------------
@op_def("DynamicPartition")
def _dynamic_partition_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    data, partitions = inputs
    _check_index_dtype(partitions, "tf.dynamic_partition: partitions", [dtypes.int32])
    inner = _inner_shape(data, partitions, "tf.dynamic_partition", "data", "partitions")
    return [(data.dtype, _rows_then(None, inner))] * attrs["num_partitions"]


def dynamic_partition(data: Any, partitions: Any, num_partitions: int,
                      name: str | None = None) -> list[Tensor]:
    """Split the rows of ``data`` into ``num_partitions`` tensors by the int32 ids in
    ``partitions`` (shape ``data.shape[:partitions.ndim]``), keeping their order."""
    if isinstance(num_partitions, Tensor) or int(num_partitions) < 1:
        raise ValueError(f"tf.dynamic_partition: num_partitions must be a Python int >= 1, "
                         f"got {num_partitions!r}")
    d = convert_to_tensor(data)
    p = convert_to_tensor(partitions, dtype=dtypes.int32)
    op = apply_op("DynamicPartition", [d, p], {"num_partitions": int(num_partitions)}, name=name)
    return list(op.outputs)


# ---- DynamicStitch ---------------------------------------------------------------------------
@op_def("DynamicStitch")
def _dynamic_stitch_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    n = attrs["N"]
    indices, data = inputs[:n], inputs[n:]
    for i, (idx, d) in enumerate(zip(indices, data)):
        _check_index_dtype(idx, f"tf.dynamic_stitch: indices[{i}]", [dtypes.int32])
        if d.dtype != data[0].dtype:
            raise TypeError(f"tf.dynamic_stitch: data[{i}] is {d.dtype.name}, data[0] is "
                            f"{data[0].dtype.name}; all data must have one dtype")
    inner: TensorShape | None = None
    for i, (idx, d) in enumerate(zip(indices, data)):
        extra = _inner_shape(d, idx, "tf.dynamic_stitch", f"data[{i}]", f"indices[{i}]")
        if extra is None:
            continue
        if inner is not None and not inner.is_compatible_with(TensorShape(extra)):
            raise ValueError(f"tf.dynamic_stitch: data[{i}].shape[{idx.shape.ndims}:] = {extra} "
                             f"does not match the other inputs' {inner}")
        inner = TensorShape(extra) if inner is None else inner.merge_with(TensorShape(extra))
    values = [_constant_value(idx) for idx in indices]
    rows = None
    if all(v is not None for v in values):   # TF's shape fn: constant indices give the row count
        rows = max((int(v.max()) for v in values if v.size), default=-1) + 1
    return [(data[0].dtype, _rows_then(rows, None if inner is None else inner.as_list()))]


def dynamic_stitch(indices: Sequence[Any], data: Sequence[Any], name: str | None = None) -> Tensor:
    """``merged[indices[m][i, ...]] = data[m][i, ...]``: one tensor of ``max index + 1`` rows;
    where an index repeats, the later input (and the later position) wins."""
    if len(indices) != len(data) or not indices:
        raise ValueError(f"tf.dynamic_stitch: needs as many data as indices tensors (at least "
                         f"one), got {len(indices)} and {len(data)}")
    idx = [convert_to_tensor(i, dtype=dtypes.int32) for i in indices]
    first = convert_to_tensor(data[0])
    values = [first] + [convert_to_tensor(d, dtype=first.dtype) for d in data[1:]]
    return apply_op("DynamicStitch", idx + values, {"N": len(idx)}, name=name).outputs[0]


# ---- UnsortedSegmentSum (and its siblings in segment_ops.py) ------------------------------
def unsorted_segment_outputs(function: str, inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    """The shape fn of every UnsortedSegment* op; ``function`` names it in errors."""
    data, segment_ids, num_segments = inputs
    _check_index_dtype(segment_ids, f"{function}: segment_ids", _INDEX_DTYPES)
    _check_index_dtype(num_segments, f"{function}: num_segments", _INDEX_DTYPES)
    if num_segments.shape.ndims not in (None, 0):
        raise ValueError(f"{function}: num_segments should be a scalar, not shape "
                         f"{num_segments.shape}")
    if not data.dtype.is_integer and not data.dtype.is_floating:
        raise TypeError(f"{function}: data must be numeric, got {data.dtype.name}")
    inner = _inner_shape(data, segment_ids, function, "data", "segment_ids")
    known = _constant_value(num_segments)
    return [(data.dtype, _rows_then(None if known is None else int(known), inner))]


op_def("UnsortedSegmentSum")(partial(unsorted_segment_outputs, "tf.unsorted_segment_sum"))


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    """``out[j] = sum of data[i...] where segment_ids[i...] == j`` for j < num_segments; rows
    with a negative id are dropped, as in TF."""
    d = convert_to_tensor(data)
    ids = convert_to_tensor(segment_ids)
    count = convert_to_tensor(num_segments)
    return apply_op("UnsortedSegmentSum", [d, ids, count], name=name).outputs[0]


# ---- InvertPermutation -----------------------------------------------------------------------
@op_def("InvertPermutation")
def _invert_permutation_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    _check_index_dtype(x, "tf.invert_permutation: x", _INDEX_DTYPES)
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"tf.invert_permutation: x must be a vector, got shape {x.shape}")
    return [(x.dtype, TensorShape([None]) if x.shape.ndims is None else x.shape)]


def invert_permutation(x: Any, name: str | None = None) -> Tensor:
    """``y[x[i]] = i``: the inverse of the permutation ``x`` (validated at run time)."""
    return apply_op("InvertPermutation", [convert_to_tensor(x)], name=name).outputs[0]

"""TF1 math helpers built from existing ops: tf.saturate_cast, tf.accumulate_n,
tf.clip_by_average_norm and tf.histogram_fixed_width / histogram_fixed_width_bins."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.bincount_ops import bincount
from zmtf.ops.composite_ops import clip_by_value
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import as_shape


def saturate_cast(value: Any, dtype: Any, name: str | None = None) -> Tensor:
    """``value`` cast to ``dtype``, first clamped to dtype's range so that nothing wraps
    around (int32 300 -> uint8 255, float 1e10 -> int32 2147483647)."""
    with get_default_graph().name_scope(name or "saturate_cast"):
        x = convert_to_tensor(value, name="value")
        target = dtypes.as_dtype(dtype)
        if not x.dtype.is_bool and not target.is_bool:
            low, high = _bounds_in(x.dtype, target)
            if low is not None:
                x = math_ops.maximum(x, convert_to_tensor(low, dtype=x.dtype, name="min"))
            if high is not None:
                x = math_ops.minimum(x, convert_to_tensor(high, dtype=x.dtype, name="max"))
        return math_ops.cast(x, target)


def _bounds_in(source: dtypes.DType, target: dtypes.DType) -> tuple[Any, Any]:
    """target's limits written in source's dtype, rounded inwards (float32 cannot hold
    2**31 - 1: its largest value below 2**31 is used); None where source never exceeds."""
    src = source.np
    low = high = None
    if source.min < target.min:
        low = np.asarray(target.min).astype(src)
        if low.item() < target.min:   # exact Python comparison, no numpy promotion
            low = np.nextafter(low, np.asarray(0, src))
    if source.max > target.max:
        high = np.asarray(target.max).astype(src)
        if high.item() > target.max:
            high = np.nextafter(high, np.asarray(0, src))
    return low, high


def accumulate_n(inputs: Sequence[Any], shape: Any = None, tensor_dtype: Any = None,
                 name: str | None = None) -> Tensor:
    """The sum of same-shape, same-dtype tensors (TF1's tf.accumulate_n, as tf.add_n)."""
    if not inputs or not isinstance(inputs, (list, tuple)):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    tensors = [convert_to_tensor(t) for t in inputs]
    if any(t.dtype != tensors[0].dtype for t in tensors):
        raise ValueError("inputs must be a list of at least one Tensor with the same dtype and "
                         "shape")
    if tensor_dtype is not None and dtypes.as_dtype(tensor_dtype) != tensors[0].dtype:
        raise TypeError(f"tensor_dtype is {dtypes.as_dtype(tensor_dtype).name}, but input is of "
                        f"type {tensors[0].dtype.name}")
    static = tensors[0].shape if shape is None else as_shape(shape)
    for t in tensors:
        if not t.shape.is_compatible_with(static):
            raise ValueError(f"Input tensor {t.name} must have shape {static}, got {t.shape}")
    if len(tensors) == 1 and name is None:
        return tensors[0]
    return math_ops.add_n(tensors, name=name)


def clip_by_average_norm(t: Any, clip_norm: Any, name: str | None = None) -> Tensor:
    """``t * clip_norm / max(l2norm(t) / size(t), clip_norm)``: t scaled down so that its
    L2 norm per element is at most clip_norm (float32, as TF's)."""
    with get_default_graph().name_scope(name or "clip_by_average_norm") as scope:
        x = convert_to_tensor(t, name="t")
        n_element = math_ops.cast(array_ops.size(x), dtypes.float32)
        l2norm_inv = math_ops.rsqrt(math_ops.reduce_sum(x * x))
        norm = convert_to_tensor(clip_norm, dtype=x.dtype)
        scale = math_ops.minimum(l2norm_inv * n_element, 1.0 / norm)
        return array_ops.identity(x * norm * scale, name=scope.rstrip("/"))


def histogram_fixed_width_bins(values: Any, value_range: Any, nbins: Any = 100,
                               dtype: Any = dtypes.int32, name: str | None = None) -> Tensor:
    """The bin of each value among ``nbins`` equal bins over ``value_range`` [lo, hi]; values
    below lo go to bin 0 and values at or above hi to the last bin."""
    with get_default_graph().name_scope(name or "histogram_fixed_width_bins"):
        return _bins(values, value_range, nbins, dtype)


def _bins(values: Any, value_range: Any, nbins: Any, dtype: Any) -> Tensor:
    x = convert_to_tensor(values, name="values")
    lo_hi = convert_to_tensor(value_range, dtype=x.dtype, name="value_range")
    count = convert_to_tensor(nbins, dtype=dtypes.int32, name="nbins")
    count_float = math_ops.cast(count, x.dtype)
    scaled = math_ops.truediv(x - lo_hi[0], lo_hi[1] - lo_hi[0], name="scaled_values")
    indices = math_ops.floor(count_float * scaled, name="indices")
    return math_ops.cast(clip_by_value(indices, 0, count_float - 1), dtypes.as_dtype(dtype))


def histogram_fixed_width(values: Any, value_range: Any, nbins: Any = 100,
                          dtype: Any = dtypes.int32, name: str | None = None) -> Tensor:
    """How many values fall in each of ``nbins`` equal bins over ``value_range`` (the ends
    counting into the first and last bins), a 1-D ``dtype`` tensor."""
    dtype = dtypes.as_dtype(dtype)
    if dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"histogram_fixed_width: dtype must be int32 or int64, got {dtype.name}")
    with get_default_graph().name_scope(name or "histogram_fixed_width"):
        bins = array_ops.reshape(_bins(values, value_range, nbins, dtypes.int32), [-1])
        counts = bincount(bins, minlength=nbins, maxlength=nbins, dtype=dtype)
        if isinstance(nbins, (int, np.integer)):
            counts.set_shape([int(nbins)])
        return counts

"""tf.sequence_mask, reverse_sequence, gather_nd, scatter_nd, eye, linspace and nn.swish.

ReverseSequence, GatherNd and ScatterNd are ops (kernels in zmtf/kernels/cpu/sequence.py,
gradients in sequence_grad.py); the rest are compositions of existing ops.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.array_ops import _shape_value
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


def _iota(count: Any, dtype: Any) -> Tensor:
    """[0, 1, ..., count - 1] for a Python or tensor count (an exclusive cumsum of ones)."""
    if isinstance(count, (int, np.integer)):
        return constant(np.arange(int(count)).astype(as_dtype(dtype).np))
    n = array_ops.reshape(math_ops.cast(count, dtypes.int32), [1])
    return math_ops.cumsum(array_ops.fill(n, constant(1, dtype=dtype)), exclusive=True)


def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = dtypes.bool_,
                  name: str | None = None) -> Tensor:
    """``mask[..., j] = j < lengths[...]`` for j < maxlen (default: the largest length)."""
    with get_default_graph().name_scope(name or "SequenceMask"):
        lengths_t = convert_to_tensor(lengths)
        if maxlen is None:
            maxlen = math_ops.reduce_max(lengths_t)
        positions = _iota(maxlen if not isinstance(maxlen, Tensor) else maxlen, lengths_t.dtype)
        mask = math_ops.less(positions, array_ops.expand_dims(lengths_t, -1))
        return mask if as_dtype(dtype) == dtypes.bool_ else math_ops.cast(mask, dtype)


@op_def("ReverseSequence")
def _reverse_sequence_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def reverse_sequence(input: Any, seq_lengths: Any, seq_axis: int | None = None,  # noqa: A002
                     batch_axis: int | None = None, name: str | None = None,
                     seq_dim: int | None = None, batch_dim: int | None = None) -> Tensor:
    """For each b along ``batch_axis``, the first ``seq_lengths[b]`` entries along ``seq_axis``
    reversed; the rest are kept."""
    x = convert_to_tensor(input)
    seq_axis = seq_dim if seq_axis is None else seq_axis
    batch_axis = (batch_dim if batch_axis is None else batch_axis) or 0
    if seq_axis is None:
        raise ValueError("tf.reverse_sequence: seq_axis is required")
    if x.shape.ndims is not None:
        seq_axis, batch_axis = seq_axis % x.shape.ndims, batch_axis % x.shape.ndims
    if seq_axis == batch_axis:
        raise ValueError(f"tf.reverse_sequence: seq_axis and batch_axis must differ, both are {seq_axis}")
    lengths = convert_to_tensor(seq_lengths)
    attrs = {"seq_dim": int(seq_axis), "batch_dim": int(batch_axis)}
    return apply_op("ReverseSequence", [x, lengths], attrs, name=name or "ReverseSequence").outputs[0]


@op_def("GatherNd")
def _gather_nd_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    params, indices = inputs
    if not indices.dtype.is_integer:
        raise TypeError(f"tf.gather_nd: indices must be int32 or int64, got {indices.dtype.name}")
    if params.shape.ndims is None or indices.shape.ndims is None or indices.shape.as_list()[-1] is None:
        return [(params.dtype, TensorShape(None))]
    depth = indices.shape.as_list()[-1]
    if depth > params.shape.ndims:
        raise ValueError(f"tf.gather_nd: index depth {depth} exceeds the rank of {params.name} "
                         f"{params.shape}")
    return [(params.dtype, TensorShape(indices.shape.as_list()[:-1] + params.shape.as_list()[depth:]))]


def gather_nd(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """``out[i...] = params[indices[i...]]``: the last axis of ``indices`` indexes the leading
    dimensions of ``params``."""
    p, i = convert_to_tensor(params), convert_to_tensor(indices)
    return apply_op("GatherNd", [p, i], {}, name=name or "GatherNd").outputs[0]


@op_def("ScatterNd")
def _scatter_nd_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    target = _shape_value(inputs[2])
    return [(inputs[1].dtype, TensorShape(target) if target is not None else TensorShape(None))]


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (repeated indices add up)."""
    i = convert_to_tensor(indices)
    u = convert_to_tensor(updates)
    if isinstance(shape, Tensor):
        s = shape if shape.dtype == i.dtype else math_ops.cast(shape, i.dtype)
    else:
        s = convert_to_tensor(shape, dtype=i.dtype)
    return apply_op("ScatterNd", [i, u, s], {}, name=name or "ScatterNd").outputs[0]


def eye(num_rows: int, num_columns: int | None = None, batch_shape: Any = None,
        dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    """An identity matrix (a constant; the sizes are Python ints)."""
    if any(isinstance(v, Tensor) for v in (num_rows, num_columns)):
        raise TypeError("tf.eye in zmtf takes Python ints for num_rows and num_columns")
    matrix = np.eye(int(num_rows), int(num_rows if num_columns is None else num_columns),
                    dtype=as_dtype(dtype).np)
    if batch_shape is not None:
        matrix = np.broadcast_to(matrix, tuple(batch_shape) + matrix.shape).copy()
    return constant(matrix, name=name or "eye")


def linspace(start: Any, stop: Any, num: Any, name: str | None = None) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop`` (TF's LinSpace: start + i * step)."""
    with get_default_graph().name_scope(name or "LinSpace"):
        lo = convert_to_tensor(start)
        hi = convert_to_tensor(stop, dtype=lo.dtype)
        if isinstance(num, (int, np.integer)):
            step = (hi - lo) / float(max(int(num) - 1, 1))
        else:
            count = math_ops.cast(convert_to_tensor(num), lo.dtype)
            step = (hi - lo) / math_ops.maximum(count - 1.0, constant(1.0, dtype=lo.dtype))
        return lo + _iota(num, lo.dtype) * step


lin_space = linspace


def swish(features: Any, beta: Any = 1.0, name: str | None = None) -> Tensor:
    """``features * sigmoid(beta * features)`` (tf.nn.silu too)."""
    with get_default_graph().name_scope(name or "swish"):
        x = convert_to_tensor(features)
        if isinstance(beta, (int, float)) and beta == 1.0:
            return x * math_ops.sigmoid(x)
        return x * math_ops.sigmoid(convert_to_tensor(beta, dtype=x.dtype) * x)

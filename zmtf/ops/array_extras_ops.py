"""TF1's smaller array helpers: tf.repeat, tf.parallel_stack, tf.batch_gather,
tf.unravel_index and tf.setdiff1d.

repeat and batch_gather are compositions of GatherV2 (so their gradients come from it);
unravel_index and setdiff1d have kernels of their own (UnravelIndex, ListDiff) and no
gradient, as in TF.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.composite_ops import range_
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.selection_ops import gather, where
from zmtf.ops.sequence_ops import sequence_mask
from zmtf.framework.sparse_tensor import constant_value
from zmtf.framework.tensor_shape import TensorShape

STRING_INPUT_OPS.add("ListDiff")

ListDiff = namedtuple("ListDiff", ["out", "idx"])


def repeat(input: Any, repeats: Any, axis: int | None = None,  # noqa: A002 (TF's name)
           name: str | None = None) -> Tensor:
    """Each slice of ``input`` along ``axis`` repeated ``repeats`` times (a scalar, or one
    count per slice); with ``axis=None`` the flattened input is repeated."""
    with get_default_graph().name_scope(name or "Repeat"):
        x = convert_to_tensor(input, name="input")
        counts = convert_to_tensor(repeats, dtype=dtypes.int32, name="repeats")
        if axis is None:
            x, axis = array_ops.reshape(x, [-1]), 0
        rank = x.shape.ndims
        if rank is not None and not -max(rank, 1) <= axis < max(rank, 1):
            raise ValueError(f"axis {axis} is out of bounds for a tensor of rank {rank}")
        if rank == 0:
            raise ValueError("tf.repeat: input must be at least 1-D (or pass axis=None)")
        if counts.shape.ndims not in (None, 0, 1):
            raise ValueError(f"`repeats` must be a scalar or 1-D, got shape {counts.shape}")
        axis = axis % rank if rank is not None else axis
        slices = array_ops.shape(x)[axis]
        per_slice = array_ops.broadcast_to(counts, array_ops.reshape(slices, [1]))
        longest = math_ops.maximum(math_ops.reduce_max(per_slice), 0)
        mask = sequence_mask(per_slice, longest)
        out = gather(x, _first_column(where(mask)), axis=axis)
        out.set_shape(_repeated_shape(x, counts, axis))
        return out


def _first_column(coordinates: Tensor) -> Tensor:
    return math_ops.cast(coordinates[:, 0], dtypes.int32)


def _repeated_shape(x: Tensor, counts: Tensor, axis: int) -> TensorShape:
    if x.shape.ndims is None:
        return TensorShape(None)
    dims = x.shape.as_list()
    known = constant_value(counts)
    if known is None:
        dims[axis] = None
    elif known.ndim == 0:
        dims[axis] = None if dims[axis] is None else dims[axis] * max(int(known), 0)
    else:
        if dims[axis] is not None and known.size not in (1, dims[axis]):
            raise ValueError(f"tf.repeat: repeats has {known.size} entries for {dims[axis]} "
                             f"slices along axis {axis}")
        dims[axis] = int(np.maximum(known, 0).sum())
    return TensorShape(dims)


def parallel_stack(values: Sequence[Any], name: str = "parallel_stack") -> Tensor:
    """tf.stack along a new first axis; as in TF, every input's shape must be known."""
    tensors = [convert_to_tensor(v) for v in values]
    if not tensors:
        raise ValueError("parallel_stack needs at least one tensor")
    if not tensors[0].shape.is_fully_defined():
        raise ValueError(f"parallel_stack needs fully defined shapes, got {tensors[0].shape} for "
                         f"{tensors[0].name}")
    return array_ops.stack(tensors, axis=0, name=name)


def batch_gather(params: Any, indices: Any, name: str | None = None) -> Tensor:
    """``out[b..., i] = params[b..., indices[b..., i]]``: a gather per batch, where params
    and indices share their leading (batch) dimensions (TF1's tf.batch_gather)."""
    with get_default_graph().name_scope(name or "BatchGather"):
        p = convert_to_tensor(params, name="params")
        idx = convert_to_tensor(indices, name="indices")
        if idx.dtype not in (dtypes.int32, dtypes.int64):
            raise TypeError(f"batch_gather: indices must be int32 or int64, got {idx.dtype.name}")
        batch_rank = idx.shape.ndims
        if batch_rank is None:
            raise ValueError("batch_gather needs the rank of indices to be known")
        if batch_rank == 0 or (p.shape.ndims is not None and p.shape.ndims < batch_rank):
            raise ValueError(f"batch_gather: indices {idx.shape} must be at least 1-D and no "
                             f"more than params' rank ({p.shape})")
        idx = math_ops.cast(idx, dtypes.int32)
        p_shape = array_ops.shape(p)
        batch = p_shape[:batch_rank - 1]
        rows = math_ops.reduce_prod(batch)
        width = p_shape[batch_rank - 1]
        flat_idx = array_ops.reshape(idx, array_ops.stack([rows, -1]))
        starts = array_ops.reshape(range_(rows) * width, [-1, 1])
        flat_params = array_ops.reshape(p, array_ops.concat([[-1], p_shape[batch_rank:]], 0))
        picked = gather(flat_params, array_ops.reshape(flat_idx + starts, [-1]))
        out_shape = array_ops.concat([array_ops.shape(idx), p_shape[batch_rank:]], 0)
        out = array_ops.reshape(picked, out_shape)
        if p.shape.ndims is not None:
            out.set_shape(idx.shape.concatenate(p.shape[batch_rank:]))
        return out


@op_def("UnravelIndex")
def _unravel_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    indices, dims = inputs
    if indices.dtype != dims.dtype or indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"unravel_index: indices and dims must both be int32 or both int64, got "
                        f"{indices.dtype.name} and {dims.dtype.name}")
    if indices.shape.ndims not in (None, 0, 1) or dims.shape.ndims not in (None, 1):
        raise ValueError(f"unravel_index: indices must be a scalar or 1-D and dims 1-D, got "
                         f"{indices.shape} and {dims.shape}")
    n = dims.shape[0] if dims.shape.ndims == 1 else None
    if indices.shape.ndims is None:
        return [(indices.dtype, TensorShape(None))]
    return [(indices.dtype, TensorShape([n] + indices.shape.as_list()))]


def unravel_index(indices: Any, dims: Any, name: str | None = None) -> Tensor:
    """The coordinates in an array of shape ``dims`` of each flat (row-major) index:
    ``[len(dims)]`` for a scalar index, ``[len(dims), n]`` for n indices."""
    idx = convert_to_tensor(indices, name="indices")
    shape = convert_to_tensor(dims, dtype=idx.dtype, name="dims")
    return apply_op("UnravelIndex", [idx, shape], {}, name=name or "UnravelIndex").outputs[0]


@op_def("ListDiff")
def _list_diff_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, y = inputs
    if x.dtype != y.dtype:
        raise TypeError(f"setdiff1d: x and y must have the same dtype, got {x.dtype.name} and "
                        f"{y.dtype.name}")
    for t in (x, y):
        if t.shape.ndims not in (None, 1):
            raise ValueError(f"setdiff1d: {t.name} must be 1-D, got shape {t.shape}")
    return [(x.dtype, TensorShape([None])), (attrs["out_idx"], TensorShape([None]))]


not_differentiable("UnravelIndex", "ListDiff")


def setdiff1d(x: Any, y: Any, index_dtype: Any = dtypes.int32, name: str | None = None) -> ListDiff:
    """``(out, idx)``: the entries of 1-D ``x`` not in ``y``, in x's order (duplicates
    kept), and their positions in x."""
    index_dtype = dtypes.as_dtype(index_dtype)
    if index_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"setdiff1d: index_dtype must be int32 or int64, got {index_dtype.name}")
    xt = convert_to_tensor(x, name="x")
    yt = convert_to_tensor(y, dtype=xt.dtype, name="y")
    op = apply_op("ListDiff", [xt, yt], {"out_idx": index_dtype}, name=name or "ListDiff")
    return ListDiff(op.outputs[0], op.outputs[1])

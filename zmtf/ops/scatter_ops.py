"""tf.scatter_update / add / sub / mul / div / max / min: update rows of a variable in place;
tf.scatter_nd_update / add / sub: update the elements or slices at N-d indices in place.

Built like AssignAdd: the first input is the variable's reference, the output is the
updated variable, and the op is colocated with the variable (the placer also joins every
op in ``SCATTER_OPS`` to the variable it updates: a reference never crosses devices).
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

ROW_SCATTER_OPS = ("ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv",
                   "ScatterMax", "ScatterMin")
ND_SCATTER_OPS = ("ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub")
SCATTER_OPS = ROW_SCATTER_OPS + ND_SCATTER_OPS


@op_def(*ROW_SCATTER_OPS, stateful=True)
def _scatter_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    ref, indices, updates = inputs
    if ref.op.type != "Variable":
        raise TypeError(f"'{ref.name}' is not a variable reference; scatter into a tf.Variable")
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name} ({indices.name})")
    if ref.shape.ndims == 0:
        raise ValueError(f"Cannot scatter into the scalar variable '{ref.op.name}': it needs a "
                         f"first dimension to index")
    if updates.shape.ndims != 0 and ref.shape.ndims is not None and indices.shape.ndims is not None:
        expected = TensorShape(indices.shape.as_list() + ref.shape.as_list()[1:])
        if not updates.shape.is_compatible_with(expected):
            raise ValueError(f"Must have updates.shape = indices.shape + params.shape[1:] or "
                             f"updates.shape = [], got updates.shape {updates.shape}, indices.shape "
                             f"{indices.shape}, params.shape {ref.shape}")
    return [(ref.dtype, ref.shape)]


def _scatter(op_type: str, ref: Any, indices: Any, updates: Any, use_locking: bool,
             name: str | None) -> Tensor:
    ref = ref._ref_tensor() if hasattr(ref, "_ref_tensor") else ref   # a tf.Variable
    index_tensor = convert_to_tensor(indices)
    update_tensor = convert_to_tensor(updates, dtype=ref.dtype)
    with ref.graph.colocate_with(ref.op):
        op = apply_op(op_type, [ref, index_tensor, update_tensor],
                      {"use_locking": bool(use_locking)}, name=name or op_type)
        return op.outputs[0]


def scatter_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                   name: str | None = None) -> Tensor:
    """``ref[indices[i...]] = updates[i...]`` in place; where an index repeats, the last wins."""
    return _scatter("ScatterUpdate", ref, indices, updates, use_locking, name)


def scatter_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices[i...]] += updates[i...]`` in place; repeated indices add up."""
    return _scatter("ScatterAdd", ref, indices, updates, use_locking, name)


def scatter_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices[i...]] -= updates[i...]`` in place; repeated indices subtract each time."""
    return _scatter("ScatterSub", ref, indices, updates, use_locking, name)


def scatter_mul(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices[i...]] *= updates[i...]`` in place; repeated indices multiply each time."""
    return _scatter("ScatterMul", ref, indices, updates, use_locking, name)


def scatter_div(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices[i...]] /= updates[i...]`` in place (ints: truncating, as TF's)."""
    return _scatter("ScatterDiv", ref, indices, updates, use_locking, name)


def scatter_max(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices[i...]] = max(ref[...], updates[i...])`` in place."""
    return _scatter("ScatterMax", ref, indices, updates, use_locking, name)


def scatter_min(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                name: str | None = None) -> Tensor:
    """``ref[indices[i...]] = min(ref[...], updates[i...])`` in place."""
    return _scatter("ScatterMin", ref, indices, updates, use_locking, name)


def nd_updates_shape(ref_shape: TensorShape, indices_shape: TensorShape) -> TensorShape | None:
    """``indices.shape[:-1] + ref.shape[K:]`` (K = indices.shape[-1]), the shape scatter_nd's
    updates must have; None when it cannot be told while building."""
    if ref_shape.ndims is None or indices_shape.ndims is None or indices_shape[-1] is None:
        return None
    depth = indices_shape[-1]
    if depth > ref_shape.ndims:
        raise ValueError(f"The last dimension of indices ({depth}) must be <= the rank of the "
                         f"updated tensor ({ref_shape.ndims})")
    return TensorShape(indices_shape.as_list()[:-1] + ref_shape.as_list()[depth:])


@op_def(*ND_SCATTER_OPS, stateful=True)
def _scatter_nd_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    ref, indices, updates = inputs
    if ref.op.type != "Variable":
        raise TypeError(f"'{ref.name}' is not a variable reference; scatter into a tf.Variable")
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name} ({indices.name})")
    expected = nd_updates_shape(ref.shape, indices.shape)
    if expected is not None and not updates.shape.is_compatible_with(expected):
        raise ValueError(f"updates.shape {updates.shape} must be indices.shape[:-1] + "
                         f"ref.shape[indices.shape[-1]:] = {expected} (indices.shape "
                         f"{indices.shape}, ref.shape {ref.shape})")
    return [(ref.dtype, ref.shape)]


def scatter_nd_update(ref: Any, indices: Any, updates: Any, use_locking: bool = True,
                      name: str | None = None) -> Tensor:
    """``ref[indices[i]] = updates[i]`` for N-d ``indices`` [..., K] (an element or a slice
    of ref each), in place; where an index repeats, the last wins."""
    return _scatter("ScatterNdUpdate", ref, indices, updates, use_locking, name)


def scatter_nd_add(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """``ref[indices[i]] += updates[i]`` for N-d indices, in place; repeats add up."""
    return _scatter("ScatterNdAdd", ref, indices, updates, use_locking, name)


def scatter_nd_sub(ref: Any, indices: Any, updates: Any, use_locking: bool = False,
                   name: str | None = None) -> Tensor:
    """``ref[indices[i]] -= updates[i]`` for N-d indices, in place; repeats subtract."""
    return _scatter("ScatterNdSub", ref, indices, updates, use_locking, name)

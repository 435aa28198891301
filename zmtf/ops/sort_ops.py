"""tf.sort, tf.argsort and tf.searchsorted.

sort and argsort are built as TF builds them, over TopKV2 with k = the axis' length (moved
last by a transpose), so sort has TopKV2's gradient. Ascending order sorts a flipped copy
descending: ``-x`` for floats, ``-x - 1`` for signed ints (no overflow at INT_MIN),
``max - x`` for unsigned ints. TopKV2 keeps the lower index first among equal values, so
both directions are stable, as TF's are.

searchsorted is TF's LowerBound / UpperBound over the last axis of 2-D (or N-D) inputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.topk_ops import top_k

_DIRECTIONS = ("ASCENDING", "DESCENDING")


def sort(values: Any, axis: int = -1, direction: str = "ASCENDING",
         name: str | None = None) -> Tensor:
    """``values`` sorted along ``axis`` (the last by default), differentiable."""
    with get_default_graph().name_scope(name or "sort"):
        return _sort_or_argsort(convert_to_tensor(values), axis, direction, want_indices=False)


def argsort(values: Any, axis: int = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Tensor:
    """The int32 indices that sort ``values`` along ``axis``; ties keep their order (zmtf's
    sort is always stable, which ``stable=True`` asks for)."""
    del stable  # always stable
    with get_default_graph().name_scope(name or "argsort"):
        return _sort_or_argsort(convert_to_tensor(values), axis, direction, want_indices=True)


def _sort_or_argsort(x: Tensor, axis: Any, direction: str, want_indices: bool) -> Tensor:
    if direction not in _DIRECTIONS:
        raise ValueError(f"Argument `direction` should be one of ASCENDING, DESCENDING. "
                         f"Received: direction={direction}")
    if not isinstance(axis, (int, np.integer)):
        raise ValueError(f"axis must be a constant scalar, got {axis!r}")
    rank = x.shape.ndims
    if rank is None:
        raise ValueError(f"tf.sort needs the rank of {x.name} to be known")
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise ValueError(f"axis {axis} is out of bounds for a tensor of rank {rank}")
    axis = int(axis) % max(rank, 1)
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = rank - 1, axis
        x = array_ops.transpose(x, perm)
    flip, unflip = _order_flip(x.dtype) if direction == "ASCENDING" else (None, None)
    n = x.shape[-1] if x.shape[-1] is not None else array_ops.shape(x)[-1]
    values, indices = top_k(flip(x) if flip else x, n)
    out = indices if want_indices else (unflip(values) if unflip else values)
    out.set_shape(x.shape)
    return array_ops.transpose(out, perm) if perm else out


def _order_flip(dtype: dtypes.DType) -> tuple[Any, Any]:
    """An order-reversing map for ``dtype`` and its inverse."""
    if dtype.is_floating:
        return math_ops.negative, math_ops.negative
    if dtype.is_unsigned:
        top = dtype.max

        def flip(t: Tensor) -> Tensor:
            return convert_to_tensor(top, dtype=dtype) - t
        return flip, flip
    if dtype.is_integer:
        def flip_signed(t: Tensor) -> Tensor:
            return math_ops.negative(t) - convert_to_tensor(1, dtype=dtype)
        return flip_signed, flip_signed
    raise TypeError(f"tf.sort takes real numbers, got {dtype.name}")


@op_def("LowerBound", "UpperBound")
def _bound_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    sorted_inputs, values = inputs
    if sorted_inputs.dtype != values.dtype:
        raise TypeError(f"searchsorted: sorted_sequence ({sorted_inputs.dtype.name}) and values "
                        f"({values.dtype.name}) must have the same dtype")
    return [(attrs["out_type"], values.shape)]


not_differentiable("LowerBound", "UpperBound")


def searchsorted(sorted_sequence: Any, values: Any, side: str = "left", out_type: Any = dtypes.int32,
                 name: str | None = None) -> Tensor:
    """For each row of ``values``, where its entries go in the same row of ``sorted_sequence``
    (sorted along the last axis) to keep it sorted: before equal entries for side="left",
    after them for side="right". The leading dimensions of both must match."""
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    out_type = dtypes.as_dtype(out_type)
    if out_type not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"out_type must be int32 or int64, got {out_type.name}")
    sequence = convert_to_tensor(sorted_sequence, name="sorted_sequence")
    targets = convert_to_tensor(values, dtype=sequence.dtype, name="values")
    for t in (sequence, targets):
        if t.shape.ndims == 0:
            raise ValueError(f"searchsorted: {t.name} must be at least 1-D, got a scalar")
    lead_a, lead_b = sequence.shape[:-1], targets.shape[:-1]
    if not lead_a.is_compatible_with(lead_b):
        raise ValueError(f"searchsorted: the leading dimensions of sorted_sequence {sequence.shape} "
                         f"and values {targets.shape} must match")
    op_type = "LowerBound" if side == "left" else "UpperBound"
    return apply_op(op_type, [sequence, targets], {"out_type": out_type},
                    name=name or "SearchSorted").outputs[0]


__all__ = ["argsort", "searchsorted", "sort"]

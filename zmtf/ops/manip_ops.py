"""``tf.roll`` (``tf.manip.roll``): elements shifted along axes, wrapping around; and
``tf.meshgrid``, coordinate grids from 1-D tensors (a composite: reshape times ones)."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor


@op_def("Roll")
def _roll_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, shift, axis = inputs
    for what, t in (("shift", shift), ("axis", axis)):
        if t.dtype not in (dtypes.int32, dtypes.int64) or t.shape.ndims not in (None, 0, 1):
            raise InvalidArgumentError(f"tf.roll: {what} must be an int32/int64 scalar or vector, "
                                       f"got {t.dtype.name} of shape {t.shape}")
    if shift.shape.is_fully_defined() and axis.shape.is_fully_defined() and shift.shape != axis.shape:
        raise InvalidArgumentError(f"tf.roll: shift and axis must have the same shape, got "
                                   f"{shift.shape} and {axis.shape}")
    if x.shape.ndims == 0:
        raise InvalidArgumentError(f"tf.roll: input must have rank >= 1, got a scalar ({x.name})")
    return [(x.dtype, x.shape)]


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Shift elements by ``shift`` along ``axis`` (scalars or matching vectors; shifts on one
    axis add up); what falls off one end comes back at the other."""
    x = convert_to_tensor(input)
    return apply_op("Roll", [x, convert_to_tensor(shift), convert_to_tensor(axis)],
                    name=name).outputs[0]


@gradient("Roll")
def _roll_grad(op: Operation, grad: Tensor) -> list[Tensor | None]:
    return [roll(grad, math_ops.negative(op.inputs[1]), op.inputs[2]), None, None]


def meshgrid(*args: Any, indexing: str = "xy", name: str = "meshgrid") -> list[Tensor]:
    """N coordinate grids from N 1-D tensors; ``indexing='xy'`` (Cartesian, the default)
    swaps the first two output axes, ``'ij'`` (matrix) does not."""
    if indexing not in ("xy", "ij"):
        raise InvalidArgumentError(f"tf.meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    with get_default_graph().name_scope(name):
        vectors = [array_ops.reshape(convert_to_tensor(x), [-1]) for x in args]
        n = len(vectors)
        axes = list(range(n))
        if indexing == "xy" and n > 1:
            axes[0], axes[1] = 1, 0
        grids = [array_ops.reshape(v, [-1 if k == a else 1 for k in range(n)])
                 for v, a in zip(vectors, axes)]
        sizes: list[Any] = [None] * n
        for v, a in zip(vectors, axes):
            sizes[a] = v.shape.as_list()[0]
        if None in sizes:
            sizes = [None] * n
            for v, a in zip(vectors, axes):
                sizes[a] = array_ops.size(v)
            sizes = array_ops.stack(sizes)
        return [g * array_ops.ones(sizes, g.dtype) for g in grids]

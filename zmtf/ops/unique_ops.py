"""``tf.unique`` and ``tf.unique_with_counts``: the distinct values of a 1-D tensor in order
of first appearance, and each element's index into them (deduplicating ids before an
embedding lookup, say). Not differentiable, as in TF."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


@op_def("Unique", "UniqueWithCounts")
def _unique_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    if x.shape.ndims not in (None, 1):
        raise ValueError(f"unique takes a 1-D tensor, got shape {x.shape}")
    index = dtypes.as_dtype(attrs["out_idx"])
    outputs = [(x.dtype, TensorShape([None])), (index, x.shape)]
    if attrs.get("counts"):
        outputs.append((index, TensorShape([None])))
    return outputs


not_differentiable("Unique", "UniqueWithCounts")


def unique(x: Any, out_idx: Any = dtypes.int32, name: str | None = None) -> tuple[Tensor, Tensor]:
    """(y, idx): y the distinct values in order of first appearance, x == y[idx]."""
    op = apply_op("Unique", [convert_to_tensor(x)], {"out_idx": dtypes.as_dtype(out_idx).name},
                  name=name or "Unique")
    return op.outputs[0], op.outputs[1]


def unique_with_counts(x: Any, out_idx: Any = dtypes.int32,
                       name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """(y, idx, count): ``unique``'s outputs and how often each value of y occurs."""
    op = apply_op("UniqueWithCounts", [convert_to_tensor(x)],
                  {"out_idx": dtypes.as_dtype(out_idx).name, "counts": True},
                  name=name or "UniqueWithCounts")
    return op.outputs[0], op.outputs[1], op.outputs[2]

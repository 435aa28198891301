"""``GatherTree`` (TF1's tf.contrib.seq2seq.gather_tree): turn the per-step word ids and
parent-beam pointers a beam search recorded into whole sequences, by following each final
beam's parents back to step 0. Entries past a batch entry's max length, and after the first
``end_token``, are -1. int32 only, as TF's kernel; not differentiable (it moves ids)."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


def _with_rank(tensor: Tensor, rank: int, what: str) -> TensorShape:
    shape = tensor.shape
    if shape.ndims is not None and shape.ndims != rank:
        raise ValueError(f"GatherTree: {what} must be rank {rank}, got shape {shape} "
                         f"({tensor.name})")
    return shape if shape.ndims is not None else TensorShape([None] * rank)


@op_def("GatherTree")
def _gather_tree_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    step_ids, parent_ids, max_lengths, end_token = inputs
    for tensor in inputs:
        if tensor.dtype != dtypes.int32:
            raise TypeError(f"GatherTree: every input must be int32, got {tensor.dtype.name} "
                            f"for {tensor.name}")
    steps = _with_rank(step_ids, 3, "step_ids")
    parents = _with_rank(parent_ids, 3, "parent_ids")
    lengths = _with_rank(max_lengths, 1, "max_sequence_lengths")
    _with_rank(end_token, 0, "end_token")
    if not steps.is_compatible_with(parents):
        raise ValueError(f"GatherTree: step_ids and parent_ids must have the same shape, got "
                         f"{steps} and {parents}")
    shape = steps.merge_with(parents)
    batch = shape.as_list()[1]
    if not TensorShape([batch]).is_compatible_with(lengths):
        raise ValueError(f"GatherTree: the batch size of step_ids ({batch}) and "
                         f"max_sequence_lengths ({lengths.as_list()[0]}) must match")
    if batch is None:
        dims = shape.as_list()
        shape = TensorShape([dims[0], lengths.as_list()[0], dims[2]])
    return [(dtypes.int32, shape)]


not_differentiable("GatherTree")


def gather_tree(step_ids: Any, parent_ids: Any, max_sequence_lengths: Any, end_token: Any,
                name: str | None = None) -> Tensor:
    """Full beams [max_time, batch, beam_width] from ``step_ids`` and ``parent_ids`` (both
    [max_time, batch, beam_width]), reading entry b up to ``max_sequence_lengths[b]``."""
    with get_default_graph().name_scope(name or "GatherTree"):
        inputs = [convert_to_tensor(step_ids, dtype=dtypes.int32, name="step_ids"),
                  convert_to_tensor(parent_ids, dtype=dtypes.int32, name="parent_ids"),
                  convert_to_tensor(max_sequence_lengths, dtype=dtypes.int32,
                                    name="max_sequence_lengths"),
                  convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")]
        return apply_op("GatherTree", inputs, {}, name="GatherTree").outputs[0]


__all__ = ["gather_tree"]

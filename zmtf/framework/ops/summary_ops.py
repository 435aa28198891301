"""Summary ops: ``tf.summary.scalar`` and merging (values are serialized Summary protobufs,
as uint8 arrays; see framework/summary_proto.py). They run on the CPU."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.framework.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


@op_def("ScalarSummary", "MergeSummary")
def _summary_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.uint8, TensorShape([None]))]


def scalar(name: str, tensor: Any, collections: Any = None, family: Any = None) -> Tensor:
    graph = get_default_graph()
    value = convert_to_tensor(tensor)
    if value.shape.ndims not in (None, 0):
        raise ValueError(f"tf.summary.scalar '{name}' needs a scalar, got shape {value.shape}")
    tag = f"{graph.get_name_scope()}/{name}" if graph.get_name_scope() else name
    with graph.device("/cpu:0"):
        out = apply_op("ScalarSummary", [value], {"tag": tag}, name=name).outputs[0]
    for key in collections or [GraphKeys.SUMMARIES]:
        graph.add_to_collection(key, out)
    return out


def merge(inputs: list[Any], collections: Any = None, name: str | None = None) -> Tensor:
    graph = get_default_graph()
    with graph.device("/cpu:0"):
        out = apply_op("MergeSummary", [convert_to_tensor(t) for t in inputs], name=name or "Merge").outputs[0]
    for key in collections or []:
        graph.add_to_collection(key, out)
    return out


def merge_all(key: str = GraphKeys.SUMMARIES, scope: Any = None, name: str | None = None) -> Tensor | None:
    summaries = get_default_graph().get_collection(key, scope)
    return merge(summaries, name=name) if summaries else None

"""Grouping ops: no_op, group, tuple; control dependencies live on the Graph."""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def


@op_def("NoOp")
def _no_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


def no_op(name: str | None = None) -> Operation:
    return apply_op("NoOp", [], name=name)


def group(*inputs: Any, name: str | None = None) -> Operation:
    """An op that runs after all ``inputs`` (tensors or ops) have run; it has no outputs."""
    graph = get_default_graph()
    ops = []
    for item in inputs:
        for element in (item if isinstance(item, (list, tuple)) else [item]):
            element = graph.as_graph_element(element)
            ops.append(element.op if isinstance(element, Tensor) else element)
    with graph.control_dependencies(ops):
        return no_op(name=name or "group_deps")


def tuple_(tensors: list[Any], name: str | None = None) -> list[Tensor]:
    """Tensors equal to ``tensors`` that are only available once all of them are."""
    from zmtf.ops.array_ops import identity

    gate = group(*tensors)
    with get_default_graph().control_dependencies([gate]):
        return [identity(t) for t in tensors]



def with_dependencies(dependencies: list[Any], output_tensor: Any, name: str | None = None) -> Any:
    """``output_tensor`` through an Identity ("control_dependency") that runs only after
    ``dependencies``, colocated with it, as TF's control_flow_ops.with_dependencies."""
    from zmtf.framework.indexed_slices import IndexedSlices
    from zmtf.ops.array_ops import identity
    from zmtf.ops.constant_op import convert_to_tensor

    graph = get_default_graph()
    with graph.name_scope(name or "control_dependency") as scope:
        values = output_tensor.values if isinstance(output_tensor, IndexedSlices) else output_tensor
        values = convert_to_tensor(values)
        with graph.colocate_with(values.op), graph.control_dependencies(dependencies):
            if isinstance(output_tensor, IndexedSlices):
                return IndexedSlices(identity(values, name=scope), output_tensor.indices,
                                     output_tensor.dense_shape)
            return identity(values, name=scope)

# ---- cross-task transfer nodes (inserted by placement.partition, never by users) ----------
@op_def("_Send", stateful=True)
def _send_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


@op_def("_Recv", stateful=True)
def _recv_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    from zmtf.framework.dtypes import as_dtype
    from zmtf.framework.tensor_shape import TensorShape

    return [(as_dtype(attrs["dtype"]), TensorShape(attrs["shape"]))]

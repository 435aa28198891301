"""RunMetadata.partition_graphs: one GraphDef per device of the nodes a step ran there
(``RunOptions(output_partition_graphs=True)``), for a local session and a remote one.

A node of the session's graph is written as ``graph.as_graph_def()`` writes it (with the
nodes the exporter adds for it, such as a folded constant operand), carrying the device it
ran on; a node the runtime added (a host<->GPU copy, a partition's _Send/_Recv or the
placeholder that stands for a value from another task) as a bare NodeDef of its op type.
"""

from __future__ import annotations

from typing import Any, Iterable

from zmtf.formats.graph_def_proto import GraphDef, NodeDef, VersionDef
from zmtf.framework.graph import Graph
from zmtf.interop.graph_def_io import display_graph_def


def partition_graph_defs(graph: Graph, devices: Iterable[tuple[str, Iterable[dict[str, Any]]]]
                         ) -> list[Any]:
    """GraphDefs of ``devices``: (device, nodes) pairs, each node {"name", "op"} and,
    for a node the runtime added, "inputs" (tensor names)."""
    written: Any = display_graph_def(graph)   # the protobuf engine's classes are built at run time
    by_owner: dict[str, list[Any]] = {}
    for node in written.node:
        owner = node.name if _is_op(graph, node.name) else node.name.rpartition("/")[0]
        by_owner.setdefault(owner, []).append(node)
    defs: list[Any] = []
    for device, nodes in devices:
        graph_def: Any = GraphDef(versions=VersionDef(producer=written.versions.producer))
        for spec in nodes:
            name, op_type = spec["name"], spec["op"]
            own = by_owner.get(name) if _is_op(graph, name, op_type) else None
            for node in own or [_bare(name, op_type, spec.get("inputs", []))]:
                node.device = device
                graph_def.node.append(node)
        defs.append(graph_def)
    return defs


def _is_op(graph: Graph, name: str, op_type: str | None = None) -> bool:
    try:
        op = graph.get_operation_by_name(name)
    except (KeyError, ValueError):
        return False
    return op_type is None or op.type == op_type


def _bare(name: str, op_type: str, inputs: list[str]) -> Any:
    node: Any = NodeDef(name=name, op=op_type)
    node.input.extend(i[:-2] if i.endswith(":0") else i for i in inputs)
    return node


def local_partitions(nodes: Iterable[Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """(device, nodes) of a local step plan's PlannedNodes, in plan order."""
    by_device: dict[str, list[dict[str, Any]]] = {}
    for node in nodes:
        by_device.setdefault(node.device, []).append({"name": node.name, "op": node.op_type})
    return list(by_device.items())

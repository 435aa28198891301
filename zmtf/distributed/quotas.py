"""A server's quotas on what one peer may make it hold: the size of a session's graph.

A graph arrives whole in CreateSession and ExtendSession (and, placed, in RegisterGraph);
building it costs several times its wire size in Python objects, so it is measured first
and refused past ``max_graph_nodes`` nodes or ``max_graph_bytes`` bytes (the graph's
encoding plus its constants' tensors) with ResourceExhaustedError naming the setting, before
anything is built. TF1 caps a GraphDef at 2 GB (protobuf's limit): the default here.
The bytes held for requests in flight are ``framework.memory_budget``'s.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.errors import ResourceExhaustedError
from zmtf.framework.memory_budget import MemoryBudget, default_limit
from zmtf.wire.codec import packed_size


def check_graph_size(what: str, graph: Any, arrays: Any, max_nodes: int, max_bytes: int) -> None:
    """ResourceExhaustedError when ``graph`` (a graph dict off the wire) with its constant
    tensors ``arrays`` is past a limit (0: no limit); malformed graphs are left to the builder."""
    nodes = graph.get("nodes") if isinstance(graph, dict) else None
    count = len(nodes) if isinstance(nodes, list) else 0
    if max_nodes and count > max_nodes:
        raise ResourceExhaustedError(
            None, None, f"{what}: the graph has {count:,} nodes, past this server's limit of "
            f"{max_nodes:,} nodes per session's graph (max_graph_nodes); split the model, or "
            f"raise --max-graph-nodes")
    if max_bytes:
        tensor_bytes = sum(int(getattr(a, "nbytes", 0)) for a in arrays) if isinstance(
            arrays, list) else 0
        size = tensor_bytes + (packed_size(graph) if tensor_bytes <= max_bytes else 0)
        if size > max_bytes:
            raise ResourceExhaustedError(
                None, None, f"{what}: the graph takes {size:,} bytes with its constants, past "
                f"this server's limit of {max_bytes:,} bytes per session's graph "
                f"(max_graph_bytes); feed big values through placeholders or variables, or "
                f"raise --max-graph-bytes")


def inflight_budget(max_inflight_bytes: int) -> MemoryBudget:
    """The server's budget for bytes held by requests in flight (0: half the memory)."""
    return MemoryBudget(max_inflight_bytes or default_limit())


__all__ = ["check_graph_size", "inflight_budget"]

"""Graph collections <-> a MetaGraphDef's ``collection_def``, as TF's meta_graph.py writes them.

A collection of Variables becomes a ``bytes_list`` of VariableDef protos (so TF's loader
rebuilds ``tf.global_variables()``); of ops or tensors a ``node_list`` of names; of ints,
floats or strings an ``int64_list``, ``float_list`` or ``bytes_list``. A collection of anything
else (queue runners, Python objects) is left out, as TF leaves out what it cannot serialize.
Reading, names are looked up in the graph; a name that is not there (the saver nodes zmtf
leaves out) drops that item, with a log line.
"""

from __future__ import annotations

import logging
import numbers
from typing import Any

from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.formats.meta_graph_proto import CollectionDef, VariableDef
from zmtf.ops.variables import Variable

_logger = logging.getLogger(__name__)

#: the collections TF writes as VariableDefs (bytes_list) and reads back as Variables
VARIABLE_COLLECTIONS = frozenset({
    "variables", "local_variables", "model_variables", "trainable_variables",
    "moving_average_variables", "metric_variables", "global_step",
    "concatenated_variables"})


def variable_def(variable: Variable) -> VariableDef:
    """The VariableDef TF writes for a reference variable."""
    return VariableDef(variable_name=variable.name, initializer_name=variable.initializer.name,
                       snapshot_name=variable.value().name,
                       initial_value_name=variable.initial_value.name,
                       trainable=variable.trainable)


def _item_names(item: Any) -> list[str]:
    """The graph names an item needs: a Variable's four, an op's or tensor's own."""
    if isinstance(item, Variable):
        return [item.op.name, item.initializer.name, item.value().op.name,
                item.initial_value.op.name]
    return [item.name if isinstance(item, Operation) else item.op.name]


def collection_defs(graph: Graph, exported: set[str]) -> dict[str, CollectionDef]:
    """The ``collection_def`` of ``graph``, keeping only items whose nodes were ``exported``."""
    out: dict[str, CollectionDef] = {}
    for key in sorted(graph.get_all_collection_keys()):
        items = graph.get_collection(key)
        if not items:
            continue
        encoded = _encode(key, items, exported)
        if encoded is None:
            _logger.info("SavedModel: collection '%s' left out: zmtf cannot write its items "
                         "(%s) as a CollectionDef", key, type(items[0]).__name__)
        elif encoded.WhichOneof("kind") is not None:
            out[key] = encoded
    return out


def _encode(key: str, items: list[Any], exported: set[str]) -> CollectionDef | None:
    if all(isinstance(i, Variable) for i in items):
        kept = [i for i in items if all(n in exported for n in _item_names(i))]
        if not kept:
            return CollectionDef()
        return CollectionDef(bytes_list=CollectionDef.BytesList(
            value=[variable_def(v).SerializeToString() for v in kept]))
    if all(isinstance(i, (Operation, Tensor)) for i in items):
        kept = [i for i in items if _item_names(i)[0] in exported]
        if not kept:
            return CollectionDef()
        return CollectionDef(node_list=CollectionDef.NodeList(value=[i.name for i in kept]))
    if all(isinstance(i, (bytes, str)) for i in items):
        return CollectionDef(bytes_list=CollectionDef.BytesList(
            value=[i.encode() if isinstance(i, str) else i for i in items]))
    if all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in items):
        return CollectionDef(int64_list=CollectionDef.Int64List(value=[int(i) for i in items]))
    if all(isinstance(i, numbers.Real) and not isinstance(i, bool) for i in items):
        return CollectionDef(float_list=CollectionDef.FloatList(value=[float(i) for i in items]))
    return None


def _scoped(name: str, prefix: str) -> str:
    return prefix + name.lstrip("^")


def variable_from_def(graph: Graph, proto: VariableDef, prefix: str) -> Variable:
    """The Variable over the imported nodes a VariableDef names; KeyError if one is missing,
    NotImplementedError for a resource variable."""
    if proto.is_resource:
        raise NotImplementedError(f"variable '{proto.variable_name}' is a resource variable; "
                                  f"zmtf loads reference variables (VariableV2) only")
    ref = graph.get_tensor_by_name(_scoped(proto.variable_name, prefix))
    initializer = graph.get_operation_by_name(_scoped(proto.initializer_name, prefix))
    snapshot = graph.get_tensor_by_name(_scoped(proto.snapshot_name, prefix))
    initial = (graph.get_tensor_by_name(_scoped(proto.initial_value_name, prefix))
               if proto.initial_value_name else initializer.inputs[1])
    return Variable._from_graph(ref, initializer, snapshot, initial, proto.trainable)


def restore_collections(graph: Graph, collection_def: dict[str, CollectionDef], prefix: str
                        ) -> dict[str, Variable]:
    """Add ``collection_def``'s collections to ``graph`` (names under ``prefix``); return the
    Variables built, by variable op name."""
    variables: dict[str, Variable] = {}
    for key, collection in sorted(collection_def.items()):
        kind = collection.WhichOneof("kind")
        if kind == "node_list":
            for name in collection.node_list.value:
                try:
                    graph.add_to_collection(key, graph.as_graph_element(_scoped(name, prefix)))
                except (KeyError, ValueError):
                    _logger.info("SavedModel collection '%s': '%s' is not in the loaded graph",
                                 key, name)
        elif kind == "bytes_list" and key in VARIABLE_COLLECTIONS:
            for data in collection.bytes_list.value:
                proto = VariableDef.FromString(data)
                name = _scoped(proto.variable_name, prefix).partition(":")[0]
                if name not in variables:
                    variables[name] = variable_from_def(graph, proto, prefix)
                graph.add_to_collection(key, variables[name])
        elif kind in ("bytes_list", "int64_list", "float_list"):
            for value in getattr(collection, kind).value:
                graph.add_to_collection(key, value)
    return variables


__all__ = ["VARIABLE_COLLECTIONS", "collection_defs", "restore_collections", "variable_def",
           "variable_from_def"]

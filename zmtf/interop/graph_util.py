"""``tf.import_graph_def`` and ``tf.graph_util``: what TF1 users do with GraphDefs.

    graph_def = tf.graph_util.convert_variables_to_constants(sess, sess.graph.as_graph_def(),
                                                             ["logits"])
    tf.train.write_graph(graph_def, "/tmp/model", "frozen.pb", as_text=False)
    ...
    graph_def = tf.GraphDef()
    with tf.gfile.GFile("/tmp/model/frozen.pb", "rb") as f:
        graph_def.ParseFromString(f.read())
    logits, = tf.import_graph_def(graph_def, input_map={"x:0": images},
                                  return_elements=["logits:0"], name="")

These functions only rewrite GraphDef messages (graph_def_proto.py); the one that needs
values, ``convert_variables_to_constants``, asks the session it is given for them.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from zmtf.framework.graph import get_default_graph
from zmtf.interop.graph_def_io import import_graph_def as _import_into
from zmtf.formats.graph_def_proto import AttrValue, GraphDef, NodeDef, make_tensor_proto

_logger = logging.getLogger(__name__)
_VARIABLE_OPS = ("VariableV2", "Variable")


def import_graph_def(graph_def: Any, input_map: dict[str, Any] | None = None,
                     return_elements: list[str] | None = None, name: str | None = None,
                     op_dict: Any = None, producer_op_list: Any = None) -> list[Any] | None:
    """Add ``graph_def``'s nodes to the default graph under the scope ``name`` ("import").

    ``input_map`` replaces GraphDef tensors ("x:0" or "x") by tensors of this graph;
    ``return_elements`` names the ops ("y") and tensors ("y:0") to return, in order.
    ``op_dict`` and ``producer_op_list`` are accepted and unused, as in TF 2.
    """
    graph = get_default_graph()
    if name == "":
        prefix = ""
    else:
        with graph.name_scope(name or "import") as prefix:
            pass
    return _import_into(graph, graph_def, input_map, return_elements, prefix)


def _check_graph_def(graph_def: Any) -> None:
    if not isinstance(graph_def, GraphDef):
        raise TypeError(f"graph_def must be a graph_pb2.GraphDef proto, but got type "
                        f"{type(graph_def)}.")


def _node_name(ref: str) -> str:
    return ref[1:] if ref.startswith("^") else ref.split(":")[0]


def extract_sub_graph(graph_def: GraphDef, dest_nodes: list[str]) -> GraphDef:
    """The nodes ``dest_nodes`` need (through data and control inputs), in the original order."""
    _check_graph_def(graph_def)
    if isinstance(dest_nodes, str):
        raise TypeError(f"dest_nodes must be an iterable of strings, but got type "
                        f"{type(dest_nodes)}.")
    by_name = {node.name: node for node in graph_def.node}
    for name in dest_nodes:
        if name not in by_name:
            raise AssertionError(f"{name} is not in graph")
    keep: set[str] = set()
    pending = list(dest_nodes)
    while pending:
        name = pending.pop()
        if name not in keep:
            keep.add(name)
            pending.extend(_node_name(ref) for ref in by_name[name].input)
    out = GraphDef()
    out.node.extend(_copy(node) for node in graph_def.node if node.name in keep)
    out.library = graph_def.library
    out.versions.CopyFrom(graph_def.versions)
    return out


def _copy(node: NodeDef) -> NodeDef:
    return NodeDef.FromString(node.SerializeToString())


def convert_variables_to_constants(sess: Any, input_graph_def: GraphDef,
                                   output_node_names: list[str],
                                   variable_names_whitelist: Any = None,
                                   variable_names_blacklist: Any = None) -> GraphDef:
    """The subgraph of ``output_node_names`` with every variable it reads replaced by a Const
    holding the variable's value in ``sess`` (a "frozen" graph)."""
    inference = extract_sub_graph(input_graph_def, output_node_names)
    names = [node.name for node in inference.node if node.op in _VARIABLE_OPS
             and (variable_names_whitelist is None or node.name in variable_names_whitelist)
             and (variable_names_blacklist is None or node.name not in variable_names_blacklist)]
    values = dict(zip(names, sess.run([f"{n}:0" for n in names]))) if names else {}
    out = GraphDef()
    for node in inference.node:
        if node.name in values:
            const = NodeDef(name=node.name, op="Const", device=node.device)
            const.attr["dtype"].CopyFrom(AttrValue(type=node.attr["dtype"].type))
            const.attr["value"].CopyFrom(AttrValue(tensor=make_tensor_proto(values[node.name])))
            out.node.append(const)
        elif node.op == "Assign" and _node_name(node.input[0]) in values:
            raise ValueError(f"convert_variables_to_constants: output '{node.name}' assigns to "
                             f"variable '{_node_name(node.input[0])}', which is being frozen; "
                             f"freeze the inference outputs only")
        else:
            out.node.append(node)
    out.library = inference.library
    out.versions.CopyFrom(inference.versions)
    _logger.info("Froze %d variables.", len(values))
    _logger.info("Converted %d variables to const ops.", len(values))
    return out


def remove_training_nodes(input_graph: GraphDef, protected_nodes: Any = None) -> GraphDef:
    """Drop CheckNumerics nodes and splice out Identity nodes (TF's rules: not protected,
    not colocated with, not in a control edge), leaving an inference graph."""
    _check_graph_def(input_graph)
    protected = set(protected_nodes or ())
    removed = {n.name for n in input_graph.node if n.op == "CheckNumerics" and n.name not in protected}
    kept = []
    for node in input_graph.node:
        if node.name in removed:
            continue
        new = _copy(node)
        del new.input[:]
        new.input.extend(ref for ref in node.input if _node_name(ref) not in removed)
        kept.append(new)
    control_targets, colocated = set(), set()
    with_control = set()
    for node in kept:
        for ref in node.input:
            if ref.startswith("^"):
                control_targets.add(ref[1:])
                with_control.add(node.name)
        if "_class" in node.attr:
            colocated.update(s.decode()[5:] for s in node.attr["_class"].list.s
                             if s.startswith(b"loc:@"))
    splice = {n.name: n.input[0] for n in kept
              if n.op == "Identity" and n.name not in protected and n.name not in colocated
              and n.name not in with_control and n.name not in control_targets}
    out = GraphDef()
    for node in kept:
        if node.name in splice:
            continue
        new = _copy(node)
        del new.input[:]
        for ref in node.input:
            name = re.sub(r"^\^", "", ref)
            while name in splice:
                ref = splice[name]
                name = re.sub(r"^\^", "", ref)
            new.input.append(ref)
        out.node.append(new)
    out.library = input_graph.library
    out.versions.CopyFrom(input_graph.versions)
    return out


__all__ = ["convert_variables_to_constants", "extract_sub_graph", "import_graph_def",
           "remove_training_nodes"]

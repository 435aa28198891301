"""The save/restore NodeDefs of a TF1 Saver, written into a GraphDef and read back from one.

zmtf's own Saver moves values through ``sess.run`` and never puts SaveV2/RestoreV2 ops in its
graph, but a SavedModel's MetaGraphDef must carry them: TensorFlow's loader restores a TF1
SavedModel by running ``saver_def.restore_op_name`` with ``filename_tensor_name`` fed the
variables prefix. ``add_saver_nodes`` writes the nodes TF's non-sharded V2 Saver builds::

    save/filename/input (Const "model") -> save/filename, save/Const (PlaceholderWithDefault)
    save/SaveV2(save/Const, tensor_names, shape_and_slices, variables...)
    save/control_dependency = Identity(save/Const, ^save/SaveV2)          (save_tensor_name)
    save/RestoreV2(save/Const, tensor_names, shape_and_slices) -> save/Assign, save/Assign_1...
    save/restore_all = NoOp(^save/Assign, ...)                             (restore_op_name)

zmtf has no kernels for these ops, so when it loads a SavedModel it does the reverse:
``restore_plan`` reads which checkpoint key (and slice) each variable is restored from, and
``without_scopes`` drops the Savers' nodes before the graph is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from zmtf.formats.graph_def_proto import AttrValue, GraphDef, NodeDef, make_ndarray, \
    make_tensor_proto, shape_proto
from zmtf.formats.meta_graph_proto import SaverDef

_STRING = 7   # DT_STRING


@dataclass(frozen=True)
class SavedTensor:
    """One checkpoint entry: its key, the variable node it is read from and restored into,
    that node's DataType number and device."""

    key: str
    variable: str
    dtype: int
    device: str = ""


@dataclass(frozen=True)
class RestoreStep:
    """What a Saver's restore op does for one variable: assign it the checkpoint entry
    ``key`` (only the part ``shape_and_slice`` names, when that is not empty)."""

    variable: str
    key: str
    shape_and_slice: str


def _const(name: str, value: np.ndarray, device: str = "") -> NodeDef:
    node = NodeDef(name=name, op="Const", device=device)
    node.attr["dtype"].CopyFrom(AttrValue(type=make_tensor_proto(value).dtype))
    node.attr["value"].CopyFrom(AttrValue(tensor=make_tensor_proto(value)))
    return node


def _strings(values: list[str]) -> np.ndarray:
    array = np.empty(len(values), dtype=object)
    array[:] = [v.encode() for v in values]
    return array


def _placeholder_with_default(name: str, source: str) -> NodeDef:
    node = NodeDef(name=name, op="PlaceholderWithDefault", input=[source])
    node.attr["dtype"].CopyFrom(AttrValue(type=_STRING))
    node.attr["shape"].CopyFrom(AttrValue(shape=shape_proto([])))
    return node


def _dtypes(entries: list[SavedTensor]) -> AttrValue:
    return AttrValue(list=AttrValue.ListValue(type=[e.dtype for e in entries]))


def add_saver_nodes(graph_def: GraphDef, scope: str, entries: list[SavedTensor]) -> SaverDef:
    """Append a V2 Saver's nodes for ``entries`` under ``scope`` (free in ``graph_def``);
    return the SaverDef that names them."""
    names, slices = _strings([e.key for e in entries]), _strings([""] * len(entries))
    prefix = f"{scope}/Const"
    nodes = [_const(f"{scope}/filename/input", np.asarray(b"model", dtype=object)),
             _placeholder_with_default(f"{scope}/filename", f"{scope}/filename/input"),
             _placeholder_with_default(prefix, f"{scope}/filename"),
             _const(f"{scope}/SaveV2/tensor_names", names),
             _const(f"{scope}/SaveV2/shape_and_slices", slices)]
    save = NodeDef(name=f"{scope}/SaveV2", op="SaveV2", input=[
        prefix, f"{scope}/SaveV2/tensor_names", f"{scope}/SaveV2/shape_and_slices"])
    save.input.extend(e.variable for e in entries)
    save.attr["dtypes"].CopyFrom(_dtypes(entries))
    done = NodeDef(name=f"{scope}/control_dependency", op="Identity",
                   input=[prefix, f"^{scope}/SaveV2"])
    done.attr["T"].CopyFrom(AttrValue(type=_STRING))
    done.attr["_class"].CopyFrom(AttrValue(list=AttrValue.ListValue(s=[f"loc:@{prefix}".encode()])))
    nodes += [save, done, _const(f"{scope}/RestoreV2/tensor_names", names),
              _const(f"{scope}/RestoreV2/shape_and_slices", slices)]
    restore = NodeDef(name=f"{scope}/RestoreV2", op="RestoreV2", input=[
        prefix, f"{scope}/RestoreV2/tensor_names", f"{scope}/RestoreV2/shape_and_slices"])
    restore.attr["dtypes"].CopyFrom(_dtypes(entries))
    nodes.append(restore)
    assigns = []
    for i, entry in enumerate(entries):
        assign = NodeDef(name=f"{scope}/Assign" + (f"_{i}" if i else ""), op="Assign",
                         device=entry.device,
                         input=[entry.variable, f"{scope}/RestoreV2" + (f":{i}" if i else "")])
        assign.attr["T"].CopyFrom(AttrValue(type=entry.dtype))
        assign.attr["validate_shape"].CopyFrom(AttrValue(b=True))
        assign.attr["use_locking"].CopyFrom(AttrValue(b=True))
        assign.attr["_class"].CopyFrom(AttrValue(list=AttrValue.ListValue(
            s=[f"loc:@{entry.variable}".encode()])))
        assigns.append(assign)
    nodes += assigns
    nodes.append(NodeDef(name=f"{scope}/restore_all", op="NoOp",
                         input=[f"^{a.name}" for a in assigns]))
    graph_def.node.extend(nodes)
    return SaverDef(filename_tensor_name=f"{prefix}:0",
                    save_tensor_name=f"{scope}/control_dependency:0",
                    restore_op_name=f"{scope}/restore_all", max_to_keep=5, sharded=False,
                    keep_checkpoint_every_n_hours=10000.0, version=SaverDef.V2)


def saver_scope(saver_def: SaverDef) -> str:
    """The name scope of a Saver's nodes ("save" for "save/restore_all")."""
    scope = saver_def.restore_op_name.rpartition("/")[0]
    if not scope:
        raise ValueError(f"saver_def.restore_op_name '{saver_def.restore_op_name}' is in no "
                         f"name scope; zmtf finds a Saver's nodes by their scope ('save/')")
    return scope


def _node_of(ref: str) -> tuple[str, int]:
    name, _, index = ref.lstrip("^").partition(":")
    return name, int(index) if index.isdigit() else 0


def restore_plan(graph_def: GraphDef, saver_def: SaverDef) -> list[RestoreStep]:
    """Which key each variable is restored from: every Assign/AssignVariableOp of the
    Saver's scope whose value comes (through Identity nodes) from a RestoreV2 output.

    ValueError when a Saver node is not of that form (a RestoreV2 without Const names)."""
    scope = saver_scope(saver_def) + "/"
    nodes = {node.name: node for node in graph_def.node}
    steps = []
    for node in graph_def.node:
        if not node.name.startswith(scope) or node.op not in ("Assign", "AssignVariableOp"):
            continue
        if len(node.input) < 2:
            raise ValueError(f"Saver node '{node.name}' ({node.op}) has {len(node.input)} inputs")
        source, index = _node_of(node.input[1])
        while source in nodes and nodes[source].op == "Identity" and nodes[source].input:
            source, index = _node_of(nodes[source].input[0])
        restore = nodes.get(source)
        if restore is None or restore.op not in ("RestoreV2", "Restore", "RestoreSlice"):
            raise ValueError(f"Saver node '{node.name}' assigns '{node.input[1]}', which is not "
                             f"an output of a RestoreV2 node")
        if restore.op != "RestoreV2" or len(restore.input) != 3:
            raise ValueError(f"Saver node '{restore.name}' is a {restore.op} with "
                             f"{len(restore.input)} inputs; zmtf reads V2 checkpoints through "
                             f"RestoreV2(prefix, tensor_names, shape_and_slices) only")
        keys = _const_strings(nodes, restore.input[1], restore.name)
        slices = _const_strings(nodes, restore.input[2], restore.name)
        if len(keys) != len(slices) or index >= len(keys):
            raise ValueError(f"Saver node '{restore.name}' has {len(keys)} tensor names and "
                             f"{len(slices)} slices; output {index} is used")
        steps.append(RestoreStep(_node_of(node.input[0])[0], keys[index], slices[index]))
    return steps


def _const_strings(nodes: dict[str, NodeDef], ref: str, user: str) -> list[str]:
    node = nodes.get(_node_of(ref)[0])
    if node is None or node.op != "Const" or "value" not in node.attr:
        raise ValueError(f"Saver node '{user}' reads its tensor names from '{ref}', which is "
                         f"not a Const")
    array = make_ndarray(node.attr["value"].tensor, f"node '{node.name}' attr 'value'")
    if array.dtype != object:
        raise ValueError(f"Saver node '{node.name}' holds {array.dtype}, not strings")
    return [v.decode("utf-8", "replace") for v in array.ravel()]


#: the checkpoint ops only a Saver's scope holds; zmtf has no kernels for them
_SAVER_OPS = frozenset({"SaveV2", "RestoreV2", "MergeV2Checkpoints", "Save", "SaveSlices",
                        "Restore", "RestoreSlice", "ShardedFilename", "ShardedFilespec"})


def saver_scopes(graph_def: GraphDef, saver_def: SaverDef) -> set[str]:
    """The saver_def's scope and that of every other Saver in the graph (TF's add_meta_graph
    adds a "save_1" Saver beside "save"): each scope holding a checkpoint op."""
    scopes = {saver_scope(saver_def)} if saver_def.restore_op_name else set()
    for node in graph_def.node:
        if node.op in _SAVER_OPS and "/" in node.name:
            scopes.add(node.name.rpartition("/")[0])
    return scopes


def without_scopes(graph_def: GraphDef, scopes: set[str]) -> GraphDef:
    """``graph_def`` without the nodes under any of ``scopes``; ValueError if a kept node
    uses one."""
    prefixes = tuple(scope + "/" for scope in scopes)
    kept = GraphDef(versions=graph_def.versions, library=graph_def.library)
    for node in graph_def.node:
        if node.name.startswith(prefixes):
            continue
        for ref in node.input:
            if _node_of(ref)[0].startswith(prefixes):
                raise ValueError(f"node '{node.name}' uses '{ref}' of a Saver's scope "
                                 f"({', '.join(sorted(scopes))}), which zmtf leaves out when it "
                                 f"loads a SavedModel")
        kept.node.append(node)
    return kept


__all__ = ["RestoreStep", "SavedTensor", "add_saver_nodes", "restore_plan", "saver_scope",
           "saver_scopes", "without_scopes"]

"""zmtf Graph <-> TensorFlow GraphDef, through the op table of graph_def_ops.py.

``graph_to_graph_def(graph)`` writes every op as the NodeDef TF would have (inputs in TF's
``name`` / ``name:1`` / ``^ctrl`` syntax, devices, ``_class`` colocation, derived type attrs)
and refuses an op it cannot write. ``import_graph_def(graph, graph_def, ...)`` checks the whole
GraphDef (unique names, known ops and attrs, inputs that exist, no cycles) before it adds a
node, then creates the nodes in dependency order, checking every type attr against the
tensors it gets. Errors follow TF's wording and classes (ValueError for a bad graph,
NotFoundError for an op zmtf does not have) and always name the node.
"""

from __future__ import annotations

import heapq
import re
from typing import Any

import numpy as np

from zmtf.framework import device_spec as pydev
from zmtf.framework.dtypes import DType, as_dtype
from zmtf.framework.errors import NotFoundError
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.graph_io import mark_name_used
from zmtf.interop.graph_def_parse_example import TF_ATTRS as PARSE_EXAMPLE_ATTRS, \
    export_parse_example, import_parse_example, tf_output_index, zmtf_output_index
from zmtf.interop import graph_def_ops_sparse  # noqa: F401  (its sparse, lookup and partition mappings)
from zmtf.interop.graph_def_ops import TF_OPS, ZMTF_OPS, _from_attr, _TO_ATTR, \
    pad_mapping, spec_to_strided_slice, strided_slice_to_spec
from zmtf.formats.graph_def_proto import GRAPH_DEF_VERSION, DATA_TYPE_NAMES, AttrValue, \
    GraphDef, NodeDef, VersionDef, dtype_of_enum, enum_of_dtype, make_ndarray, make_tensor_proto, \
    shape_proto
from zmtf.framework.op_def import OP_DEFS
from zmtf.framework.tensor_shape import TensorShape
from zmtf.framework import upper_layers

_NODE_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*\Z")
_SS_OPERANDS = ("stack", "stack_1", "stack_2")


def tf_dtype_name(dtype: DType) -> str:
    """TF's short name of a dtype in messages ("float", "double", "int32")."""
    return DATA_TYPE_NAMES[enum_of_dtype(dtype)][3:].lower()


# ---- zmtf -> GraphDef -------------------------------------------------------------------------
def graph_to_graph_def(graph: Graph, add_shapes: bool = False,
                       ops: list[Operation] | None = None) -> GraphDef:
    """The GraphDef of ``graph`` (or of its ``ops`` only, which must include their inputs);
    NotImplementedError naming the first op TF has no twin of."""
    exporter = _Exporter(graph, add_shapes)
    for op in graph.get_operations() if ops is None else ops:
        exporter.export(op)
    return exporter.graph_def


def display_graph_def(graph: Graph) -> GraphDef:
    """A GraphDef for TensorBoard's graph view: every op as TF would write it where zmtf can,
    and the rest (zmtf's own gradient helpers, tensor-bounded slices) as a node with its
    zmtf op type, device and inputs but no attrs: enough to draw, not to run."""
    exporter = _Exporter(graph, False)
    for op in graph.get_operations():
        try:
            exporter.export(op)
        except NotImplementedError:
            node = NodeDef(name=op.name, op=op.type, device=op.device)
            node.input.extend([_ref(t) for t in op.inputs] + [f"^{c.name}" for c in op.control_inputs])
            exporter.graph_def.node.append(node)
    return exporter.graph_def


def writable_ops(graph: Graph) -> list[Operation]:
    """The ops of ``graph`` that can be written as NodeDefs together with all their data and
    control inputs, in graph order: a SavedModel leaves out, say, zmtf's gradient helpers
    and the training ops that read them, while the inference graph around them is kept."""
    scratch = _Exporter(graph, False)
    writable: dict[str, bool] = {}

    def check(op: Operation) -> bool:
        if op.name not in writable:
            writable[op.name] = False   # NOTE: a cycle (while loops) is not writable anyway
            try:
                scratch.export(op)
            except NotImplementedError:
                return False
            writable[op.name] = all(check(t.op) for t in op.inputs) and all(
                check(c) for c in op.control_inputs)
        return writable[op.name]

    return [op for op in graph.get_operations() if check(op)]


def _ref(tensor: Tensor) -> str:
    if tensor.op.type == "ParseExample":       # TF numbers its outputs in another order
        index = tf_output_index(tensor.op, tensor.value_index)
        return tensor.op.name if index == 0 else f"{tensor.op.name}:{index}"
    return tensor.op.name if tensor.value_index == 0 else tensor.name


class _Exporter:
    def __init__(self, graph: Graph, add_shapes: bool) -> None:
        self.graph, self.add_shapes = graph, add_shapes
        self.graph_def = GraphDef(versions=VersionDef(producer=GRAPH_DEF_VERSION))
        self.taken = {op.name for op in graph.get_operations()}

    def export(self, op: Operation) -> None:
        if op.type == "ParseExample":
            node = NodeDef(name=op.name, op="ParseExample", device=op.device)
            node.input.append(_ref(op.inputs[0]))
            export_parse_example(op, node, self.const)
            self._finish(op, node)
            return
        mapping = pad_mapping(op.attrs) if op.type == "Pad" else ZMTF_OPS.get(op.type)
        if mapping is None:
            raise NotImplementedError(
                f"as_graph_def: node '{op.name}' is a zmtf {op.type} op, which has no TensorFlow "
                f"NodeDef mapping (zmtf writes {len(ZMTF_OPS)} op types: inference ops, "
                f"variables, tf.cond, GradientDescent; not zmtf's own gradient helpers). "
                f"Export the inference graph, e.g. graph_util.extract_sub_graph(graph_def, "
                f"outputs) of a graph built without the training ops.")
        node = NodeDef(name=op.name, op=mapping.tf_op, device=op.device)
        data = op.inputs[:1] if op.type in _BOUND_OPS else op.inputs   # the rest: bound tensors
        node.input.extend(_ref(t) for t in data)
        used = {k for k in op.attrs if k.startswith("_")}
        for tf_name, (kind, zmtf_name, default) in mapping.attrs.items():
            value = default if zmtf_name is None else op.attrs.get(zmtf_name, default)
            used.add(zmtf_name)
            if value is not None or kind == "shape":
                node.attr[tf_name].CopyFrom(_TO_ATTR[kind](value))
        for tf_name, source in mapping.types.items():
            dtype = as_dtype("int32") if source == "idx" else op.inputs[int(source[2:])].dtype
            node.attr[tf_name].CopyFrom(AttrValue(type=enum_of_dtype(dtype)))
        if mapping.list_input and mapping.extra is None:
            node.attr["N"].CopyFrom(AttrValue(i=len(op.inputs)))
        if mapping.extra is not None:
            for tf_name, value in mapping.extra.write(op).items():
                node.attr[tf_name].CopyFrom(value)
            used |= set(mapping.extra.zmtf_names)
        # a zmtf-only attr at the value an import would set is implied by the TF op
        used |= {k for k, v in mapping.private.items() if op.attrs.get(k) == v}
        special: dict[str, np.ndarray | str] = {}
        used |= self._special(op, node, special)
        for tf_input, to_const, _, zmtf_attr in mapping.operands:
            used.add(zmtf_attr)
            value = special[tf_input] if tf_input in special else to_const(op.attrs, op.inputs)
            suffix = _SS_OPERANDS[len(node.input) - 1] if op.type == "StridedSlice" else tf_input
            node.input.append(value if isinstance(value, str) else self.const(op, suffix, value))
        unknown = sorted(set(op.attrs) - used)
        if unknown:
            raise NotImplementedError(f"as_graph_def: node '{op.name}' ({op.type}) has attrs "
                                      f"{unknown} that zmtf cannot write as TensorFlow attrs")
        self._finish(op, node)

    def _finish(self, op: Operation, node: NodeDef) -> None:
        """Control inputs, colocation and shapes; then add the node."""
        node.input.extend("^" + c.name for c in op.control_inputs)
        groups = [g for g in op._colocation_groups if g != f"loc:@{op.name}"]
        if groups:
            node.attr["_class"].CopyFrom(AttrValue(list=AttrValue.ListValue(s=[g.encode() for g in groups])))
        if self.add_shapes:
            outputs = list(op.outputs)
            if op.type == "ParseExample":
                for t in op.outputs:
                    outputs[tf_output_index(op, t.value_index)] = t
            self._add_shapes(node, [t.shape.dims for t in outputs])
        self.graph_def.node.append(node)

    def _special(self, op: Operation, node: NodeDef, operands: dict[str, np.ndarray | str]) -> set[str]:
        """The attrs that need code (Const values, variables, slice and pad bounds, one-hot
        values); fills ``operands`` with the operand values (or nodes) the table cannot compute."""
        attrs = op.attrs
        if op.type == "Const":
            node.attr["value"].CopyFrom(AttrValue(tensor=make_tensor_proto(attrs["value"])))
            return {"value"}
        if op.type == "Variable":
            if attrs.get("var_name") not in (None, "", op.name):
                node.attr["shared_name"].CopyFrom(AttrValue(s=attrs["var_name"].encode()))
            return {"var_name"}
        if op.type == "Assign":
            return {"shape"}
        if op.type in _BOUND_OPS:
            bounds = _BoundWriter(self, op)
            if op.type == "StridedSlice":
                rows, masks = spec_to_strided_slice(attrs["spec"])
                for tf_name, value in masks.items():
                    node.attr[tf_name].CopyFrom(AttrValue(i=value))
                named = dict(zip(("begin", "end", "strides"), zip(_SS_OPERANDS, rows, (0, 0, 1))))
            elif op.type == "Slice":
                named = {n: (n, attrs[n], 0) for n in ("begin", "size")}
            else:
                named = {"paddings": ("paddings", attrs["paddings"], 0)}
            for tf_input, (suffix, values, filler) in named.items():
                operands[tf_input] = bounds.operand(suffix, values, filler)
            node.attr[_INDEX_ATTR[op.type]].CopyFrom(AttrValue(type=enum_of_dtype(bounds.dtype)))
            if op.type == "StridedSlice":
                return {"spec"}
        if op.type == "OneHot":
            out = op.outputs[0].dtype.np
            operands["on_value"] = np.asarray(attrs["on_value"], out)
            operands["off_value"] = np.asarray(attrs["off_value"], out)
        if op.type == "Pad":
            return {"constant_values", "mode"}
        return set()

    def unique(self, name: str) -> str:
        base, n = name, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def add_node(self, op: Operation, suffix: str, tf_op: str, inputs: list[str],
                 attrs: dict[str, AttrValue]) -> str:
        """A helper NodeDef of ``op`` (a Pack or Cast of its bounds) named ``op/suffix``."""
        node = NodeDef(name=self.unique(f"{op.name}/{suffix}"), op=tf_op, device=op.device)
        node.input.extend(inputs)
        for key, value in attrs.items():
            node.attr[key].CopyFrom(value)
        self.graph_def.node.append(node)
        return node.name

    def const(self, op: Operation, suffix: str, value: np.ndarray) -> str:
        """A Const node for an operand of ``op``, named as TF names it (reusing one that
        an import made, so zmtf -> GraphDef -> zmtf -> GraphDef keeps the same nodes)."""
        name = f"{op.name}/{suffix}"
        existing = self.graph._ops_by_name.get(name)
        if existing is not None and existing.type == "Const":
            old = existing.attrs["value"]
            if old.dtype == value.dtype and old.shape == value.shape and np.array_equal(old, value):
                return name
        name = self.unique(name)
        node = NodeDef(name=name, op="Const", device=op.device)
        node.attr["dtype"].CopyFrom(AttrValue(type=enum_of_dtype(as_dtype(value.dtype))))
        node.attr["value"].CopyFrom(AttrValue(tensor=make_tensor_proto(value)))
        if self.add_shapes:
            self._add_shapes(node, [list(value.shape)])
        self.graph_def.node.append(node)
        return name

    @staticmethod
    def _add_shapes(node: NodeDef, shapes: list[Any]) -> None:
        node.attr["_output_shapes"].CopyFrom(AttrValue(list=AttrValue.ListValue(
            shape=[shape_proto(dims) for dims in shapes])))


_BOUND_OPS = ("StridedSlice", "Slice", "Pad")   # bounds: ints, or elements of tensor inputs
_INDEX_ATTR = {"StridedSlice": "Index", "Slice": "Index", "Pad": "Tpaddings"}


class _BoundWriter:
    """Writes the bound operands of one Slice, StridedSlice or Pad: a Const of the ints; the
    op's bound tensor itself where the operand is exactly that tensor (an imported graph, or
    ``tf.slice(x, begin_tensor, ...)``); otherwise a Pack of Consts and the scalar tensors
    (``x[i:j]``), as TF's own graphs have. All operands share one index dtype (TF's rule):
    int64 when a bound tensor is int64, else int32; a tensor of the other dtype gets a Cast."""

    def __init__(self, exporter: _Exporter, op: Operation) -> None:
        self.exporter, self.op = exporter, op
        self.dtype = as_dtype("int64" if any(t.dtype.name == "int64" for t in op.inputs[1:])
                              else "int32")

    def operand(self, suffix: str, values: list[Any], filler: int) -> np.ndarray | str:
        if not any(_is_ref(v) for v in _flatten(values)):
            return np.asarray(_filled(values, filler), self.dtype.np)
        whole = self._whole_input(values)
        if whole is not None:
            return self._tensor(whole, suffix + "/Cast")
        return self._pack(values, suffix, filler)

    def _whole_input(self, values: list[Any]) -> Tensor | None:
        """The bound tensor every (non-ignored) entry of ``values`` reads at its own position."""
        inputs = {v[1] for v in _flatten(values) if _is_ref(v)}
        if len(inputs) != 1:
            return None
        k = inputs.pop()
        tensor, shape = self.op.inputs[k + 1], list(np.shape(_filled(values, 0)))
        if not tensor.shape.is_fully_defined() or tensor.shape.as_list() != shape:
            return None
        if any(_at(values, p) not in (None, ["in", k, *p]) for p in np.ndindex(*shape)):
            return None
        return tensor

    def _pack(self, values: list[Any], suffix: str, filler: int) -> str:
        items = []
        for i, value in enumerate(values):
            if isinstance(value, list) and not _is_ref(value):
                items.append(self._pack(value, f"{suffix}/{i}", filler))
            elif _is_ref(value):
                if len(value) != 2:
                    raise NotImplementedError(
                        f"as_graph_def: node '{self.op.name}' ({self.op.type}) mixes elements of "
                        f"a bound tensor with other bounds in one operand, which zmtf does not "
                        f"write; pass the bounds as one tensor, or a list of scalars")
                items.append(self._tensor(self.op.inputs[value[1] + 1], f"{suffix}/Cast_{i}"))
            else:
                items.append(self.exporter.const(self.op, f"{suffix}/{i}", np.asarray(
                    filler if value is None else value, self.dtype.np)))
        attrs = {"T": AttrValue(type=enum_of_dtype(self.dtype)), "N": AttrValue(i=len(items)),
                 "axis": AttrValue(i=0)}
        return self.exporter.add_node(self.op, suffix, "Pack", items, attrs)

    def _tensor(self, tensor: Tensor, suffix: str) -> str:
        if tensor.dtype == self.dtype:
            return _ref(tensor)
        attrs = {"SrcT": AttrValue(type=enum_of_dtype(tensor.dtype)),
                 "DstT": AttrValue(type=enum_of_dtype(self.dtype)), "Truncate": AttrValue(b=False)}
        return self.exporter.add_node(self.op, suffix, "Cast", [_ref(tensor)], attrs)


def _is_ref(value: Any) -> bool:
    return isinstance(value, list) and value[:1] == ["in"]


def _flatten(values: list[Any]) -> list[Any]:
    return [x for v in values for x in (_flatten(v) if isinstance(v, list) and not _is_ref(v) else [v])]


def _filled(values: list[Any], filler: int) -> list[Any]:
    """``values`` with ``filler`` for None (and for references: used for shapes only)."""
    return [_filled(v, filler) if isinstance(v, list) and not _is_ref(v) else
            filler if v is None or _is_ref(v) else v for v in values]


def _at(values: list[Any], position: tuple[int, ...]) -> Any:
    for i in position:
        values = values[i]
    return values


# ---- GraphDef -> zmtf ---------------------------------------------------------------------------
def import_graph_def(graph: Graph, graph_def: Any, input_map: dict[str, Any] | None,
                     return_elements: list[str] | None, prefix: str) -> list[Any] | None:
    """Add ``graph_def``'s nodes to ``graph`` with names ``prefix + name`` (see module doc)."""
    import zmtf.ops.all_ops  # noqa: F401  (fills OP_DEFS)


    if not isinstance(graph_def, GraphDef):
        raise TypeError("Argument `graph_def` must be a GraphDef proto.")
    if graph_def.library:
        raise ValueError("import_graph_def: the GraphDef has a function library; zmtf imports "
                         "graphs without functions (tf.function / defun) only")
    nodes = _check_nodes(graph_def)
    order = _dependency_order(nodes)
    mapped = _check_input_map(input_map, nodes, graph)
    requested = _check_return_elements(return_elements, nodes)
    # under a fresh scope the names are free; without one, TF renames clashes (a -> a_1)
    full_names = {name: prefix + name if prefix else graph.unique_name(name) for name in order}
    created: dict[str, Operation] = {}
    for name in order:
        created[name] = _import_node(graph, nodes[name], full_names[name], created, mapped)
    for name in order:
        op = created[name]
        for ref in nodes[name].input:
            if ref.startswith("^"):
                source = ref[1:]
                target = mapped.get("^" + source) or created[source]
                op._add_control_input(target)
    return _return_elements(requested, created) if return_elements is not None else None


def _check_nodes(graph_def: GraphDef) -> dict[str, NodeDef]:
    nodes: dict[str, NodeDef] = {}
    for node in graph_def.node:
        if not _NODE_NAME.match(node.name):
            raise ValueError(f"Node name '{node.name:.80}' is not valid")
        if node.name in nodes:
            raise ValueError(f"Node '{node.name}' is not unique")
        nodes[node.name] = node
    for node in graph_def.node:
        if node.op not in TF_OPS:
            raise NotFoundError(
                None, None,
                f"Op type not registered '{node.op}' (node '{node.name}'): zmtf's "
                f"import_graph_def reads these TensorFlow ops: {', '.join(sorted(TF_OPS))}")
        seen_control = False
        for ref in node.input:
            source, index = _split_ref(ref, node.name)
            if source not in nodes:
                raise ValueError(f"Node '{node.name}': Unknown input node '{ref}'")
            if ref.startswith("^"):
                seen_control = True
            elif seen_control:
                raise ValueError(f"Node '{node.name}': Control dependencies must come after "
                                 f"regular dependencies ({ref})")
    return nodes


def _split_ref(ref: str, node: str) -> tuple[str, int]:
    if ref.startswith("^"):
        return ref[1:], -1
    source, colon, index = ref.rpartition(":")
    if not colon:
        return ref, 0
    if not index.isdigit() or not index.isascii():
        raise ValueError(f"Node '{node}': input '{ref}' is not of the form 'name' or 'name:index'")
    return source, int(index)


def _dependency_order(nodes: dict[str, NodeDef]) -> list[str]:
    """Kahn's order over data and control edges, keeping the GraphDef's order where free."""
    waiting = {name: {_split_ref(r, name)[0] for r in node.input} for name, node in nodes.items()}
    users: dict[str, list[str]] = {name: [] for name in nodes}
    for name, sources in waiting.items():
        for source in sources:
            users[source].append(name)
    position = {name: i for i, name in enumerate(nodes)}
    ready = [position[name] for name in nodes if not waiting[name]]
    names = list(nodes)
    order: list[str] = []
    while ready:   # a heap on GraphDef position: an already sorted GraphDef keeps its order
        name = names[heapq.heappop(ready)]
        order.append(name)
        for user in users[name]:
            waiting[user].discard(name)
            if not waiting[user]:
                heapq.heappush(ready, position[user])
    if len(order) != len(nodes):
        raise ValueError(f"{len(nodes) - len(order)} nodes in a cycle")
    return order


def _check_input_map(input_map: dict[str, Any] | None, nodes: dict[str, NodeDef],
                     graph: Graph) -> dict[str, Any]:
    mapped: dict[str, Any] = {}
    missing = []
    for key, value in (input_map or {}).items():
        if not isinstance(key, str):
            raise TypeError(f"input_map keys must be tensor names (str), got {type(key).__name__}")
        if key.startswith("^"):
            if key[1:] not in nodes:
                missing.append(key)
            if not isinstance(value, Operation):
                raise TypeError(f"input_map['{key}'] must be an Operation")
            mapped[key] = value
            continue
        name = key if ":" in key else f"{key}:0"
        if _split_ref(name, "input_map")[0] not in nodes:
            missing.append(name)
            continue
        if not isinstance(value, Tensor):
            from zmtf.ops.constant_op import convert_to_tensor
            with graph.as_default():
                value = convert_to_tensor(value)
        if value.graph is not graph:
            raise ValueError(f"input_map['{key}'] is a tensor of another graph")
        mapped[name] = value
    if missing:
        raise ValueError(f"Attempted to map inputs that were not found in graph_def: "
                         f"[{', '.join(missing)}]")
    return mapped


def _check_return_elements(names: list[str] | None, nodes: dict[str, NodeDef]) -> list[str]:
    if names is None:
        return []
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError("return_elements must be a list of strings.")
    for name in names:
        if _split_ref(name, "return_elements")[0] not in nodes:
            kind = "tensor" if ":" in name else "operation"
            raise ValueError(f"Requested return {kind} '{name}' not found in graph def")
    return list(names)


def _return_elements(names: list[str], created: dict[str, Operation]) -> list[Any]:
    out: list[Any] = []
    for name in names:
        if ":" in name:
            source, index = _split_ref(name, "return_elements")
            op = created[source]
            if index >= len(op.outputs):
                raise ValueError(f"Requested return tensor '{name}' not found in graph def")
            out.append(op.outputs[_zmtf_index(op, index)])
        else:
            out.append(created[name])
    return out


def _zmtf_index(op: Operation, index: int) -> int:
    """zmtf's number of the GraphDef's output ``index`` of ``op`` (ParseExample orders them
    differently)."""
    return zmtf_output_index(op, index) if op.type == "ParseExample" else index


# ---- one node -------------------------------------------------------------------------------------
class _Node:
    """One NodeDef being imported: its mapping, resolved data inputs and operand values."""

    def __init__(self, node: NodeDef, full_name: str, created: dict[str, Operation],
                 mapped: dict[str, Any]) -> None:
        self.node, self.name = node, full_name
        self.mapping = TF_OPS[node.op]
        refs = [r for r in node.input if not r.startswith("^")]
        operand_count = len(self.mapping.operands)
        data_refs = refs[:len(refs) - operand_count] if operand_count else refs
        self.operand_refs = refs[len(data_refs):]
        if len(self.operand_refs) != operand_count or (
                not self.mapping.list_input and len(data_refs) != self.mapping.arity):
            expected = ("a list" if self.mapping.list_input else str(self.mapping.arity))
            raise ValueError(f"Node '{node.name}' ({node.op}): {len(refs)} inputs, expected "
                             f"{expected} plus {operand_count} operand(s)")
        self.inputs = [self._tensor(r, created, mapped) for r in data_refs]
        self.created, self.mapped = created, mapped

    def where(self) -> str:
        return f"node '{self.node.name}' ({self.node.op})"

    def _tensor(self, ref: str, created: dict[str, Operation], mapped: dict[str, Any]) -> Tensor:
        source, index = _split_ref(ref, self.node.name)
        key = f"{source}:{index}"
        if key in mapped:
            return mapped[key]
        op = created[source]
        if index < len(op.outputs):
            index = _zmtf_index(op, index)
        if index >= len(op.outputs):
            raise ValueError(f"Node '{self.node.name}': Connecting to invalid output {index} of "
                             f"source node {source} which has {len(op.outputs)} outputs.")
        return op.outputs[index]

    def operand(self, position: int) -> np.ndarray | Tensor:
        """The value of an operand input: it must come from a Const of the GraphDef, except
        a slice's or pad's bounds, which may be any int tensor (returned as the tensor)."""
        ref = self.operand_refs[position]
        source = _split_ref(ref, self.node.name)[0]
        op = self.created[source]
        if op.type != "Const" and self.mapping.operands[position][0] in _BOUND_OPERANDS:
            return self._tensor(ref, self.created, self.mapped)
        if op.type != "Const":
            tf_name = self.mapping.operands[position][0]
            raise ValueError(f"{self.where()}: zmtf needs its '{tf_name}' input to be a Const, "
                             f"but '{ref}' is a {op.type}; zmtf keeps it static")
        return op.attrs["value"]


def _import_node(graph: Graph, node: NodeDef, full: str, created: dict[str, Operation],
                 mapped: dict[str, Any]) -> Operation:
    prefix = full[:len(full) - len(node.name)]
    item = _Node(node, full, created, mapped)
    mapping = item.mapping
    known = set(mapping.attrs) | set(mapping.types) | ({"N"} if mapping.list_input else set())
    known |= _EXTRA_ATTRS.get(node.op, set())
    if mapping.extra is not None:
        known |= set(mapping.extra.tf_names)
    for key in node.attr:
        if key not in known and not key.startswith("_"):
            raise ValueError(f"{item.where()}: attr '{key}' is not one zmtf knows for {node.op} "
                             f"(it knows {sorted(known)}); refusing to import it rather than "
                             f"ignore what it means")
    attrs: dict[str, Any] = dict(mapping.private)
    for tf_name, (kind, zmtf_name, default) in mapping.attrs.items():
        where = f"{item.where()} attr '{tf_name}'"
        if tf_name not in node.attr:
            if default is None and kind != "shape":
                raise ValueError(f"{item.where()}: missing attr '{tf_name}'")
            value = default
        else:
            value = _from_attr(kind, node.attr[tf_name], where)
        if zmtf_name is None:
            if value != default:
                raise ValueError(f"{item.where()}: zmtf supports only {tf_name}={default!r}, "
                                 f"got {value!r}")
        else:
            attrs[zmtf_name] = value
    _check_types(item)
    if mapping.extra is not None:
        try:
            attrs.update(mapping.extra.read(node, item.inputs))
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{item.where()}: {exc}") from None
    elif mapping.list_input and "N" in node.attr and node.attr["N"].i != len(item.inputs):
        raise ValueError(f"{item.where()}: N={node.attr['N'].i} but {len(item.inputs)} inputs")
    try:
        for position, (_, _, from_const, _) in enumerate(mapping.operands):
            if from_const is not None:
                value = item.operand(position)
                if isinstance(value, Tensor):
                    _bound_refs(item, position, attrs)
                else:
                    from_const(value, attrs)
        specs = _SPECIAL_IMPORT.get(node.op, _default_specs)(item, attrs)
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"{item.where()}: {exc}") from None
    op = graph.create_op(mapping.zmtf_op, item.inputs, specs, name=full + "/", attrs=attrs)
    mark_name_used(graph, full)
    try:
        op._device = pydev.canonical_name(node.device) if node.device else ""
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{item.where()}: bad device {node.device!r:.80}: {exc}") from None
    groups = [g.decode("utf-8", "replace") for g in node.attr["_class"].list.s] \
        if "_class" in node.attr else []
    op._colocation_groups = [prefix_group(g, prefix) for g in groups]
    return op


def prefix_group(group: str, prefix: str) -> str:
    return f"loc:@{prefix}{group[5:]}" if group.startswith("loc:@") else group


_EXTRA_ATTRS = {"Const": {"value"}, "ParseExample": PARSE_EXAMPLE_ATTRS}


def _check_types(item: _Node) -> None:
    for tf_name, source in item.mapping.types.items():
        if tf_name not in item.node.attr:
            continue
        where = f"{item.where()} attr '{tf_name}'"
        declared = dtype_of_enum(item.node.attr[tf_name].type, where)
        if source == "idx":
            if declared.name not in ("int32", "int64"):
                raise ValueError(f"{where} must be int32 or int64, got {declared.name}")
            continue
        position = int(source[2:])
        if position >= len(item.inputs):
            continue
        tensor = item.inputs[position]
        if tensor.dtype.base_dtype != declared:
            raise ValueError(f"Input {position} of node {item.name} was passed "
                             f"{tf_dtype_name(tensor.dtype)} from {tensor.name} incompatible "
                             f"with expected {tf_dtype_name(declared)}.")


def _default_specs(item: _Node, attrs: dict[str, Any]) -> list:
    return OP_DEFS[item.mapping.zmtf_op].outputs(item.inputs, attrs)


def _const_specs(item: _Node, attrs: dict[str, Any]) -> list:
    value = item.node.attr["value"]
    if value.WhichOneof("value") != "tensor":
        raise ValueError("attr 'value' must hold a tensor")
    array = make_ndarray(value.tensor, f"{item.where()} attr 'value'")
    dtype = as_dtype(attrs["dtype"])
    if (as_dtype("string") if array.dtype == object else as_dtype(array.dtype)) != dtype:
        raise ValueError(f"its dtype attr is {dtype.name} but its value is "
                         f"{tf_dtype_name(dtype_of_enum(value.tensor.dtype, 'value'))}")
    array.flags.writeable = False
    attrs["value"] = array
    return [(dtype, TensorShape(list(array.shape)))]


def _variable_specs(item: _Node, attrs: dict[str, Any]) -> list:
    shared = item.node.attr["shared_name"].s.decode() if "shared_name" in item.node.attr else ""
    attrs["var_name"] = shared or item.name
    return [(as_dtype(attrs["dtype"]), TensorShape(attrs["shape"]))]


def _assign_specs(item: _Node, attrs: dict[str, Any]) -> list:
    attrs["shape"] = item.inputs[0].shape.dims
    return _default_specs(item, attrs)


_BOUND_OPERANDS = ("begin", "end", "strides", "size", "paddings")


def _bound_refs(item: _Node, position: int, attrs: dict[str, Any]) -> list[Any]:
    """A bound operand that is a tensor: it becomes an input of the op, and the attr its
    elements ``["in", k, i(, j)]``, one per dimension of the sliced or padded input."""
    tf_name, _, _, zmtf_attr = item.mapping.operands[position]
    tensor = item.operand(position)
    pairs = tf_name == "paddings"
    if not tensor.dtype.is_integer or (tensor.shape.ndims not in (None, 1 + pairs)):
        raise ValueError(f"'{tf_name}' must be an int {'matrix' if pairs else 'vector'}, got "
                         f"{tensor.dtype.name} {tensor.shape} ({tensor.name})")
    counts = [tensor.shape.as_list()[0] if tensor.shape.ndims else None, item.inputs[0].shape.ndims]
    if item.node.op == "StridedSlice":   # the length of another bound, as TF needs them equal
        counts += [np.asarray(item.operand(i)).size for i in range(3)
                   if not isinstance(item.operand(i), Tensor)]
    count = next((c for c in counts if c is not None), None)
    if count is None:
        raise ValueError(f"the length of '{tf_name}' ({tensor.name}) must be known")
    item.inputs.append(tensor)
    k = len(item.inputs) - 2
    refs = [[["in", k, i, 0], ["in", k, i, 1]] if pairs else ["in", k, i] for i in range(count)]
    attrs[zmtf_attr] = refs
    if pairs:
        attrs.setdefault("mode", "CONSTANT")
        attrs.setdefault("constant_values", 0.0)
    return refs


def _strided_slice_specs(item: _Node, attrs: dict[str, Any]) -> list:
    rows = [_bound_refs(item, i, {}) if isinstance(item.operand(i), Tensor) else
            [int(v) for v in np.asarray(item.operand(i)).ravel()] for i in range(3)]
    masks = {k: attrs.pop(k) for k in ("begin_mask", "end_mask", "ellipsis_mask",
                                       "new_axis_mask", "shrink_axis_mask")}
    attrs["spec"] = strided_slice_to_spec(*rows, masks)
    return _default_specs(item, attrs)


def _one_hot_specs(item: _Node, attrs: dict[str, Any]) -> list:
    attrs["on_value"] = np.asarray(item.operand(1)).item()
    attrs["off_value"] = np.asarray(item.operand(2)).item()
    return _default_specs(item, attrs)


def _placeholder_with_default_specs(item: _Node, attrs: dict[str, Any]) -> list:
    dtype = dtype_of_enum(item.node.attr["dtype"].type, item.where())
    if item.inputs[0].dtype != dtype:
        raise ValueError(f"default is {item.inputs[0].dtype.name}, dtype attr is {dtype.name}")
    dims = _from_attr("shape", item.node.attr["shape"], item.where())
    return [(dtype, TensorShape(dims))]


def _parse_example_specs(item: _Node, attrs: dict[str, Any]) -> list:
    item.inputs = import_parse_example(item.name, item.node, item.inputs, attrs)
    return _default_specs(item, attrs)


_SPECIAL_IMPORT = {"Const": _const_specs, "ParseExample": _parse_example_specs, "VariableV2": _variable_specs, "Assign": _assign_specs,
                   "StridedSlice": _strided_slice_specs, "OneHot": _one_hot_specs,
                   "PlaceholderWithDefault": _placeholder_with_default_specs}

__all__ = ["graph_to_graph_def", "import_graph_def", "tf_dtype_name", "writable_ops"]

# Graph.as_graph_def (framework/) exports with this; it may not import this module
upper_layers.register("graph_to_graph_def", graph_to_graph_def)

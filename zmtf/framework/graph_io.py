"""Graph <-> plain versioned dicts: what CreateSession, ExtendSession and RegisterGraph carry.

``graph_to_dict(graph)`` returns ``(dict, arrays)``: the dict holds only msgpack-able data
and the numpy arrays of the attributes (Const values) travel apart, as tensor frames::

    {"version": 1, "nodes": [
        {"name": "w", "op": "Variable", "inputs": [], "control_inputs": [],
         "device": "/job:ps/task:0", "colocation": [], "attrs": {...},
         "outputs": [["float32", [3, None]]]},   # a shape is a list of dims or None
        ...]}

Nodes come in creation order, so every data input names an earlier node; control inputs
may name any node (``_add_control_input`` can point forward).

Attribute values, and how each one travels (the rule is exact: values come back equal
and of the same type):

* None, bool, int, float, str, lists of values, str-keyed dicts of values: as themselves.
* tuples: ``{"__tuple__": [...]}`` (reductions keep ``axis`` as a tuple, and plans may
  hash attrs, so a tuple must not come back as a list).
* numpy arrays: ``{"__array__": i}``, ``arrays[i]`` is the array; it comes back read-only.
  String values (tf.string Consts) are object arrays of bytes; numpy's S/U arrays are refused.
* numpy scalars: ``{"__scalar__": i}``, ``arrays[i]`` is a 0-d array of that dtype.

A dict with exactly one key starting with ``__`` is one of these markers; any other
``__``-prefixed key is refused on both sides.

``graph_from_dict`` is the decoder for data from the network: it checks everything
(names, op types against ``OP_DEFS``, inputs, dtypes, shapes, devices, attribute
markers) before it creates a single node, and raises InvalidArgumentError naming the node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from zmtf.framework import device_spec as pydev
from zmtf.framework.dtypes import DType, as_dtype
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.gc_pause import gc_paused
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.op_def import OP_DEFS
from zmtf.framework.tensor_shape import TensorShape
from zmtf.framework import upper_layers

GRAPH_VERSION = 1
NODE_KEYS = frozenset({"name", "op", "inputs", "control_inputs", "device", "colocation", "attrs",
                       "outputs"})
MAX_OUTPUTS = 1024
MAX_RANK = 32
MAX_ATTR_DEPTH = 32   # lists/dicts/tuples nested in one attr value (Python's stack is finite)
_MARKERS = ("__array__", "__scalar__", "__tuple__")
_INT_RANGE = (-(2**63), 2**64)  # what msgpack can carry
#: Graph's own rule, plus a leading "_" and ":" for the names the partitioner makes
#: ("_recv/a_0/from_job:ps_replica:0_task:0"); an input "name:i" splits at the last ":".
_NODE_NAME = re.compile(r"[A-Za-z0-9._][A-Za-z0-9_.\-/>:]{0,1023}\Z")


# ---- Graph -> dict ------------------------------------------------------------------------
def graph_to_dict(graph: Graph, ops: Sequence[Operation] | None = None,
                  ) -> tuple[dict[str, Any], list[np.ndarray]]:
    """The graph (or the given ops of it, in creation order) as (plain dict, attribute arrays).

    References to ops outside ``ops`` are written by name; ``graph_from_dict`` resolves them
    in the graph it extends, or refuses them.
    """
    with gc_paused():   # the dict's entries all live on: no heap rescans while they come
        return _graph_to_dict(graph, ops)


def _graph_to_dict(graph: Graph, ops: Sequence[Operation] | None,
                   ) -> tuple[dict[str, Any], list[np.ndarray]]:
    selected = graph.get_operations() if ops is None else sorted(ops, key=lambda op: op.creation_index)
    arrays: list[np.ndarray] = []
    nodes = []
    for op in selected:
        if op.graph is not graph:
            raise InvalidArgumentError(f"op '{op.name}' is not in the graph being serialized")
        _check_keys(op.attrs, op.name, "attrs")
        nodes.append({
            "name": op.name,
            "op": op.type,
            "inputs": [t.name for t in op.inputs],
            "control_inputs": [c.name for c in op.control_inputs],
            "device": op.device,
            "colocation": list(op._colocation_groups),
            "attrs": {key: _attr_to_plain(value, arrays, op.name, key)
                      for key, value in op.attrs.items()},
            "outputs": [[t.dtype.name, t.shape.dims] for t in op.outputs],
        })
    return {"version": GRAPH_VERSION, "nodes": nodes}, arrays


def _attr_to_plain(value: Any, arrays: list[np.ndarray], node: str, key: str) -> Any:
    if isinstance(value, np.generic):  # first: np.float64 is also a float
        _check_array_dtype(np.asarray(value), node, key)
        arrays.append(np.asarray(value))
        return {"__scalar__": len(arrays) - 1}
    if isinstance(value, np.ndarray):
        _check_array_dtype(value, node, key)
        arrays.append(value)
        return {"__array__": len(arrays) - 1}
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        if not _INT_RANGE[0] <= value < _INT_RANGE[1]:
            raise InvalidArgumentError(
                f"node '{node}': attr '{key}' int {value} does not fit in 64 bits"
            )
        return int(value)
    if isinstance(value, list):
        return [_attr_to_plain(v, arrays, node, key) for v in value]
    if isinstance(value, tuple):
        return {"__tuple__": [_attr_to_plain(v, arrays, node, key) for v in value]}
    if isinstance(value, dict):
        _check_keys(value, node, f"attr '{key}'")
        return {k: _attr_to_plain(v, arrays, node, key) for k, v in value.items()}
    raise InvalidArgumentError(
        f"node '{node}': attr '{key}' is a {type(value).__name__}, which cannot be serialized; "
        f"attrs hold None/bool/int/float/str, lists, tuples, dicts and numpy arrays"
    )


def _check_keys(mapping: dict[Any, Any], node: str, where: str) -> None:
    for k in mapping:
        if not isinstance(k, str) or k.startswith("__"):
            raise InvalidArgumentError(
                f"node '{node}': {where} has key {k!r:.80}; keys must be str not starting "
                f"with '__' (reserved for markers)"
            )


def _check_array_dtype(array: np.ndarray, node: str, key: str) -> DType:
    if array.dtype.kind in "SU":
        raise InvalidArgumentError(
            f"node '{node}': attr '{key}' is a numpy {array.dtype} array; string values travel "
            f"as object arrays of bytes (zmtf.framework.dtypes.to_string_array)")
    try:
        return as_dtype(array.dtype)
    except TypeError as exc:
        raise InvalidArgumentError(f"node '{node}': attr '{key}': {exc}") from None


# ---- dict -> Graph ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Node:
    """One node of the dict, checked and resolved, ready to be created."""

    name: str
    op_type: str
    inputs: list[tuple[str, int]]
    control_inputs: list[str]
    device: str
    colocation: list[str]
    attrs: dict[str, Any]
    outputs: list[tuple[DType, TensorShape]]


def graph_from_dict(graph_dict: Any, arrays: Sequence[np.ndarray],
                    into: Graph | None = None) -> Graph:
    """Rebuild a graph from ``graph_to_dict`` output; with ``into``, add the nodes to that graph.

    Everything is checked before any node is created, so a bad dict leaves ``into`` untouched.
    """
    upper_layers.lookup("load_all_op_defs")()  # a graph from elsewhere may use any op

    graph = into if into is not None else Graph()
    if graph.finalized:
        raise InvalidArgumentError("cannot add nodes to a finalized graph")
    with gc_paused():   # a big graph's nodes all live on: no heap rescans while they come
        _build(graph, _parse(graph_dict, arrays, graph))
    return graph


def _parse(graph_dict: Any, arrays: Sequence[np.ndarray], graph: Graph) -> list[_Node]:
    if not isinstance(graph_dict, dict) or set(graph_dict) != {"version", "nodes"}:
        raise InvalidArgumentError(
            "a graph must be a map with exactly the keys 'version' and 'nodes'"
        )
    if graph_dict["version"] != GRAPH_VERSION or type(graph_dict["version"]) is not int:
        raise InvalidArgumentError(
            f"graph version {graph_dict['version']!r:.40} is not supported; this zmtf reads "
            f"version {GRAPH_VERSION}"
        )
    if not isinstance(graph_dict["nodes"], list):
        raise InvalidArgumentError("a graph's 'nodes' must be a list")
    for i, array in enumerate(arrays):
        if not isinstance(array, np.ndarray):
            raise InvalidArgumentError(
                f"graph array {i} is a {type(array).__name__}, not a numpy array"
            )
    outputs_of: dict[str, int] = {}  # node name -> output count, for the nodes seen so far
    used: set[int] = set()
    nodes = []
    for position, entry in enumerate(graph_dict["nodes"]):
        node = _parse_node(position, entry, arrays, used, outputs_of, graph)
        outputs_of[node.name] = len(node.outputs)
        nodes.append(node)
    for node in nodes:
        for ctrl in node.control_inputs:
            if ctrl not in outputs_of and ctrl not in graph._ops_by_name:
                raise InvalidArgumentError(
                    f"node '{node.name}': control input '{ctrl}' names no node"
                )
    unused = sorted(set(range(len(arrays))) - used)
    if unused:
        raise InvalidArgumentError(f"graph arrays {unused} are not referenced by any node")
    return nodes


def _parse_node(position: int, entry: Any, arrays: Sequence[np.ndarray], used: set[int],
                outputs_of: dict[str, int], graph: Graph) -> _Node:
    if not isinstance(entry, dict) or set(entry) != NODE_KEYS:
        raise InvalidArgumentError(
            f"graph node {position} must be a map with exactly the keys {sorted(NODE_KEYS)}"
        )
    name = entry["name"]
    if not isinstance(name, str) or not _NODE_NAME.match(name):
        raise InvalidArgumentError(f"graph node {position}: {name!r:.80} is not a valid node name")
    if name in outputs_of or name in graph._ops_by_name:
        raise InvalidArgumentError(f"node '{name}' is defined twice")
    op_type = entry["op"]
    if not isinstance(op_type, str) or op_type not in OP_DEFS:
        raise InvalidArgumentError(f"node '{name}': unknown op type {op_type!r:.80}")
    inputs = [_parse_input(name, ref, outputs_of, graph)
              for ref in _str_list(entry, "inputs", name)]
    control = _str_list(entry, "control_inputs", name)
    colocation = _str_list(entry, "colocation", name)
    device = entry["device"]
    if not isinstance(device, str):
        raise InvalidArgumentError(f"node '{name}': device must be a str")
    try:
        device = pydev.canonical_name(device) if device else ""
    except (ValueError, TypeError) as exc:
        raise InvalidArgumentError(f"node '{name}': bad device {device!r:.80}: {exc}") from None
    if not isinstance(entry["attrs"], dict):
        raise InvalidArgumentError(f"node '{name}': attrs must be a map")
    attrs = {}
    for key, value in entry["attrs"].items():
        if not isinstance(key, str) or key.startswith("__"):
            raise InvalidArgumentError(f"node '{name}': bad attr name {key!r:.80}")
        attrs[key] = _attr_from_plain(value, arrays, used, name, key)
    outputs = _parse_outputs(name, entry["outputs"])
    if op_type == "Const":
        _check_const(name, attrs, outputs)
    return _Node(name, op_type, inputs, control, device, colocation, attrs, outputs)


def _str_list(entry: dict[str, Any], key: str, name: str) -> list[str]:
    value = entry[key]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArgumentError(f"node '{name}': {key} must be a list of str")
    return value


def _parse_input(name: str, ref: str, outputs_of: dict[str, int], graph: Graph) -> tuple[str, int]:
    source, _, index = ref.rpartition(":")
    if not source or not index.isdigit() or not index.isascii():
        raise InvalidArgumentError(
            f"node '{name}': input {ref!r:.80} is not of the form 'node:index'"
        )
    count = outputs_of.get(source)
    if count is None and source in graph._ops_by_name:
        count = len(graph._ops_by_name[source].outputs)
    if count is None:
        raise InvalidArgumentError(
            f"node '{name}': input '{ref}' names no earlier node (nodes must come in "
            f"creation order)"
        )
    if int(index) >= count:
        raise InvalidArgumentError(
            f"node '{name}': input '{ref}': '{source}' has only {count} outputs"
        )
    return source, int(index)


def _parse_outputs(name: str, outputs: Any) -> list[tuple[DType, TensorShape]]:
    if not isinstance(outputs, list) or len(outputs) > MAX_OUTPUTS:
        raise InvalidArgumentError(f"node '{name}': outputs must be a list of [dtype, shape]")
    specs = []
    for i, spec in enumerate(outputs):
        if not isinstance(spec, list) or len(spec) != 2 or not isinstance(spec[0], str):
            raise InvalidArgumentError(f"node '{name}': output {i} must be [dtype name, shape]")
        try:
            dtype = as_dtype(spec[0])
        except TypeError:
            raise InvalidArgumentError(
                f"node '{name}': output {i} has unknown dtype {spec[0]!r:.40}"
            ) from None
        dims = spec[1]
        if dims is not None and (not isinstance(dims, list) or len(dims) > MAX_RANK or not all(
                d is None or (type(d) is int and 0 <= d < 2**63) for d in dims)):
            raise InvalidArgumentError(
                f"node '{name}': output {i} shape must be None or a list of at most {MAX_RANK} "
                f"non-negative ints or None"
            )
        specs.append((dtype, TensorShape(dims)))
    return specs


def _attr_from_plain(value: Any, arrays: Sequence[np.ndarray], used: set[int], node: str,
                     key: str, depth: int = 0) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if depth >= MAX_ATTR_DEPTH:
        raise InvalidArgumentError(
            f"node '{node}': attr '{key}' nests lists/maps deeper than {MAX_ATTR_DEPTH} levels"
        )
    depth += 1
    if isinstance(value, list):
        return [_attr_from_plain(v, arrays, used, node, key, depth) for v in value]
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"node '{node}': attr '{key}' holds a {type(value).__name__}")
    marked = [k for k in value if not isinstance(k, str) or k.startswith("__")]
    if not marked:
        return {k: _attr_from_plain(v, arrays, used, node, key, depth) for k, v in value.items()}
    marker = marked[0]
    if len(value) != 1 or marker not in _MARKERS:
        raise InvalidArgumentError(
            f"node '{node}': attr '{key}' has a bad marker map {list(value)!r:.80}"
        )
    if marker == "__tuple__":
        if not isinstance(value[marker], list):
            raise InvalidArgumentError(f"node '{node}': attr '{key}': __tuple__ must hold a list")
        return tuple(_attr_from_plain(v, arrays, used, node, key, depth) for v in value[marker])
    index = value[marker]
    if type(index) is not int or not 0 <= index < len(arrays):
        raise InvalidArgumentError(
            f"node '{node}': attr '{key}' refers to array {index!r:.40}, but {len(arrays)} "
            f"arrays came with the graph"
        )
    used.add(index)
    array = arrays[index]
    _check_array_dtype(array, node, key)
    if marker == "__scalar__":
        if array.ndim != 0:
            raise InvalidArgumentError(f"node '{node}': attr '{key}': a scalar must be a 0-d array")
        return array[()]
    readonly = array.view()
    readonly.flags.writeable = False
    return readonly


def _check_const(name: str, attrs: dict[str, Any],
                 outputs: list[tuple[DType, TensorShape]]) -> None:
    value = attrs.get("value")
    if not isinstance(value, np.ndarray):
        raise InvalidArgumentError(f"node '{name}' (Const): attr 'value' must be an array")
    expected = [(as_dtype(value.dtype), TensorShape(value.shape))]
    if outputs != expected:
        raise InvalidArgumentError(
            f"node '{name}' (Const): output {[(d.name, s.dims) for d, s in outputs]} does not "
            f"match its value ({value.dtype.name}{list(value.shape)})"
        )


def _build(graph: Graph, nodes: list[_Node]) -> None:
    """Create the checked nodes with their exact names, devices, colocation and control inputs."""
    created: dict[str, Operation] = {}

    def tensor(source: str, index: int) -> Tensor:
        op = created.get(source) or graph._ops_by_name[source]
        return op.outputs[index]

    for node in nodes:
        op = graph.create_op(node.op_type, [tensor(s, i) for s, i in node.inputs], node.outputs,
                             name=node.name + "/", attrs=node.attrs)  # "/": the name as-is
        op._device = node.device
        op._colocation_groups = list(node.colocation)
        created[node.name] = op
        mark_name_used(graph, node.name)
    for node in nodes:
        op = created[node.name]
        op._control_inputs = []
        op._add_control_inputs([created.get(c) or graph._ops_by_name[c]
                                for c in node.control_inputs])


def mark_name_used(graph: Graph, name: str) -> None:
    """Reserve the name and its scopes, so ops added later get fresh names (a_1, scope_1/...)."""
    parts = name.split("/")
    for depth in range(1, len(parts) + 1):
        key = "/".join(parts[:depth]).lower()
        graph._names_in_use[key] = max(graph._names_in_use.get(key, 0), 1)


__all__ = ["GRAPH_VERSION", "graph_from_dict", "graph_to_dict"]

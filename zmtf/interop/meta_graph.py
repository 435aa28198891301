"""Meta graphs in zmtf's own format: a graph, its collections and a Saver, as one JSON document.

TF1 writes a ``MetaGraphDef`` protobuf; zmtf has no protobuf, so ``tf.train.export_meta_graph``
and the ``.meta`` file ``Saver.save`` writes hold this document instead (UTF-8 JSON)::

    {"format": "zmtf.MetaGraph", "version": 1,
     "meta_info": {"producer": "zmtf"},
     "graph": {...},            # graph_io.graph_to_dict(graph): nodes in creation order
     "arrays": [{"dtype": "float32", "shape": [2, 3], "data": "<base64>"}, ...],
     "variables": [{"name": "w", "initializer": "w/Assign", "snapshot": "w/read:0",
                    "initial_value": "w/initial_value:0", "trainable": true}, ...],
     "collections": {"train_op": [{"operation": "GradientDescent"}],
                     "losses": [{"tensor": "loss:0"}], "variables": [{"variable": "w"}],
                     "my_strings": [{"value": "a"}], "my_bytes": [{"bytes": "<base64>"}]},
     "saver_def": null or {...}}   # what Saver(saver_def=...) rebuilds from (training/saver.py)

``arrays[i]`` is the value behind the graph's ``{"__array__": i}`` / ``{"__scalar__": i}``
markers: raw little-endian C-order bytes of an allowlisted dtype, so nothing is ever
unpickled or evaluated. Collection items are the graph's own objects, named, or objects a
registered ``ItemCodec`` writes by the names of their ops (a QueueRunner:
``{"queue_runner": {"queue_name": ..., "enqueue_op_name": [...], ...}}``, QueueRunnerDef's
fields); a collection holding anything else (a Python callable) is left out with a logged
warning, as TF leaves out collections it cannot serialize. The SAVERS collection is not
written: the Saver travels as ``saver_def``.

``meta_graph_from_dict`` treats the document as hostile input: it checks the format and
version, every array, the graph (graph_io), and every name the variables, collections and
saver_def use, in a scratch graph, before it adds anything to the target graph. Anything
wrong is an InvalidArgumentError that names the part at fault.
"""

from __future__ import annotations

import base64
import binascii
import logging
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from zmtf.framework.dtypes import ALL_DTYPES
from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Graph, GraphKeys, Operation, Tensor
from zmtf.framework.graph_io import MAX_RANK, graph_from_dict, graph_to_dict
from zmtf.ops.variables import Variable

META_GRAPH_FORMAT = "zmtf.MetaGraph"
META_GRAPH_VERSION = 1
TOP_KEYS = frozenset({"format", "version", "meta_info", "graph", "arrays", "variables",
                      "collections", "saver_def"})
VARIABLE_KEYS = frozenset({"name", "initializer", "snapshot", "initial_value", "trainable"})
_ARRAY_DTYPES = {d.name: d for d in ALL_DTYPES}
_ITEM_KINDS = ("variable", "operation", "tensor", "value", "bytes")
_logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ItemCodec:
    """How a collection item that is not a graph element travels (TF's
    ``register_proto_function``): ``{kind: to_plain(item)}`` in the document, and back with
    ``from_plain(graph, plain, where, rename)``, which checks ``plain`` as hostile input
    (InvalidArgumentError naming ``where``) and prefixes its names with ``rename``."""

    kind: str
    accepts: Callable[[Any], bool]
    to_plain: Callable[[Any], Any]
    from_plain: Callable[[Graph, Any, str, Callable[[Any], Any]], Any]


#: kind -> codec; the package that owns the class registers it when imported (training's
#: queue_runner.py: "queue_runner"), as interop may not import it
ITEM_CODECS: dict[str, ItemCodec] = {}


def register_item_codec(codec: ItemCodec) -> None:
    if codec.kind in _ITEM_KINDS:
        raise ValueError(f"{codec.kind!r} is a built-in collection item kind")
    ITEM_CODECS[codec.kind] = codec


# ---- Graph -> document ------------------------------------------------------------------------
def meta_graph_to_dict(graph: Graph, collection_list: Any = None, clear_devices: bool = False,
                       saver_def: dict[str, Any] | None = None) -> dict[str, Any]:
    """The meta graph document of ``graph`` (see the module docstring); JSON-ready."""
    graph_dict, arrays = graph_to_dict(graph)
    if clear_devices:
        for node in graph_dict["nodes"]:
            node["device"] = ""
    keys = graph.get_all_collection_keys() if collection_list is None else list(collection_list)
    return {
        "format": META_GRAPH_FORMAT, "version": META_GRAPH_VERSION,
        "meta_info": {"producer": "zmtf"},
        "graph": graph_dict,
        "arrays": [_array_to_plain(a) for a in arrays],
        "variables": [_variable_to_plain(v) for v in _all_variables(graph)],
        "collections": _collections_to_plain(graph, keys),
        "saver_def": saver_def,
    }


def _array_to_plain(array: np.ndarray) -> dict[str, Any]:
    if array.dtype == object:   # tf.string: one base64 string per element, in C order
        if not all(isinstance(v, bytes) for v in array.ravel()):
            raise InvalidArgumentError("export_meta_graph: a string array must hold bytes")
        return {"dtype": "string", "shape": list(array.shape),
                "data": [base64.b64encode(v).decode("ascii") for v in array.ravel()]}
    little = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    return {"dtype": array.dtype.name, "shape": list(array.shape),
            "data": base64.b64encode(little.tobytes()).decode("ascii")}


def _all_variables(graph: Graph) -> list[Variable]:
    """Every Variable in any collection, once (the saver's and collections' items refer to them)."""
    seen: dict[str, Variable] = {}
    for key in graph.get_all_collection_keys():
        for item in graph.get_collection(key):
            if isinstance(item, Variable) and item.graph is graph:
                seen.setdefault(item.op.name, item)
    return list(seen.values())


def _variable_to_plain(variable: Variable) -> dict[str, Any]:
    return {"name": variable.op.name, "initializer": variable.initializer.name,
            "snapshot": variable.value().name, "initial_value": variable.initial_value.name,
            "trainable": bool(variable.trainable)}


def _collections_to_plain(graph: Graph, keys: list[Any]) -> dict[str, list[dict[str, Any]]]:
    collections = {}
    for key in keys:
        if key == GraphKeys.SAVERS:   # the Saver travels as the document's saver_def
            continue
        if not isinstance(key, str):
            _logger.warning("Only collections with string type keys will be serialized. "
                            "This key has %s", type(key).__name__)
            continue
        try:
            collections[key] = [_item_to_plain(graph, item) for item in graph.get_collection(key)]
        except TypeError as error:
            _logger.warning("Issue encountered when serializing: %s.\n%s", key, error)
    return collections


def _item_to_plain(graph: Graph, item: Any) -> dict[str, Any]:
    for kind, cls in (("variable", Variable), ("operation", Operation), ("tensor", Tensor)):
        if isinstance(item, cls):
            if item.graph is not graph:
                raise TypeError(f"{item!r} belongs to another graph")
            return {kind: item.op.name if kind == "variable" else item.name}
    if isinstance(item, bool) or isinstance(item, (str, float)):
        return {"value": item}
    if isinstance(item, int) and -(2**63) <= item < 2**64:
        return {"value": int(item)}
    if isinstance(item, bytes):
        return {"bytes": base64.b64encode(item).decode("ascii")}
    for codec in ITEM_CODECS.values():
        if codec.accepts(item):
            return {codec.kind: codec.to_plain(item)}
    raise TypeError(f"a {type(item).__name__} cannot be serialized into a zmtf meta graph; "
                    f"collections can hold variables, operations, tensors, str, bytes, int, "
                    f"float and bool")


# ---- document -> Graph ------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ImportedMetaGraph:
    """What ``meta_graph_from_dict`` added: the variables by (scoped) op name, the saver_def."""

    variables: dict[str, Variable]
    saver_def: dict[str, Any] | None


def meta_graph_from_dict(meta: Any, graph: Graph, clear_devices: bool = False,
                         import_scope: str | None = None,
                         check_saver_def: Callable[[Any], dict[str, Any]] = dict,
                         ) -> ImportedMetaGraph:
    """Add the document's nodes, variables and collections to ``graph``, all checked first.

    ``import_scope`` prefixes every name ("scope/w"), the names attrs hold included
    (a Variable's store key, a cond predicate); ``shared_name`` attrs are kept, as in TF.
    ``check_saver_def`` (the Saver's own check, passed down) vets the saver_def's fields.
    """
    _check_top(meta)
    arrays = [_array_from_plain(i, entry) for i, entry in enumerate(_list(meta, "arrays"))]
    rename = _renamer(import_scope)
    graph_dict = _scoped_graph_dict(meta["graph"], rename, clear_devices)
    variables, collections = _list(meta, "variables"), meta["collections"]
    saver_def = meta["saver_def"]
    if saver_def is not None:
        saver_def = _scoped_saver_def(check_saver_def(saver_def), rename)
    try:
        scratch = graph_from_dict(graph_dict, arrays)  # every check, no change to ``graph``
        _resolve(scratch, variables, collections, saver_def, rename)
        for node in graph_dict["nodes"]:
            if node["name"] in graph._ops_by_name:
                raise InvalidArgumentError(
                    f"node '{node['name']}' is already in the graph; import into a fresh "
                    f"graph (tf.reset_default_graph()) or pass import_scope='some_scope'")
        graph_from_dict(graph_dict, arrays, into=graph)
        imported = _resolve(graph, variables, collections, saver_def, rename)
    except RecursionError:
        raise InvalidArgumentError("meta graph is nested too deeply") from None
    return ImportedMetaGraph(imported, saver_def)


def _check_top(meta: Any) -> None:
    if not isinstance(meta, dict) or meta.get("format") != META_GRAPH_FORMAT:
        raise InvalidArgumentError(f"not a zmtf meta graph: expected a map with "
                                   f"format '{META_GRAPH_FORMAT}'")
    if type(meta.get("version")) is not int or meta["version"] != META_GRAPH_VERSION:
        raise InvalidArgumentError(f"meta graph version {meta.get('version')!r:.40} is not "
                                   f"supported; this zmtf reads version {META_GRAPH_VERSION}")
    if set(meta) != TOP_KEYS:
        raise InvalidArgumentError(f"a meta graph must have exactly the keys {sorted(TOP_KEYS)}; "
                                   f"this one has {sorted(map(str, meta))!r:.200}")
    if not isinstance(meta["collections"], dict):
        raise InvalidArgumentError("meta graph 'collections' must be a map")
    if meta["saver_def"] is not None and not isinstance(meta["saver_def"], dict):
        raise InvalidArgumentError("meta graph 'saver_def' must be a map or null")


def _list(meta: dict[str, Any], key: str) -> list[Any]:
    if not isinstance(meta[key], list):
        raise InvalidArgumentError(f"meta graph '{key}' must be a list")
    return meta[key]


def _array_from_plain(i: int, entry: Any) -> np.ndarray:
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data"}:
        raise InvalidArgumentError(f"meta graph array {i} must be a map of dtype, shape, data")
    dtype, shape, data = entry["dtype"], entry["shape"], entry["data"]
    if dtype == "string":
        return _strings_from_plain(i, shape, data)
    if not isinstance(dtype, str) or dtype not in _ARRAY_DTYPES:
        raise InvalidArgumentError(f"meta graph array {i}: dtype {dtype!r:.40} is not one of "
                                   f"{sorted(_ARRAY_DTYPES)}")
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(
            type(d) is int and d >= 0 for d in shape):
        raise InvalidArgumentError(f"meta graph array {i}: shape must be a list of at most "
                                   f"{MAX_RANK} non-negative ints")
    try:
        raw = base64.b64decode(data, validate=True) if isinstance(data, str) else None
    except (binascii.Error, ValueError):
        raw = None
    if raw is None:
        raise InvalidArgumentError(f"meta graph array {i}: data must be a base64 string")
    little = np.dtype(dtype).newbyteorder("<")
    if math.prod(shape) * little.itemsize != len(raw):
        raise InvalidArgumentError(f"meta graph array {i} ({dtype}{shape}) needs "
                                   f"{math.prod(shape) * little.itemsize} bytes, has {len(raw)}")
    return np.frombuffer(raw, dtype=little).reshape(shape).astype(np.dtype(dtype))


def _strings_from_plain(i: int, shape: Any, data: Any) -> np.ndarray:
    if not isinstance(shape, list) or len(shape) > MAX_RANK or not all(
            type(d) is int and d >= 0 for d in shape):
        raise InvalidArgumentError(f"meta graph array {i}: shape must be a list of at most "
                                   f"{MAX_RANK} non-negative ints")
    if not isinstance(data, list) or len(data) != math.prod(shape) or not all(
            isinstance(v, str) for v in data):
        raise InvalidArgumentError(f"meta graph array {i} (string{shape}): data must be a list of "
                                   f"{math.prod(shape)} base64 strings")
    try:
        values = [base64.b64decode(v, validate=True) for v in data]
    except (binascii.Error, ValueError):
        raise InvalidArgumentError(f"meta graph array {i}: data must be base64 strings") from None
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out.reshape(shape)


# ---- import_scope and clear_devices: rewrites of the (still unchecked) document ---------------
_SCOPE = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_.\-/>]*\Z")


def _renamer(import_scope: str | None) -> Callable[[Any], Any]:
    if not import_scope:
        return lambda name: name
    scope = import_scope.rstrip("/") if isinstance(import_scope, str) else ""
    if not _SCOPE.match(scope):
        raise ValueError(f"import_scope {import_scope!r:.80} is not a valid name scope")
    return lambda name: f"{scope}/{name}" if isinstance(name, str) else name


def _scoped_graph_dict(graph_dict: Any, rename: Callable[[Any], Any],
                       clear_devices: bool) -> Any:
    """The graph dict with names prefixed / devices cleared; malformed parts are left for the
    graph_io checks to report."""
    if not isinstance(graph_dict, dict) or not isinstance(graph_dict.get("nodes"), list):
        return graph_dict
    nodes = []
    for node in graph_dict["nodes"]:
        if not isinstance(node, dict):
            nodes.append(node)
            continue
        node = dict(node)
        if clear_devices and "device" in node:
            node["device"] = ""
        node["name"] = rename(node.get("name"))
        for key in ("inputs", "control_inputs"):
            if isinstance(node.get(key), list):
                node[key] = [rename(v) for v in node[key]]
        if isinstance(node.get("colocation"), list):
            node["colocation"] = [_rename_colocation(v, rename) for v in node["colocation"]]
        attrs = node.get("attrs")
        if isinstance(attrs, dict) and any(k in attrs for k in ("var_name", "_cond_pred")):
            node["attrs"] = {k: rename(v) if k in ("var_name", "_cond_pred") else v
                             for k, v in attrs.items()}
        nodes.append(node)
    return {**graph_dict, "nodes": nodes}


def _rename_colocation(group: Any, rename: Callable[[Any], Any]) -> Any:
    if isinstance(group, str) and group.startswith("loc:@"):
        return "loc:@" + rename(group[len("loc:@"):])
    return group


def _scoped_saver_def(saver_def: Any, rename: Callable[[Any], Any]) -> Any:
    """Names in the saver_def prefixed; the checkpoint keys stay as they are (as in TF)."""
    if not isinstance(saver_def, dict):
        return saver_def
    out = dict(saver_def)
    if isinstance(out.get("reads"), list):
        out["reads"] = [rename(r) for r in out["reads"]]
    if isinstance(out.get("restore_feeds"), list):
        out["restore_feeds"] = [[rename(f) for f in feeds] if isinstance(feeds, list) else feeds
                                for feeds in out["restore_feeds"]]
    out["restore_op"] = rename(out.get("restore_op"))
    if isinstance(out.get("variables"), list):
        out["variables"] = [_scoped_saved_variable(entry, rename) for entry in out["variables"]]
    return out


def _scoped_saved_variable(entry: Any, rename: Callable[[Any], Any]) -> Any:
    if not isinstance(entry, dict):
        return entry
    entry = dict(entry)
    if "variable" in entry:
        entry["variable"] = rename(entry["variable"])
    part = entry.get("partitioned")
    if isinstance(part, dict):
        part = dict(part)
        part["name"] = rename(part.get("name"))
        if isinstance(part.get("parts"), list):
            part["parts"] = [rename(p) for p in part["parts"]]
        entry["partitioned"] = part
    return entry


# ---- names -> the graph's objects ------------------------------------------------------------
def _resolve(graph: Graph, variables: list[Any], collections: dict[Any, Any],
             saver_def: Any, rename: Callable[[Any], Any]) -> dict[str, Variable]:
    """Build the Variables and add the collections to ``graph``; check the saver_def's names."""
    by_name = {}
    for i, entry in enumerate(variables):
        variable = _variable_from_plain(graph, i, entry, rename)
        by_name[variable.op.name] = variable
    items = {key: [_item_from_plain(graph, key, j, item, by_name, rename)
                   for j, item in enumerate(_collection_list(key, value))]
             for key, value in collections.items()}
    if saver_def is not None:
        _check_saver_names(graph, saver_def, by_name)
    for key, values in items.items():
        for value in values:
            graph.add_to_collection(key, value)
    return by_name


def _op(graph: Graph, name: Any, where: str) -> Operation:
    if not isinstance(name, str) or name not in graph._ops_by_name:
        raise InvalidArgumentError(f"meta graph {where}: {name!r:.80} names no node of the graph")
    return graph._ops_by_name[name]


def _tensor(graph: Graph, name: Any, where: str) -> Tensor:
    source, _, index = name.rpartition(":") if isinstance(name, str) else ("", "", "")
    op = _op(graph, source, where) if source else None
    if op is None or not index.isdigit() or not index.isascii() or int(index) >= len(op.outputs):
        raise InvalidArgumentError(f"meta graph {where}: {name!r:.80} names no tensor of the graph")
    return op.outputs[int(index)]


def _variable_from_plain(graph: Graph, i: int, entry: Any, rename: Callable[[Any], Any]
                         ) -> Variable:
    where = f"variable {i}"
    if not isinstance(entry, dict) or set(entry) != VARIABLE_KEYS:
        raise InvalidArgumentError(f"meta graph {where} must be a map with exactly the keys "
                                   f"{sorted(VARIABLE_KEYS)}")
    ref_op = _op(graph, rename(entry["name"]), where)
    if ref_op.type != "Variable":
        raise InvalidArgumentError(f"meta graph {where}: node '{ref_op.name}' is a {ref_op.type}, "
                                   f"not a Variable")
    if not isinstance(entry["trainable"], bool):
        raise InvalidArgumentError(f"meta graph {where}: trainable must be true or false")
    return Variable._from_graph(ref_op.outputs[0], _op(graph, rename(entry["initializer"]), where),
                                _tensor(graph, rename(entry["snapshot"]), where),
                                _tensor(graph, rename(entry["initial_value"]), where),
                                entry["trainable"])


def _collection_list(key: Any, value: Any) -> list[Any]:
    if not isinstance(key, str) or not isinstance(value, list):
        raise InvalidArgumentError(f"meta graph collection {key!r:.80} must be a list")
    return value


def _item_from_plain(graph: Graph, key: str, j: int, item: Any, variables: dict[str, Variable],
                     rename: Callable[[Any], Any]) -> Any:
    where = f"collection '{key:.80}' item {j}"
    kinds = list(_ITEM_KINDS) + sorted(ITEM_CODECS)
    if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in kinds:
        raise InvalidArgumentError(f"meta graph {where} must be a map with one key of {kinds}")
    kind, value = next(iter(item.items()))
    if kind in ITEM_CODECS:
        return ITEM_CODECS[kind].from_plain(graph, value, where, rename)
    if kind == "variable":
        if rename(value) not in variables:
            raise InvalidArgumentError(f"meta graph {where}: {value!r:.80} is not one of the "
                                       f"meta graph's variables")
        return variables[rename(value)]
    if kind == "operation":
        return _op(graph, rename(value), where)
    if kind == "tensor":
        return _tensor(graph, rename(value), where)
    if kind == "bytes":
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise InvalidArgumentError(f"meta graph {where}: bytes must be base64") from None
    if value is None or not isinstance(value, (bool, int, float, str)):
        raise InvalidArgumentError(f"meta graph {where}: a value must be a str, int, float or bool")
    return value


def _check_saver_names(graph: Graph, saver_def: dict[str, Any],
                       variables: dict[str, Variable]) -> None:
    """The names a saver_def uses name nodes/tensors/variables of the graph (types: saver.py)."""
    for key in ("variables", "reads", "restore_feeds"):
        if not isinstance(saver_def.get(key), list):
            raise InvalidArgumentError(f"meta graph saver_def '{key}' must be a list")
    _op(graph, saver_def.get("restore_op"), "saver_def restore_op")
    for read in saver_def["reads"]:
        _tensor(graph, read, "saver_def reads")
    for feeds in saver_def["restore_feeds"]:
        for feed in feeds if isinstance(feeds, list) else [None]:
            _tensor(graph, feed, "saver_def restore_feeds")
    for entry in saver_def["variables"]:
        names = [entry.get("variable")] if isinstance(entry, dict) and "variable" in entry else (
            entry.get("partitioned", {}).get("parts") if isinstance(entry, dict)
            and isinstance(entry.get("partitioned"), dict) else None)
        if not isinstance(names, list) or not names or any(n not in variables for n in names):
            raise InvalidArgumentError(f"meta graph saver_def variable {entry!r:.120} names no "
                                       f"variable of the meta graph")


__all__ = ["META_GRAPH_FORMAT", "META_GRAPH_VERSION", "ImportedMetaGraph", "meta_graph_from_dict",
           "meta_graph_to_dict"]

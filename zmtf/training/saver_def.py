"""The saver_def: what ``Saver(saver_def=...)`` rebuilds a Saver from, by names (TF's SaverDef).

``Saver.saver_def`` writes it and the ``.meta`` file carries it::

    {"version": 1,
     "variables": [{"key": "w", "variable": "w"},            # checkpoint key -> variable op
                   {"key": "p", "partitioned": {"name": "p", "shape": [4, 2], "axis": 0,
                                                "parts": ["p/part_0", "p/part_1"]}}],
     "reads": ["w/read:0", "p/ConcatPartitions:0"],          # what save fetches, per entry
     "restore_feeds": [["save/restore_value:0"], [...]],      # placeholders, one per part
     "restore_op": "save/restore_all",
     "max_to_keep": 5, "keep_checkpoint_every_n_hours": 10000.0, "pad_step_number": false,
     "save_relative_paths": true, "sharded": false,
     "write_version": 2}                                      # only for SaverDef.V2 (TF's format)

It may come from a file, so ``checked_saver_def`` checks every field's type before use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Graph
from zmtf.ops.variable_scope import PartitionedVariable, partitioned_owner, register_partitioned
from zmtf.ops.variables import Variable

#: The version of the saver_def dict (Saver.saver_def) that Saver(saver_def=...) reads.
SAVER_DEF_VERSION = 1
_SAVER_DEF_TYPES: dict[str, Any] = {
    "version": int, "variables": list, "reads": list, "restore_feeds": list, "restore_op": str,
    "max_to_keep": (int, type(None)), "keep_checkpoint_every_n_hours": (int, float),
    "pad_step_number": bool, "save_relative_paths": bool, "sharded": bool,
}


def checked_saver_def(saver_def: Any) -> dict[str, Any]:
    """``saver_def`` if it has the shape ``Saver.saver_def`` gives, else InvalidArgumentError."""
    if not isinstance(saver_def, Mapping) or set(saver_def) - {"write_version"} != set(
            _SAVER_DEF_TYPES):
        raise InvalidArgumentError(None, None, f"saver_def must be a map with exactly the keys "
                                               f"{sorted(_SAVER_DEF_TYPES)} and optionally "
                                               f"'write_version' (Saver.saver_def)")
    if type(saver_def.get("write_version", 2)) is not int:
        raise InvalidArgumentError(None, None, "saver_def 'write_version' must be an int")
    for key, kind in _SAVER_DEF_TYPES.items():
        value = saver_def[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise InvalidArgumentError(None, None, f"saver_def '{key}' has the wrong type "
                                                   f"({type(value).__name__})")
    if saver_def["version"] != SAVER_DEF_VERSION:
        raise InvalidArgumentError(None, None, f"saver_def version {saver_def['version']} is not "
                                               f"supported; this zmtf reads {SAVER_DEF_VERSION}")
    if not len(saver_def["variables"]) == len(saver_def["reads"]) == len(
            saver_def["restore_feeds"]):
        raise InvalidArgumentError(None, None, "saver_def variables, reads and restore_feeds "
                                               "must have one entry per saved variable")
    for entry in saver_def["variables"]:
        if not _is_saved_variable(entry):
            raise InvalidArgumentError(None, None, f"saver_def entry {entry!r:.120} must be "
                                                   f"{{'key', 'variable'}} or {{'key', "
                                                   f"'partitioned': {{name, shape, axis, parts}}}}")
    return dict(saver_def)


def _is_saved_variable(entry: Any) -> bool:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("key"), str):
        return False
    if set(entry) == {"key", "variable"}:
        return isinstance(entry["variable"], str)
    part = entry.get("partitioned")
    return (set(entry) == {"key", "partitioned"} and isinstance(part, Mapping)
            and set(part) == {"name", "shape", "axis", "parts"} and isinstance(part["name"], str)
            and isinstance(part["shape"], list) and all(type(d) is int for d in part["shape"])
            and type(part["axis"]) is int and 0 <= part["axis"] < len(part["shape"])
            and isinstance(part["parts"], list) and bool(part["parts"])
            and all(isinstance(p, str) for p in part["parts"]))


def saved_variables(saver_def: dict[str, Any], graph: Graph) -> dict[str, Any]:
    """Checkpoint key -> the graph's Variable (or a PartitionedVariable of them) it names."""
    by_name = {item.op.name: item for key in graph.get_all_collection_keys()
               for item in graph.get_collection(key) if isinstance(item, Variable)}
    named: dict[str, Any] = {}
    for entry, read in zip(saver_def["variables"], saver_def["reads"]):
        part = entry.get("partitioned")
        names = [entry["variable"]] if part is None else part["parts"]
        if any(n not in by_name for n in names):
            raise InvalidArgumentError(None, None, f"saver_def entry {entry!r:.120} names no "
                                                   f"variable of the graph's collections")
        parts = [by_name[n] for n in names]
        named[entry["key"]] = parts[0] if part is None else _partitioned(part, parts, graph, read)
    return named


def _partitioned(part: Mapping[str, Any], parts: list[Any], graph: Graph, read: str
                 ) -> PartitionedVariable:
    owner = partitioned_owner(parts[0])
    if owner is not None and list(owner) == parts:
        return owner
    whole = PartitionedVariable._of_shards(part["name"], part["shape"], parts[0].dtype, parts, part["axis"])
    whole._concat = graph.get_tensor_by_name(read)  # NOTE: the concat is already in the graph
    return register_partitioned(whole)


__all__ = ["SAVER_DEF_VERSION", "checked_saver_def", "saved_variables"]

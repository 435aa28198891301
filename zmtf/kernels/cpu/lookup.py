"""Kernels of the lookup-table ops (tf.lookup, tf.contrib.lookup).

A table op (HashTableV2, MutableHashTableV2, ...) outputs the table state itself as the
handle: a runtime object found or made by ``ctx.resources`` under its shared name, so it
persists between steps and sessions like a variable. The placer keeps every op that takes
the handle on the table's device; only keys and values cross devices or tasks.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.data_flow import _handle
from zmtf.kernels.registry import register

_TABLE = "LookupTable"


def _table(ctx: Any, attrs: dict, mutable: bool, value_shape: Any = ()) -> list:
    name = attrs.get("shared_name") or attrs["_node_name"]
    return [ctx.resources.lookup_table(name, attrs["key_dtype"], attrs["value_dtype"],
                                       tuple(value_shape), mutable, attrs["_node_name"])]


@register("HashTableV2")
def hash_table(ctx: Any, inputs: list, attrs: dict) -> list:
    """A static table: filled once by its initializer, read-only afterwards."""
    return _table(ctx, attrs, mutable=False)


@register("MutableHashTableV2")
def mutable_hash_table(ctx: Any, inputs: list, attrs: dict) -> list:
    return _table(ctx, attrs, mutable=True)


@register("MutableHashTableOfTensorsV2")
def mutable_hash_table_of_tensors(ctx: Any, inputs: list, attrs: dict) -> list:
    """A mutable table whose values are tensors of ``value_shape``."""
    return _table(ctx, attrs, mutable=True, value_shape=attrs["value_shape"])


@register("LookupTableFindV2")
def lookup_table_find(ctx: Any, inputs: list, attrs: dict) -> list:
    table, keys, default = inputs
    return [_handle(table, _TABLE, attrs).find(np.asarray(keys), default, attrs["_node_name"])]


@register("LookupTableSizeV2")
def lookup_table_size(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.asarray(_handle(inputs[0], _TABLE, attrs).size(), np.int64)]


@register("LookupTableExportV2")
def lookup_table_export(ctx: Any, inputs: list, attrs: dict) -> list:
    return list(_handle(inputs[0], _TABLE, attrs).export())


@register("LookupTableImportV2")
def lookup_table_import(ctx: Any, inputs: list, attrs: dict) -> list:
    """Fill a static table once (its KeyValueTensorInitializer); replace a mutable one's."""
    table, keys, values = inputs
    _handle(table, _TABLE, attrs).import_values(np.asarray(keys), np.asarray(values),
                                                attrs["_node_name"])
    return []


@register("LookupTableInsertV2")
def lookup_table_insert(ctx: Any, inputs: list, attrs: dict) -> list:
    table, keys, values = inputs
    _mutable(table, attrs).insert(np.asarray(keys), np.asarray(values), attrs["_node_name"])
    return []


@register("LookupTableRemoveV2")
def lookup_table_remove(ctx: Any, inputs: list, attrs: dict) -> list:
    _mutable(inputs[0], attrs).remove(np.asarray(inputs[1]))
    return []


@register("InitializeTableFromTextFileV2")
def initialize_table_from_text_file(ctx: Any, inputs: list, attrs: dict) -> list:
    """Fill a table from a vocabulary file (TextFileInitializer), once."""
    table = _handle(inputs[0], _TABLE, attrs)
    path = ctx.resources.files.check(bytes(np.asarray(inputs[1])[()]), attrs["_node_name"])
    table.initialize_from_text_file(os.fsencode(path), attrs, attrs["_node_name"])
    return []


def _mutable(table: Any, attrs: dict) -> Any:
    table = _handle(table, _TABLE, attrs)
    if not table.mutable:
        raise InvalidArgumentError(f"table '{table.name}' (node '{attrs['_node_name']}') is a "
                                   f"static HashTable: only a MutableHashTable takes inserts "
                                   f"and removes")
    return table

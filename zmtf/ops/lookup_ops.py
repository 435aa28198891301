"""Lookup tables: tf.lookup.StaticHashTable (tf.contrib.lookup.HashTable), its initializers
(KeyValueTensorInitializer, TextFileInitializer) and tf.lookup.experimental.MutableHashTable.

A table is one handle op (HashTableV2, MutableHashTableV2, ...) whose state lives on one
device of one task, like a variable's (runtime/lookup_tables.py); lookups, inserts and
initializers are ops on that handle, so the placer puts them on the table's device and a
worker on another task sends keys and gets values back. A static table must be filled by
its initializer (in GraphKeys.TABLE_INITIALIZERS, run by tf.tables_initializer()) before a
lookup, else FailedPreconditionError "Table not initialized.". Names, shared names and op
types follow TF 2.21's graph mode.
"""

from __future__ import annotations

import uuid
from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Operation, Tensor, get_default_graph
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.scopes import name_scope
from zmtf.framework.tensor_shape import TensorShape, as_shape

STRING_INPUT_OPS.update({"LookupTableFindV2", "LookupTableInsertV2", "LookupTableImportV2",
                         "LookupTableRemoveV2", "InitializeTableFromTextFileV2"})
TABLE_OPS = ("HashTableV2", "MutableHashTableV2", "MutableHashTableOfTensorsV2")


@op_def(*TABLE_OPS, stateful=True)
def _handle_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.resource, TensorShape([]))]


@op_def("LookupTableFindV2", stateful=True)
def _find_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    keys, default = inputs[1], inputs[2]
    return [(default.dtype, keys.shape.concatenate(as_shape(attrs["value_shape"])))]


@op_def("LookupTableSizeV2", stateful=True)
def _size_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int64, TensorShape([]))]


@op_def("LookupTableExportV2", stateful=True)
def _export_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.as_dtype(attrs["Tkeys"]), TensorShape([None])),
            (dtypes.as_dtype(attrs["Tvalues"]),
             TensorShape([None]).concatenate(as_shape(attrs["value_shape"])))]


@op_def("LookupTableImportV2", "LookupTableInsertV2", "LookupTableRemoveV2",
        "InitializeTableFromTextFileV2", stateful=True)
def _no_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


def _handle_op(op_type: str, attrs: dict[str, Any], name: str) -> Tensor:
    with get_default_graph().control_dependencies(None):   # state, not part of a step
        return apply_op(op_type, [], attrs, name=name).outputs[0]


def _table_op(op_type: str, handle: Tensor, inputs: list[Tensor],
              attrs: dict[str, Any] | None = None) -> Operation:
    """An op on a table, put on the table's device whatever the device scope (TF's placer
    moves a resource's consumers to it): a worker's lookup runs on the ps holding the table."""
    with handle.graph.colocate_with(handle.op):
        return apply_op(op_type, [handle, *inputs], attrs or {})


def check_table_dtypes(table: Any, key_dtype: Any, value_dtype: Any) -> None:
    """TypeError unless the table takes these key and value dtypes (TF's check)."""
    if key_dtype != table.key_dtype:
        raise TypeError(f"Invalid key dtype for table, expected {table.key_dtype.name} but got "
                        f"{dtypes.as_dtype(key_dtype).name}.")
    if value_dtype != table.value_dtype:
        raise TypeError(f"Invalid value dtype for table, expected {table.value_dtype.name} but "
                        f"got {dtypes.as_dtype(value_dtype).name}.")


class LookupInterface:
    """What every table offers: its dtypes, ``lookup`` (also ``table[keys]``) and ``size``."""

    def __init__(self, key_dtype: Any, value_dtype: Any) -> None:
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)

    def __getitem__(self, keys: Any) -> Tensor:
        return self.lookup(keys)

    def lookup(self, keys: Any, name: str | None = None) -> Tensor:
        raise NotImplementedError

    def _check_keys(self, keys: Any) -> Tensor:
        keys = keys if isinstance(keys, Tensor) else convert_to_tensor(keys, self._key_dtype)
        if keys.dtype != self._key_dtype:
            raise TypeError(f"Dtype of argument `keys` must be {self._key_dtype!r}, received: "
                            f"{keys.dtype!r}")
        return keys


class InitializableLookupTableBase(LookupInterface):
    """A table filled once by an initializer object: ``initializer`` (also ``init``) is
    the op that fills it, ``default_value`` what lookups of absent keys give."""

    def __init__(self, default_value: Any, initializer: Any) -> None:
        super().__init__(initializer.key_dtype, initializer.value_dtype)
        self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        self._default_value.shape.merge_with(TensorShape([]))
        self._initializer = initializer
        self._resource_handle = self._create_resource()
        self._init_op = initializer.initialize(self)

    resource_handle = property(lambda self: self._resource_handle)
    default_value = property(lambda self: self._default_value)
    initializer = property(lambda self: self._init_op)
    init = initializer

    def _create_resource(self) -> Tensor:
        raise NotImplementedError

    def size(self, name: str | None = None) -> Tensor:
        """The number of entries, an int64 scalar (0 before initialization)."""
        with name_scope(name, f"{self.name}_Size"):
            return _table_op("LookupTableSizeV2", self._resource_handle, []).outputs[0]

    def lookup(self, keys: Any, name: str | None = None) -> Tensor:
        """The value of each key (any shape), ``default_value`` where absent."""
        keys = self._check_keys(keys)
        with name_scope(name, f"{self.name}_Lookup"):
            return _table_op("LookupTableFindV2", self._resource_handle,
                             [keys, self._default_value], {"value_shape": []}).outputs[0]

    def export(self, name: str | None = None) -> tuple[Tensor, Tensor]:
        """All keys and values ([n] each), in no set order."""
        with name_scope(name, f"{self.name}_Export"):
            op = _table_op("LookupTableExportV2", self._resource_handle, [],
                           {"Tkeys": self._key_dtype.name, "Tvalues": self._value_dtype.name,
                           "value_shape": []})
        return op.outputs[0], op.outputs[1]


class StaticHashTable(InitializableLookupTableBase):
    """``tf.lookup.StaticHashTable(initializer, default_value)``: immutable once initialized.
    Also tf.contrib.lookup.HashTable."""

    def __init__(self, initializer: Any, default_value: Any, name: str | None = None,
                 experimental_is_anonymous: bool = False) -> None:
        if experimental_is_anonymous:
            raise NotImplementedError("anonymous tables are not built in zmtf; drop "
                                      "experimental_is_anonymous")
        # a fresh shared name per table built (TF's), unless the initializer names one
        self._shared_name = initializer._shared_name or f"hash_table_{uuid.uuid4()}"
        self._name = name or "hash_table"
        super().__init__(default_value, initializer)

    name = property(lambda self: self._table_name)

    def _create_resource(self) -> Tensor:
        handle = _handle_op("HashTableV2", {
            "shared_name": self._shared_name, "container": "", "use_node_name_sharing": False,
            "key_dtype": self._key_dtype.name, "value_dtype": self._value_dtype.name},
            self._name)
        self._table_name = handle.op.name.split("/")[-1]
        return handle


HashTable = StaticHashTable


class TableInitializerBase:
    """What fills a table: its key and value dtypes and ``initialize(table) -> op``."""

    def __init__(self, key_dtype: Any, value_dtype: Any) -> None:
        self._key_dtype = dtypes.as_dtype(key_dtype)
        self._value_dtype = dtypes.as_dtype(value_dtype)

    key_dtype = property(lambda self: self._key_dtype)
    value_dtype = property(lambda self: self._value_dtype)
    _shared_name = ""

    def initialize(self, table: Any) -> Operation:
        raise NotImplementedError


class KeyValueTensorInitializer(TableInitializerBase):
    """Fill a table from a keys tensor and a values tensor of the same shape."""

    def __init__(self, keys: Any, values: Any, key_dtype: Any = None, value_dtype: Any = None,
                 name: str | None = None) -> None:
        self._keys = convert_to_tensor(keys, dtype=key_dtype, name="keys")
        self._values = convert_to_tensor(values, dtype=value_dtype, name="values")
        self._name = name if name is not None else "key_value_init"
        super().__init__(self._keys.dtype, self._values.dtype)

    def initialize(self, table: Any) -> Operation:
        check_table_dtypes(table, self._keys.dtype, self._values.dtype)
        with name_scope(self._name):
            init_op = _table_op("LookupTableImportV2", table.resource_handle,
                                [self._keys, self._values])
        get_default_graph().add_to_collection(GraphKeys.TABLE_INITIALIZERS, init_op)
        return init_op


class TextFileIndex:
    """Where a key or value comes from in each line besides a column number >= 0."""

    WHOLE_LINE = -2
    LINE_NUMBER = -1


class TextFileInitializer(TableInitializerBase):
    """Fill a table from a text file, one entry per line: key and value from a column
    (``delimiter``-split), the whole line or the line number (TextFileIndex)."""

    def __init__(self, filename: Any, key_dtype: Any, key_index: int, value_dtype: Any,
                 value_index: int, vocab_size: int | None = None, delimiter: str = "\t",
                 name: str | None = None, value_index_offset: int = 0) -> None:
        if not isinstance(filename, Tensor) and not filename:
            raise ValueError("`filename` argument required for tf.lookup.TextFileInitializer")
        key_dtype, value_dtype = dtypes.as_dtype(key_dtype), dtypes.as_dtype(value_dtype)
        _check_index("key", key_index, key_dtype)
        _check_index("value", value_index, value_dtype)
        if vocab_size is not None and vocab_size <= 0:
            raise ValueError(f"`vocab_size` should be > 0, received: {vocab_size}")
        self._filename = filename
        self._key_index, self._value_index = key_index, value_index
        self._vocab_size, self._delimiter = vocab_size, delimiter
        self._name, self._offset = name, value_index_offset
        super().__init__(key_dtype, value_dtype)

    def initialize(self, table: Any) -> Operation:
        check_table_dtypes(table, self.key_dtype, self.value_dtype)
        with name_scope(self._name, "text_file_init"):
            filename = convert_to_tensor(self._filename, dtypes.string, name="asset_filepath")
            init_op = _table_op("InitializeTableFromTextFileV2", table.resource_handle, [filename], {
                "key_index": self._key_index, "value_index": self._value_index,
                "vocab_size": -1 if self._vocab_size is None else self._vocab_size,
                "delimiter": self._delimiter, "offset": self._offset})
        get_default_graph().add_to_collection(GraphKeys.TABLE_INITIALIZERS, init_op)
        return init_op

    @property
    def _shared_name(self) -> str:
        """TF's: tables built from the same file and columns share one table."""
        parts = [str(self._filename)]
        if self._vocab_size:
            parts.append(str(self._vocab_size))
        parts += [str(self._key_index), str(self._value_index)]
        if self._offset:
            parts.append(str(self._offset))
        return "hash_table_" + "_".join(parts)


def _check_index(role: str, index: int, dtype: dtypes.DType) -> None:
    if index < -2:
        raise ValueError(f"`{role}_index` should be >= -2, received: {index}.")
    if index == TextFileIndex.LINE_NUMBER and dtype != dtypes.int64:
        raise ValueError(f"`{role}_dtype` must be int64 for `{role}_index` "
                         f"{TextFileIndex.LINE_NUMBER}, received: {dtype!r}")
    if index == TextFileIndex.WHOLE_LINE and not dtype.is_integer and dtype != dtypes.string:
        raise ValueError(f"`{role}_dtype` should be either integer or string for `{role}_index` "
                         f"{TextFileIndex.WHOLE_LINE}, received: {dtype!r}")


class TextFileStringTableInitializer(TextFileInitializer):
    """int64 id -> string from a text file: by default line number -> whole line."""

    def __init__(self, filename: Any, key_column_index: int = TextFileIndex.LINE_NUMBER,
                 value_column_index: int = TextFileIndex.WHOLE_LINE,
                 vocab_size: int | None = None, delimiter: str = "\t",
                 name: str = "text_file_string_table_init") -> None:
        super().__init__(filename, dtypes.int64, key_column_index, dtypes.string,
                         value_column_index, vocab_size, delimiter, name)


class TextFileIdTableInitializer(TextFileInitializer):
    """string (or int64) -> int64 id from a text file: by default whole line -> line number."""

    def __init__(self, filename: Any, key_column_index: int = TextFileIndex.WHOLE_LINE,
                 value_column_index: int = TextFileIndex.LINE_NUMBER,
                 vocab_size: int | None = None, delimiter: str = "\t",
                 name: str = "text_file_id_table_init", key_dtype: Any = dtypes.string) -> None:
        super().__init__(filename, key_dtype, key_column_index, dtypes.int64,
                         value_column_index, vocab_size, delimiter, name)


class MutableHashTable(LookupInterface):
    """``tf.lookup.experimental.MutableHashTable(key_dtype, value_dtype, default_value)``:
    starts empty; ``insert``, ``remove``, ``lookup``, ``export``. Values may be tensors
    (their shape is the default value's)."""

    def __init__(self, key_dtype: Any, value_dtype: Any, default_value: Any,
                 name: str = "MutableHashTable", checkpoint: bool = True,
                 experimental_is_anonymous: bool = False) -> None:
        if experimental_is_anonymous:
            raise NotImplementedError("anonymous tables are not built in zmtf; drop "
                                      "experimental_is_anonymous")
        super().__init__(key_dtype, value_dtype)
        self._default_value = convert_to_tensor(default_value, dtype=self._value_dtype)
        self._value_shape = self._default_value.shape
        self._name = name
        attrs: dict[str, Any] = {
            "shared_name": "", "container": "", "use_node_name_sharing": bool(checkpoint),
            "key_dtype": self._key_dtype.name, "value_dtype": self._value_dtype.name}
        op_type = "MutableHashTableV2"
        if self._value_shape.ndims != 0:
            op_type = "MutableHashTableOfTensorsV2"
            attrs["value_shape"] = self._value_shape.as_list()
        self._resource_handle = _handle_op(op_type, attrs, name)
        self._table_name = self._resource_handle.op.name.split("/")[-1]

    name = property(lambda self: self._table_name)
    resource_handle = property(lambda self: self._resource_handle)
    default_value = property(lambda self: self._default_value)

    def size(self, name: str | None = None) -> Tensor:
        with name_scope(name, f"{self.name}_Size"):
            return _table_op("LookupTableSizeV2", self._resource_handle, []).outputs[0]

    def lookup(self, keys: Any, dynamic_default_values: Any = None,
               name: str | None = None) -> Tensor:
        """The value of each key; absent keys get the default value (or, with
        ``dynamic_default_values``, their own default)."""
        with name_scope(name, f"{self.name}_lookup_table_find"):
            keys = convert_to_tensor(keys, dtype=self._key_dtype, name="keys")
            default = self._default_value if dynamic_default_values is None else \
                convert_to_tensor(dynamic_default_values, dtype=self._value_dtype)
            return _table_op("LookupTableFindV2", self._resource_handle, [keys, default],
                             {"value_shape": self._value_shape.as_list()}).outputs[0]

    def insert(self, keys: Any, values: Any, name: str | None = None) -> Operation:
        """Set the value of every key (values: keys.shape + the value shape)."""
        with name_scope(name, f"{self.name}_lookup_table_insert"):
            return self._write("LookupTableInsertV2", keys, values)

    def remove(self, keys: Any, name: str | None = None) -> Operation:
        """Drop every key given (absent keys are ignored)."""
        with name_scope(name, f"{self.name}_lookup_table_remove"):
            keys = convert_to_tensor(keys, dtype=self._key_dtype, name="keys")
            return _table_op("LookupTableRemoveV2", self._resource_handle, [keys])

    def export(self, name: str | None = None) -> tuple[Tensor, Tensor]:
        with name_scope(name, f"{self.name}_lookup_table_export_values"):
            op = _table_op("LookupTableExportV2", self._resource_handle, [], {
                "Tkeys": self._key_dtype.name, "Tvalues": self._value_dtype.name,
                "value_shape": self._value_shape.as_list()})
        return op.outputs[0], op.outputs[1]

    def import_(self, keys: Any, values: Any, name: str | None = None) -> Operation:
        """Replace the contents with these keys and values (what a restore does)."""
        with name_scope(name, f"{self.name}_table_restore"):
            return self._write("LookupTableImportV2", keys, values)

    def _write(self, op_type: str, keys: Any, values: Any) -> Operation:
        keys = convert_to_tensor(keys, dtype=self._key_dtype, name="keys")
        values = convert_to_tensor(values, dtype=self._value_dtype, name="values")
        return _table_op(op_type, self._resource_handle, [keys, values])


__all__ = ["HashTable", "KeyValueTensorInitializer", "MutableHashTable", "StaticHashTable",
           "TextFileIdTableInitializer", "TextFileIndex", "TextFileInitializer",
           "TextFileStringTableInitializer"]

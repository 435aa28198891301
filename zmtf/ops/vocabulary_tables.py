"""Vocabulary tables, as TF1 feature pipelines build them: strings (or ints) -> ids with
``index_table_from_tensor`` / ``index_table_from_file``, ids -> strings with
``index_to_string_table_from_*``, and out-of-vocabulary keys spread over hash buckets
(IdTableWithHashBuckets, StaticVocabularyTable).

An OOV key's id is ``vocab_size + hash(key) % num_oov_buckets`` with TF's hashes (FarmHash
Fingerprint64 by default, so ids equal TF's); integer keys are hashed as their decimal text.
The graph is TF 2.21's: the same ops under the same names.
"""

from __future__ import annotations

import collections
import functools
from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Operation, Tensor
from zmtf.ops import array_ops, math_ops, selection_ops, string_ops
from zmtf.ops.composite_ops import range_
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import no_op
from zmtf.ops.lookup_ops import (
    KeyValueTensorInitializer, LookupInterface, StaticHashTable, TextFileIdTableInitializer,
    TextFileIndex, TextFileStringTableInitializer,
)
from zmtf.framework.scopes import name_scope


class HasherSpec(collections.namedtuple("HasherSpec", ["hasher", "key"])):
    """Which hash assigns OOV buckets: "fasthash" (Fingerprint64), "legacy" (TF's Hash64)
    or "stronghash" (SipHash-2-4 under ``key``)."""

    __slots__ = ()


FastHashSpec = HasherSpec("fasthash", None)


class StrongHashSpec(HasherSpec):
    """SipHash-2-4 OOV buckets under ``key``, two unsigned ints."""

    __slots__ = ()

    def __new__(cls, key: Any) -> StrongHashSpec:
        if len(key) != 2:
            raise ValueError(f"`key` must have size 2, received {len(key)}")
        if not all(isinstance(k, int) and k >= 0 for k in key):
            raise TypeError(f"Invalid key {key}. Must be unsigned integer values.")
        return super().__new__(cls, "stronghash", key)


def _hash_bucket_fn(hasher_spec: Any) -> Any:
    if not isinstance(hasher_spec, HasherSpec):
        raise TypeError(f"`hasher_spec` must be of type HasherSpec, got {type(hasher_spec)}.")
    if hasher_spec.hasher == "fasthash":
        return string_ops.string_to_hash_bucket_fast
    if hasher_spec.hasher == "legacy":
        return string_ops.string_to_hash_bucket
    if hasher_spec.hasher == "stronghash":
        return functools.partial(string_ops.string_to_hash_bucket_strong, key=hasher_spec.key)
    raise ValueError(f"Found unknown hasher {hasher_spec.hasher} in `hasher_spec`")


class IdTableWithHashBuckets(LookupInterface):
    """A string (or int) -> int64 id table whose absent keys go to ``num_oov_buckets`` hash
    buckets after the vocabulary; with ``table=None``, every key is hashed."""

    def __init__(self, table: Any, num_oov_buckets: int, hasher_spec: Any = FastHashSpec,
                 name: str | None = None, key_dtype: Any = None) -> None:
        name = name.rstrip("/") if name else name
        if table is not None:
            key_dtype = dtypes.as_dtype(key_dtype or table.key_dtype)
            if table.key_dtype not in (dtypes.int64, dtypes.string):
                raise TypeError(f"Invalid `key_dtype`, expected one of (tf.int64, tf.string), "
                                f"received {key_dtype!r}.")
            if table.key_dtype.is_integer != key_dtype.is_integer:
                raise TypeError(f"Invalid `key dtype`, expected "
                                f"{'integer' if key_dtype.is_integer else 'non-integer'} but "
                                f"got {table.key_dtype!r}.")
            if table.value_dtype != dtypes.int64:
                raise TypeError(f"Invalid `value_dtype`: expected int64 but got "
                                f"{table.value_dtype!r}.")
            name = name or table.name
        else:
            if num_oov_buckets <= 0:
                raise ValueError("`oov_buckets` must be > 0 if no `table` is supplied.")
            key_dtype = dtypes.string if key_dtype is None else dtypes.as_dtype(key_dtype)
            name = name or "hash_bucket"
        if not key_dtype.is_integer and key_dtype != dtypes.string:
            raise TypeError(f"Invalid `key_dtype`, expected integer or string, got "
                            f"{key_dtype!r}.")
        _hash_bucket_fn(hasher_spec)
        self._table = table
        self._num_oov_buckets = num_oov_buckets
        self._hasher_spec = hasher_spec
        self._table_name = name.split("/")[-1] if name else None
        super().__init__(key_dtype, dtypes.int64)

    name = property(lambda self: self._table_name)
    resource_handle = property(lambda self: getattr(self._table, "resource_handle", None))

    @property
    def initializer(self) -> Operation:
        if self._table is not None:
            return self._table.initializer
        with name_scope(None, "init"):
            return no_op()

    init = initializer

    def size(self, name: str | None = None) -> Tensor:
        """Vocabulary size plus the number of OOV buckets (int64)."""
        with name_scope(name, f"{self.name}_Size"):
            vocab = self._table.size() if self._table is not None else \
                convert_to_tensor(0, dtype=dtypes.int64)
            return vocab + self._num_oov_buckets

    def lookup(self, keys: Any, name: str | None = None) -> Tensor:
        """The id of each key: its vocabulary id, else its OOV bucket."""
        keys = self._check_keys(keys)
        values = keys
        if self._table is not None and self._table.key_dtype == dtypes.int64:
            values = math_ops.cast(values, dtypes.int64)
        if self._num_oov_buckets == 0:
            return self._table.lookup(values, name=name)
        with name_scope(name, f"{self.name}_Lookup"):
            as_text = values if values.dtype == dtypes.string else string_ops.as_string(values)
            buckets = _hash_bucket_fn(self._hasher_spec)(
                as_text, num_buckets=self._num_oov_buckets, name="hash_bucket")
            if self._table is None:
                return buckets
            ids = self._table.lookup(values)
            buckets = math_ops.add(buckets, self._table.size())
            known = math_ops.not_equal(ids, self._table.default_value)
            return selection_ops.where_v2(known, ids, buckets)


class StaticVocabularyTable(IdTableWithHashBuckets):
    """``tf.lookup.StaticVocabularyTable(initializer, num_oov_buckets)``: a vocabulary
    table (ids from the initializer) with Fingerprint64 OOV buckets."""

    def __init__(self, initializer: Any, num_oov_buckets: int, lookup_key_dtype: Any = None,
                 name: str | None = None, experimental_is_anonymous: bool = False) -> None:
        if num_oov_buckets <= 0:
            raise ValueError("`num_oov_buckets` must be > 0; use StaticHashTable.")
        table = StaticHashTable(initializer, -1, experimental_is_anonymous=
                                experimental_is_anonymous) if initializer is not None else None
        super().__init__(table, num_oov_buckets, FastHashSpec, name,
                         lookup_key_dtype if table is not None else dtypes.string)


def _check_oov(num_oov_buckets: int) -> None:
    if num_oov_buckets < 0:
        raise ValueError(f"`num_oov_buckets` must be greater or equal than 0, got "
                         f"{num_oov_buckets}.")


def _with_buckets(table: Any, num_oov_buckets: int, hasher_spec: Any, key_dtype: Any) -> Any:
    if not num_oov_buckets:
        return table
    return IdTableWithHashBuckets(table, num_oov_buckets=num_oov_buckets,
                                  hasher_spec=hasher_spec, key_dtype=key_dtype)


def index_table_from_tensor(vocabulary_list: Any, num_oov_buckets: int = 0,
                            default_value: int = -1, hasher_spec: Any = FastHashSpec,
                            dtype: Any = dtypes.string, name: str | None = None) -> Any:
    """A table mapping each entry of ``vocabulary_list`` (1-D) to its position (int64);
    other keys get an OOV bucket id, or ``default_value`` without buckets."""
    if vocabulary_list is None:
        raise ValueError("`vocabulary_list` must be specified.")
    _check_oov(num_oov_buckets)
    dtype = dtypes.as_dtype(dtype)
    if not dtype.is_integer and dtype != dtypes.string:
        raise TypeError("`dtype` must either be integer or string.")
    with name_scope(name, "string_to_index"):
        keys = convert_to_tensor(vocabulary_list)
        if keys.dtype.is_integer != dtype.is_integer or \
                (not dtype.is_integer and keys.dtype != dtype):
            expected = "integer" if dtype.is_integer else "non-integer"
            raise ValueError(f"Invalid `dtype`: Expected {expected}, got {keys.dtype!r}.")
        values = math_ops.cast(range_(array_ops.size(keys)), dtypes.int64)
        with name_scope(None, "hash_table"):
            table_keys = math_ops.cast(keys, dtypes.int64) if keys.dtype.is_integer else keys
            init = KeyValueTensorInitializer(table_keys, values, table_keys.dtype,
                                             dtypes.int64, name="table_init")
            table = StaticHashTable(init, default_value)
        return _with_buckets(table, num_oov_buckets, hasher_spec, dtype)


def index_table_from_file(vocabulary_file: Any = None, num_oov_buckets: int = 0,
                          vocab_size: int | None = None, default_value: int = -1,
                          hasher_spec: Any = FastHashSpec, key_dtype: Any = dtypes.string,
                          name: str | None = None,
                          key_column_index: int = TextFileIndex.WHOLE_LINE,
                          value_column_index: int = TextFileIndex.LINE_NUMBER,
                          delimiter: str = "\t") -> Any:
    """A table mapping each line of a vocabulary file (by default the whole line) to its
    line number (int64); other keys get an OOV bucket id, or ``default_value``."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("`vocabulary_file` must be specified and must not be empty.")
    _check_oov(num_oov_buckets)
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"`vocab_size` must be greater than 0, got {vocab_size} for "
                         f"vocabulary_file: {vocabulary_file}.")
    key_dtype = dtypes.as_dtype(key_dtype)
    if not key_dtype.is_integer and key_dtype != dtypes.string:
        raise TypeError("Dtype for `keys` should be either integer or string.")
    with name_scope(name, "string_to_index"):
        with name_scope(None, "hash_table"):
            init = TextFileIdTableInitializer(
                vocabulary_file, vocab_size=vocab_size, name="table_init",
                key_dtype=dtypes.int64 if key_dtype.is_integer else key_dtype,
                key_column_index=key_column_index, value_column_index=value_column_index,
                delimiter=delimiter)
            table = StaticHashTable(init, default_value)
        return _with_buckets(table, num_oov_buckets, hasher_spec, key_dtype)


def index_to_string_table_from_tensor(vocabulary_list: Any, default_value: Any = "UNK",
                                      name: str | None = None) -> StaticHashTable:
    """A table mapping int64 ids to the strings of ``vocabulary_list``; ``default_value``
    for ids outside it."""
    if vocabulary_list is None:
        raise ValueError("`vocabulary_list` argument must be specified.")
    with name_scope(name, "index_to_string"):
        vocabulary_list = convert_to_tensor(vocabulary_list, dtypes.string)
        keys = math_ops.cast(range_(array_ops.size(vocabulary_list)), dtypes.int64)
        init = KeyValueTensorInitializer(keys, vocabulary_list, dtypes.int64, dtypes.string,
                                         name="table_init")
        return StaticHashTable(init, default_value)


def index_to_string_table_from_file(vocabulary_file: Any, vocab_size: int | None = None,
                                    default_value: Any = "UNK", name: str | None = None,
                                    key_column_index: int = TextFileIndex.LINE_NUMBER,
                                    value_column_index: int = TextFileIndex.WHOLE_LINE,
                                    delimiter: str = "\t") -> StaticHashTable:
    """A table mapping int64 line numbers to the lines of a vocabulary file."""
    if vocabulary_file is None or (isinstance(vocabulary_file, str) and not vocabulary_file):
        raise ValueError("`vocabulary_file` must be specified and must not be empty.")
    if vocab_size is not None and vocab_size < 1:
        raise ValueError(f"`vocab_size` must be greater than 0, got {vocab_size}.")
    with name_scope(name, "index_to_string"):
        init = TextFileStringTableInitializer(
            vocabulary_file, vocab_size=vocab_size, name="table_init",
            key_column_index=key_column_index, value_column_index=value_column_index,
            delimiter=delimiter)
        return StaticHashTable(init, default_value)


def string_to_index(tensor: Any, mapping: Any, default_value: int = -1,
                    name: str | None = None) -> Tensor:
    """tf.contrib.lookup.string_to_index (deprecated): ``tensor``'s strings as their
    positions in ``mapping``; the table's initializer joins tf.tables_initializer()."""
    table = index_table_from_tensor(mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


def index_to_string(tensor: Any, mapping: Any, default_value: Any = "UNK",
                    name: str | None = None) -> Tensor:
    """tf.contrib.lookup.index_to_string (deprecated): int64 ids as their strings in
    ``mapping``."""
    table = index_to_string_table_from_tensor(mapping, default_value=default_value, name=name)
    return table.lookup(tensor)


__all__ = ["FastHashSpec", "HasherSpec", "IdTableWithHashBuckets", "StaticVocabularyTable",
           "StrongHashSpec", "index_table_from_file", "index_table_from_tensor",
           "index_to_string", "index_to_string_table_from_file",
           "index_to_string_table_from_tensor", "string_to_index"]

"""``tf.lookup``: TF1's core lookup-table names (``tf.compat.v1.lookup``), with the
mutable tables under ``tf.lookup.experimental``."""

import types as _types

from zmtf.ops.lookup_ops import (
    KeyValueTensorInitializer, MutableHashTable, StaticHashTable, TextFileIndex,
    TextFileInitializer,
)
from zmtf.ops.vocabulary_tables import StaticVocabularyTable

experimental = _types.SimpleNamespace(MutableHashTable=MutableHashTable)

__all__ = ["KeyValueTensorInitializer", "StaticHashTable", "StaticVocabularyTable",
           "TextFileIndex", "TextFileInitializer", "experimental"]

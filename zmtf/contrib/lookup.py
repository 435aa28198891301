"""``tf.contrib.lookup``: TF1's lookup tables and vocabulary helpers, under their contrib
names (HashTable, index_table_from_tensor, MutableHashTable, ...)."""

from zmtf.ops.lookup_ops import (
    HashTable, KeyValueTensorInitializer, MutableHashTable, TextFileIdTableInitializer,
    TextFileIndex, TextFileInitializer, TextFileStringTableInitializer,
)
from zmtf.ops.lookup_ops import InitializableLookupTableBase, LookupInterface
from zmtf.ops.lookup_ops import TableInitializerBase
from zmtf.ops.vocabulary_tables import (
    FastHashSpec, HasherSpec, IdTableWithHashBuckets, StrongHashSpec, index_table_from_file,
    index_table_from_tensor, index_to_string, index_to_string_table_from_file,
    index_to_string_table_from_tensor, string_to_index,
)

__all__ = ["FastHashSpec", "HashTable", "HasherSpec", "IdTableWithHashBuckets",
           "InitializableLookupTableBase", "KeyValueTensorInitializer", "LookupInterface",
           "MutableHashTable", "StrongHashSpec", "TableInitializerBase",
           "TextFileIdTableInitializer", "TextFileIndex", "TextFileInitializer",
           "TextFileStringTableInitializer", "index_table_from_file", "index_table_from_tensor",
           "index_to_string", "index_to_string_table_from_file",
           "index_to_string_table_from_tensor", "string_to_index"]

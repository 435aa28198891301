"""``tf.strings``: the string ops under the namespace TF 1.13+ scripts use
(``tf.strings.join``, ``tf.strings.length``, ``tf.strings.to_number``, ``tf.strings.substr``,
``tf.strings.regex_replace``, ``tf.strings.to_hash_bucket_fast``, ...)."""

from zmtf.ops.string_ops import as_string, length, string_join as join
from zmtf.ops.string_ops import string_to_number as to_number
from zmtf.ops.string_ops import string_to_hash_bucket as to_hash_bucket
from zmtf.ops.string_ops import string_to_hash_bucket_fast as to_hash_bucket_fast
from zmtf.ops.string_ops import string_to_hash_bucket_strong as to_hash_bucket_strong
from zmtf.ops.string_split_ops import strings_split as split
from zmtf.ops.text_ops import (
    lower, reduce_join, regex_full_match, regex_replace, strip, substr, upper,
)

__all__ = ["as_string", "join", "length", "lower", "reduce_join", "regex_full_match",
           "regex_replace", "split", "strip", "substr", "to_hash_bucket", "to_hash_bucket_fast",
           "to_hash_bucket_strong", "to_number", "upper"]

"""``tf.strings``: the string ops under the namespace TF 1.13+ scripts use
(``tf.strings.join``, ``tf.strings.length``, ``tf.strings.to_number``)."""

from zmtf.framework.ops.string_ops import as_string, length, string_join as join
from zmtf.framework.ops.string_ops import string_to_number as to_number

__all__ = ["as_string", "join", "length", "to_number"]

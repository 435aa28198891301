"""``tf.io``: the TF 1.14+ namespace of the record and Example parsing functions (the same
functions as ``tf.parse_example``, ``tf.python_io.TFRecordWriter``, ``tf.decode_raw``)."""

from zmtf.framework.ops.parsing_ops import (
    FixedLenFeature, VarLenFeature, parse_example, parse_single_example,
)
from zmtf.framework.ops.csv_ops import decode_csv
from zmtf.framework.ops.string_ops import decode_raw
from zmtf.framework.tfrecord import TFRecordWriter, tf_record_iterator

__all__ = ["FixedLenFeature", "TFRecordWriter", "VarLenFeature", "decode_csv", "decode_raw", "parse_example",
           "parse_single_example", "tf_record_iterator"]

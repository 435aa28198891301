"""``tf.io``: the TF 1.14+ namespace of file, record and Example parsing functions (the same
functions as ``tf.read_file``, ``tf.parse_example``, ``tf.python_io.TFRecordWriter``,
``tf.decode_raw``, ``tf.gfile``)."""

from zmtf.platform import gfile
from zmtf.ops.csv_ops import decode_csv
from zmtf.ops.data_flow_ops import (
    FIFOQueue, PaddingFIFOQueue, QueueBase, RandomShuffleQueue,
)
from zmtf.ops.file_ops import (
    decode_base64, encode_base64, match_filenames_once, matching_files, read_file, write_file,
)
from zmtf.ops.parsing_ops import (
    FixedLenFeature, VarLenFeature, parse_example, parse_single_example,
)
from zmtf.ops.string_ops import decode_raw
from zmtf.formats.tfrecord import TFRecordWriter, tf_record_iterator
from zmtf.tf1.python_io import TFRecordCompressionType, TFRecordOptions
from zmtf.training.meta_graph import write_graph

__all__ = ["FIFOQueue", "FixedLenFeature", "PaddingFIFOQueue", "QueueBase", "RandomShuffleQueue",
           "TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "VarLenFeature",
           "decode_base64", "decode_csv", "decode_raw", "encode_base64", "gfile",
           "match_filenames_once", "matching_files", "parse_example", "parse_single_example",
           "read_file", "tf_record_iterator", "write_file", "write_graph"]

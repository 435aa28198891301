"""``tf.python_io``: TFRecord files written and read from Python, uncompressed or GZIP / ZLIB
(see formats/tfrecord.py and formats/record_compression.py)."""

from zmtf.formats.record_compression import TFRecordCompressionType, TFRecordOptions
from zmtf.formats.tfrecord import TFRecordWriter, tf_record_iterator

__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]

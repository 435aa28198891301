"""``tf.python_io``: TFRecord files written and read from Python (see framework/tfrecord.py)."""

from zmtf.framework.tfrecord import TFRecordWriter, tf_record_iterator


class TFRecordCompressionType:
    """TF's names for the compression kinds; zmtf reads and writes NONE only."""

    NONE = 0
    ZLIB = 1
    GZIP = 2


class TFRecordOptions:
    """Accepted for compatibility: any compression other than NONE raises NotImplementedError."""

    def __init__(self, compression_type: object = None) -> None:
        self.compression_type = compression_type


__all__ = ["TFRecordCompressionType", "TFRecordOptions", "TFRecordWriter", "tf_record_iterator"]

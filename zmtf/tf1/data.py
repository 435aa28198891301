"""``tf.data``: in-memory, generated, TFRecord, text-line and fixed-length-record datasets
and their iterators (see ops/dataset_ops.py)."""

from zmtf.ops import dataset_experimental as experimental
# Dataset's methods list_files, shard, ignore_errors, reduce and window live in these modules
from zmtf.ops import dataset_readers as _readers, dataset_reduce as _reduce  # noqa: F401
from zmtf.ops import dataset_transforms as _transforms, dataset_window as _window  # noqa: F401
from zmtf.ops.dataset_experimental import AUTOTUNE
from zmtf.ops.dataset_ops import (
    Dataset, FixedLengthRecordDataset, Iterator, TextLineDataset, TFRecordDataset,
    make_initializable_iterator, make_one_shot_iterator,
)



__all__ = ["AUTOTUNE", "Dataset", "FixedLengthRecordDataset", "Iterator", "TFRecordDataset",
           "TextLineDataset", "experimental", "make_initializable_iterator", "make_one_shot_iterator"]

"""``tf.data``: in-memory, generated, TFRecord, text-line and fixed-length-record datasets
and their iterators (see framework/ops/dataset_ops.py)."""

from zmtf.ops import dataset_experimental as experimental
from zmtf.ops.dataset_experimental import AUTOTUNE
from zmtf.ops.dataset_ops import (
    Dataset, FixedLengthRecordDataset, Iterator, TextLineDataset, TFRecordDataset,
)


def make_one_shot_iterator(dataset: Dataset) -> Iterator:
    """``tf.data.make_one_shot_iterator(dataset)`` (TF 1.13+ spelling)."""
    return dataset.make_one_shot_iterator()


def make_initializable_iterator(dataset: Dataset, shared_name: str | None = None) -> Iterator:
    """``tf.data.make_initializable_iterator(dataset)`` (TF 1.13+ spelling)."""
    return dataset.make_initializable_iterator(shared_name)


__all__ = ["AUTOTUNE", "Dataset", "FixedLengthRecordDataset", "Iterator", "TFRecordDataset",
           "TextLineDataset", "experimental", "make_initializable_iterator", "make_one_shot_iterator"]

"""The file-reading front ends of tf.data that TF1 estimators use: ``Dataset.list_files``
(the files a glob matches, shuffled unless asked not to) and
``tf.data.experimental.make_batched_features_dataset`` (files -> records -> shuffle/repeat
-> batch -> parse_example -> (features, label)), composed of the existing stages exactly as
TF composes them, so the order with ``shuffle=False`` is TF's.
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import get_default_graph
from zmtf.ops.array_ops import identity, size
from zmtf.ops.check_ops import assert_
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.dataset_ops import Dataset, TFRecordDataset, register_extension
from zmtf.ops.file_ops import matching_files
from zmtf.ops.math_ops import greater
from zmtf.ops.parsing_ops import parse_example
from zmtf.ops.string_ops import string_join
from zmtf.ops.text_ops import reduce_join

#: files are few: a shuffle buffer this large holds all of them, as TF's (their count) does
_ALL_FILES = 1 << 30


@register_extension
def list_files(file_pattern: Any, shuffle: bool | None = None, seed: int | None = None,
               name: str | None = None) -> Dataset:
    """The file names matching ``file_pattern`` (a glob, or a list of them), sorted, in a
    random order unless ``shuffle=False``; none matching is TF's InvalidArgumentError
    "No files matched pattern" when the iterator reads them."""
    graph = get_default_graph()
    with graph.name_scope(name or "list_files"):
        pattern = convert_to_tensor(file_pattern, dtype=dtypes.string, name="file_pattern")
        matches = matching_files(pattern, name="match_files")
        matched = greater(size(matches), 0, name="match_not_empty")
        message = string_join(["No files matched pattern: ",
                               reduce_join(pattern, separator=", ")], name="message")
        check = assert_(matched, [message], name="assert_not_empty")
        with graph.control_dependencies([check]):
            matches = identity(matches)
    dataset = Dataset.from_tensor_slices(matches)
    return dataset.shuffle(_ALL_FILES, seed=seed) if shuffle is None or shuffle else dataset


def make_batched_features_dataset(
        file_pattern: Any, batch_size: int, features: dict[str, Any],
        reader: Callable[..., Dataset] | None = None, label_key: str | None = None,
        reader_args: Any = None, num_epochs: int | None = None, shuffle: bool = True,
        shuffle_buffer_size: int = 10000, shuffle_seed: int | None = None,
        prefetch_buffer_size: Any = None, reader_num_threads: Any = None,
        parser_num_threads: Any = None, sloppy_ordering: bool = False,
        drop_final_batch: bool = False) -> Dataset:
    """Batches of parsed Examples: a dict of ``features`` (dense [batch, *shape] tensors and
    SparseTensors for VarLenFeatures), or ``(features, label)`` with ``label_key``. Files are
    read one after the other (``reader_num_threads`` > 1: interleaved one record at a time,
    TF's deterministic order); ``num_epochs=None`` repeats forever."""
    if label_key is not None and label_key not in features:
        raise ValueError(f"The `label_key` provided ({label_key}) must be one of the "
                         f"`features` keys: {features.keys()}.")
    read = reader or TFRecordDataset
    files = list_files(file_pattern, shuffle=shuffle, seed=shuffle_seed)
    threads = 1 if reader_num_threads is None else int(reader_num_threads)
    records = (files.flat_map(lambda name: read(name, *(reader_args or []))) if 0 <= threads <= 1
               else files.interleave(lambda name: read(name, *(reader_args or [])),
                                     cycle_length=threads, block_length=1))
    if records.output_types == (dtypes.string, dtypes.string):   # (key, value) readers
        records = records.map(lambda _key, value: value)
    if shuffle:
        records = records.shuffle(shuffle_buffer_size, shuffle_seed)
    if num_epochs != 1:
        records = records.repeat(num_epochs)
    batches = records.batch(batch_size, drop_remainder=drop_final_batch)
    parsed = batches.map(lambda serialized: parse_example(serialized, features))
    if label_key is None:
        return parsed
    return parsed.map(lambda example: ({k: v for k, v in example.items() if k != label_key},
                                       example[label_key]))

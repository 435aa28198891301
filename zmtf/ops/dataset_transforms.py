"""The tf.data stages distributed input pipelines add: ``Dataset.shard`` (each worker of a
between-graph replica reads its own slice: ``dataset.shard(num_workers, task_index)``) and
``tf.data.experimental.ignore_errors`` (elements whose computation failed are dropped).

Both are plain pipeline stages (see dataset_ops.py); shard's two arguments are int64
tensors the iterator op takes after its sources, like a padding value, so a placeholder
may be fed to the initializer and the range checks are TF's run-time InvalidArgumentError.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.dataset_ops import Dataset, register_extension


def _int64_scalar(value: Any, name: str) -> Tensor:
    """``value`` as TF converts shard's arguments: an int64 scalar, or TF's build error."""
    if isinstance(value, float):
        raise TypeError(f"Expected int64, but got {value!r} of type '{type(value).__name__}'.")
    try:
        tensor = convert_to_tensor(value, dtype=dtypes.int64, name=name)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if tensor.shape.ndims not in (None, 0):
        raise ValueError(f"Shape must be rank 0 but is rank {tensor.shape.ndims} for "
                         f"'ShardDataset' ({name} {tensor.name})")
    return tensor


@register_extension
def shard(dataset: Dataset, num_shards: Any, index: Any) -> Dataset:
    """Every ``num_shards``-th element, starting at the ``index``-th (element i is kept when
    i % num_shards == index). Pending maps stay pending: shard only selects elements."""
    from zmtf.ops.dataset_ops import Dataset

    count, position = _int64_scalar(num_shards, "num_shards"), _int64_scalar(index, "index")
    captures = list(dataset._captures)
    slots = []
    for tensor in (count, position):
        slots.append(len(captures))
        captures.append(tensor)
    return Dataset(dataset._structure, dataset._sources, dataset._stages + [["shard", *slots]],
                   dataset._shapes, dataset._maps, dataset._types, tuple(captures))


@register_extension
def ignore_errors(dataset: Dataset, log_warning: bool = False) -> Dataset:
    """The elements whose computation (a map or filter function) raised no error: the
    failing ones are dropped instead of ending the iteration (any error but
    CancelledError, as in TF)."""
    return dataset._maps_as_stages()._then(["ignore_errors", bool(log_warning)])

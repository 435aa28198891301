"""TF1's variable partitioners: functions ``(shape=TensorShape, dtype=DType) -> [shards per
dimension]`` for get_variable / variable_scope ``partitioner=``, which cut a large variable
into "<name>/part_<i>" shards (placed on ps tasks one by one by replica_device_setter), and
the deprecated ``create_partitioned_variables``."""

from __future__ import annotations

import math
from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.tensor_shape import TensorShape
from zmtf.ops.variable_scope import get_variable_at, variable_scope

Partitioner = Callable[..., list[int]]


def _element_bytes(dtype: Any, bytes_per_string_element: int) -> int:
    dtype = dtypes.as_dtype(dtype)
    return bytes_per_string_element if dtype.base_dtype == dtypes.string else dtype.size


def variable_axis_size_partitioner(max_shard_bytes: int, axis: int = 0,
                                   bytes_per_string_element: int = 16,
                                   max_shards: int | None = None) -> Partitioner:
    """Shards along ``axis`` of at most ``max_shard_bytes`` each (at least one slice of the
    axis per shard, so a shard can be larger), at most ``max_shards`` of them."""
    if max_shard_bytes < 1 or bytes_per_string_element < 1:
        raise ValueError("Both max_shard_bytes and bytes_per_string_element must be positive. "
                         f"Currently, max_shard_bytes is {max_shard_bytes} and"
                         f"bytes_per_string_element is {bytes_per_string_element}")
    if max_shards and max_shards < 1:
        raise ValueError("max_shards must be positive.")

    def partitioner(shape: Any, dtype: Any) -> list[int]:
        if not isinstance(shape, TensorShape):
            raise ValueError(f"shape is not a TensorShape: {shape}")
        if not shape.is_fully_defined():
            raise ValueError(f"shape is not fully defined: {shape}")
        dims = shape.as_list()
        bytes_per_slice = 1.0 * (shape.num_elements() / dims[axis]) * _element_bytes(
            dtype, bytes_per_string_element)
        slices_per_shard = max(1, math.floor(max_shard_bytes / bytes_per_slice))
        axis_shards = int(math.ceil(1.0 * dims[axis] / slices_per_shard))
        if max_shards:
            axis_shards = min(max_shards, axis_shards)
        partitions = [1] * len(dims)
        partitions[axis] = axis_shards
        return partitions

    return partitioner


def min_max_variable_partitioner(max_partitions: int = 1, axis: int = 0,
                                 min_slice_size: int = 256 << 10,
                                 bytes_per_string_element: int = 16) -> Partitioner:
    """As many shards along ``axis`` as keep each at least ``min_slice_size`` bytes, at most
    ``max_partitions`` and at most the axis' length, at least 1."""

    def partitioner(shape: Any, dtype: Any) -> list[int]:
        shape = shape if isinstance(shape, TensorShape) else TensorShape(shape)
        dims = shape.as_list()
        if axis >= len(dims):
            raise ValueError(f"Cannot partition variable along axis {axis} when shape is "
                             f"only {shape}")
        total_bytes = shape.num_elements() * _element_bytes(dtype, bytes_per_string_element)
        partitions = [1] * len(dims)
        partitions[axis] = max(1, min(dims[axis], max_partitions,
                                      int(math.ceil(total_bytes / min_slice_size))))
        return partitions

    return partitioner


def create_partitioned_variables(shape: Any, slicing: Any, initializer: Any,
                                 dtype: Any = dtypes.float32, trainable: bool = True,
                                 collections: Any = None, name: str | None = None,
                                 reuse: Any = None) -> list[Any]:
    """The shards ("<name>/part_<i>") of a variable of ``shape`` cut as ``slicing`` says
    (deprecated in TF1 for get_variable with a partitioner)."""
    if len(shape) != len(slicing):
        raise ValueError("The 'shape' and 'slicing' of a partitioned Variable must have the "
                         f"length: shape: {shape}, slicing: {slicing}")
    if len(shape) < 1:
        raise ValueError(f"A partitioned Variable must have rank at least 1: shape: {shape}")
    with variable_scope(name, "PartitionedVariable", reuse=reuse) as scope:
        whole = get_variable_at(scope.name, shape, dtype, initializer, trainable=trainable,
                                collections=collections,
                                partitioner=lambda **_: list(slicing))
        return list(whole)


def no_regularizer(_: Any) -> None:
    """A regularizer that adds no loss: turns off a variable scope's regularizer for one
    get_variable call."""
    return None

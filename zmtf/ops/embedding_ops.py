"""tf.nn.embedding_lookup: rows of one tensor, or of shards (a list or a PartitionedVariable).

With shards, as in TF: the ids are split by shard with ``dynamic_partition``, each shard
gathers its own rows in a gather colocated with it (on its ps task), and ``dynamic_stitch``
puts the rows back in the ids' order. Only the looked-up rows leave a shard's task, and each
shard's gradient is an IndexedSlices of its rows, so the optimizer updates those rows there.
``partition_strategy="mod"`` (TF's default) puts id i in shard ``i % n`` at row ``i // n``;
``"div"`` gives each shard a contiguous range (the first ``N % n`` one row more, as
``fixed_size_partitioner`` makes them).
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.partition_ops import dynamic_partition, dynamic_stitch
from zmtf.ops.selection_ops import gather, where


def embedding_lookup(params: Any, ids: Any, partition_strategy: str = "mod", name: str | None = None,
                     validate_indices: bool = True, max_norm: Any = None) -> Any:
    if max_norm is not None:
        raise ValueError("embedding_lookup: max_norm is not supported in zmtf")
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"embedding_lookup: partition_strategy must be 'mod' or 'div', got "
                         f"{partition_strategy!r}")
    shards = list(params) if isinstance(params, (list, tuple)) or hasattr(params, "_get_variable_list") \
        else [params]
    if not shards:
        raise ValueError("embedding_lookup: params is empty")
    graph = get_default_graph()
    with graph.name_scope(name or "embedding_lookup"):
        ids_t = convert_to_tensor(ids)
        if len(shards) == 1:
            with graph.colocate_with(_op_of(shards[0])):
                return gather(shards[0], ids_t)
        tensors = [convert_to_tensor(s) for s in shards]
        sizes = [t.shape.as_list()[0] if t.shape.ndims else None for t in tensors]
        if any(s is None for s in sizes):
            raise ValueError(f"embedding_lookup: every shard's first dimension must be known, got {sizes}")
        n = len(tensors)
        _check_sizes(sizes, partition_strategy)
        flat = math_ops.cast(array_ops.reshape(ids_t, [-1]), "int64")
        shard, row = _assign(flat, sizes, partition_strategy)
        shard = math_ops.cast(shard, "int32")
        rows = dynamic_partition(row, shard, n)
        positions = dynamic_partition(math_ops.cumsum(array_ops.ones_like(shard)) - 1, shard, n)
        found = []
        for p, (tensor, source) in enumerate(zip(tensors, shards)):
            with graph.colocate_with(_op_of(source)):   # the gather runs where the shard lives
                found.append(gather(tensor, rows[p]))
        merged = dynamic_stitch(positions, found)
        rest = tensors[0].shape.as_list()[1:] if tensors[0].shape.ndims else None
        if ids_t.shape.ndims == 1:
            return merged
        out_shape = array_ops.concat([array_ops.shape(ids_t), array_ops.shape(merged)[1:]], 0)
        result = array_ops.reshape(merged, out_shape)
        if ids_t.shape.ndims is not None and rest is not None:
            result.set_shape(ids_t.shape.as_list() + rest)
        return result


def _op_of(param: Any) -> Any:
    """What a shard's gather is colocated with: its variable (or the tensor's op)."""
    return param.op if hasattr(param, "op") else convert_to_tensor(param).op


def _check_sizes(sizes: list[int], strategy: str) -> None:
    total, n = sum(sizes), len(sizes)
    if strategy == "div":
        expected = [total // n + (1 if i < total % n else 0) for i in range(n)]
        if sizes != expected:
            raise ValueError(f"embedding_lookup(partition_strategy='div'): shard sizes {sizes} are "
                             f"not TF's contiguous split {expected} of {total} rows")
    elif max(sizes) - min(sizes) > 1 or sorted(sizes, reverse=True) != sizes:
        raise ValueError(f"embedding_lookup(partition_strategy='mod'): shard sizes {sizes} cannot "
                         f"hold ids assigned round robin")


def _assign(ids: Any, sizes: list[int], strategy: str) -> tuple[Any, Any]:
    """(shard, row in that shard) of each id, TF's formulas."""
    n = len(sizes)
    if strategy == "mod":
        return math_ops.floormod(ids, n), math_ops.floordiv(ids, n)
    total = sum(sizes)
    per, extras = total // n, total % n
    big = math_ops.floordiv(ids, per + 1)                   # shards 0..extras-1 hold per+1 rows
    small = math_ops.floordiv(ids - extras, per) if per else big
    shard = math_ops.maximum(big, small)
    row = where(shard < extras, math_ops.floormod(ids, per + 1),
                math_ops.floormod(ids - extras, per) if per else math_ops.floormod(ids, per + 1))
    return shard, row

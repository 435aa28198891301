"""tf.nn.embedding_lookup: rows of one tensor, or of shards (a list or a PartitionedVariable).

With shards, the rows are looked up in their concatenation: for ``partition_strategy="div"``
id i is row i of it (shards hold contiguous ranges, the first ``N % n`` one row more, as
``fixed_size_partitioner`` makes them); for ``"mod"`` (TF's default) id i lives in shard
``i % n`` at row ``i // n``, i.e. at ``offset[i % n] + i // n``. Gradients flow back densely
through the gather and the concatenation into each shard.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.graph import get_default_graph
from zmtf.framework.ops import array_ops, math_ops
from zmtf.framework.ops.constant_op import constant, convert_to_tensor
from zmtf.framework.ops.selection_ops import gather


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
    with get_default_graph().name_scope(name or "embedding_lookup"):
        ids_t = convert_to_tensor(ids)
        if len(shards) == 1:
            return gather(shards[0], ids_t)
        tensors = [convert_to_tensor(s) for s in shards]
        sizes = [t.shape.as_list()[0] if t.shape.ndims else None for t in tensors]
        if any(s is None for s in sizes):
            raise ValueError(f"embedding_lookup: every shard's first dimension must be known, got {sizes}")
        table = array_ops.concat(tensors, 0)
        n = len(tensors)
        if partition_strategy == "div":
            total = sum(sizes)
            expected = [total // n + (1 if i < total % n else 0) for i in range(n)]
            if sizes != expected:
                raise ValueError(f"embedding_lookup(partition_strategy='div'): shard sizes {sizes} are "
                                 f"not TF's contiguous split {expected} of {total} rows")
            return gather(table, ids_t)
        if max(sizes) - min(sizes) > 1 or sorted(sizes, reverse=True) != sizes:
            raise ValueError(f"embedding_lookup(partition_strategy='mod'): shard sizes {sizes} cannot "
                             f"hold ids assigned round robin")
        offsets = constant(np.cumsum([0] + sizes[:-1]).astype(np.int64), name="shard_offsets")
        ids64 = math_ops.cast(ids_t, "int64")
        shard = math_ops.floormod(ids64, n)
        rows = math_ops.add(gather(offsets, shard), math_ops.floordiv(ids64, n))
        return gather(table, rows)

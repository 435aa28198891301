"""Gradients of the sparse-index ops, as TF builds them (dense: zmtf has no IndexedSlices).

DynamicPartition partitions the positions of the rows the same way and stitches the
incoming gradients back to them; DynamicStitch gathers the gradient at each input's
indices (an overwritten duplicate gets a gradient too, as in TF); UnsortedSegmentSum
gathers by segment id, with zeros for the dropped (negative) ids.
"""

from __future__ import annotations

import numpy as np

from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.math_grad import shape_of
from zmtf.ops.partition_ops import dynamic_partition, dynamic_stitch
from zmtf.ops.scatter_ops import SCATTER_OPS
from zmtf.ops.selection_ops import gather, where

Grads = list[Tensor | None]

not_differentiable("InvertPermutation", *SCATTER_OPS)


def _positions_like(partitions: Tensor) -> Tensor:
    """int32 ``0..n-1`` in the shape of ``partitions``: where each row of the data came from."""
    if partitions.shape.is_fully_defined():
        dims = partitions.shape.as_list()
        return constant(np.arange(int(np.prod(dims)), dtype=np.int32).reshape(dims))
    flat = array_ops.reshape(partitions, [-1])
    counts = math_ops.cumsum(array_ops.ones_like(flat), exclusive=True)
    return array_ops.reshape(counts, array_ops.shape(partitions))


@gradient("DynamicPartition")
def _dynamic_partition_grads(op: Operation, *grads: Tensor) -> Grads:
    data, partitions = op.inputs
    positions = dynamic_partition(_positions_like(partitions), partitions,
                                  op.attrs["num_partitions"])
    stitched = dynamic_stitch(positions, list(grads))
    return [array_ops.reshape(stitched, shape_of(data)), None]


@gradient("DynamicStitch")
def _dynamic_stitch_grads(op: Operation, grad: Tensor) -> Grads:
    n = op.attrs["N"]
    return [None] * n + [gather(grad, indices) for indices in op.inputs[:n]]


@gradient("UnsortedSegmentSum")
def _unsorted_segment_sum_grad(op: Operation, grad: Tensor) -> Grads:
    data, segment_ids = op.inputs[0], op.inputs[1]
    ids = array_ops.reshape(segment_ids, [-1])
    zero = constant(0, dtype=ids.dtype)
    gathered = gather(grad, math_ops.maximum(ids, zero))
    # a vector condition selects whole rows: the rows of dropped ids get exact zeros
    kept = where(math_ops.greater_equal(ids, zero), gathered, array_ops.zeros_like(gathered))
    return [array_ops.reshape(kept, shape_of(data)), None, None]


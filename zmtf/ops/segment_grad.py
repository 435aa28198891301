"""Gradients of the segment reductions, as TF's math_grad.py builds them.

Sum and mean send each segment's gradient back to its rows (mean divided by the row count).
Max and min send it to the rows that hold the extreme value, split evenly among ties.
Prod sends ``product / x`` where x is not zero; a row that is the only zero of its segment
gets the product of the others, and a segment with two zeros passes nothing back.
The unsorted ops work on data seen as rows (one per flattened id); a row with a negative id
was dropped, so it gets zeros.
"""

from __future__ import annotations

from typing import Callable

from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.math_grad import shape_of
from zmtf.ops.partition_ops import unsorted_segment_sum
from zmtf.ops.segment_ops import segment_prod, segment_sum, unsorted_segment_prod
from zmtf.ops.selection_ops import gather, where

Grads = list[Tensor | None]
Reduce = Callable[[Tensor], Tensor]


def _inner_rank(data: Tensor, segment_ids: Tensor, op: Operation) -> int:
    if data.shape.ndims is None or segment_ids.shape.ndims is None:
        raise InvalidArgumentError(f"the gradient of {op.type} '{op.name}' needs data and "
                                   f"segment_ids of known rank in zmtf, got {data.shape} and "
                                   f"{segment_ids.shape}")
    return data.shape.ndims - segment_ids.shape.ndims


def _per_row(values: Tensor, inner_rank: int) -> Tensor:
    """A vector, one entry per row, shaped to broadcast against rows of ``inner_rank`` dims."""
    return array_ops.reshape(values, [-1] + [1] * inner_rank)


@gradient("SegmentSum")
def _segment_sum_grad(op: Operation, grad: Tensor) -> Grads:
    return [gather(grad, op.inputs[1]), None]


@gradient("SegmentMean")
def _segment_mean_grad(op: Operation, grad: Tensor) -> Grads:
    data, ids = op.inputs
    counts = segment_sum(array_ops.ones_like(ids, dtype=grad.dtype), ids)
    return [gather(grad / _per_row(counts, _inner_rank(data, ids, op)), ids), None]


@gradient("SegmentMax", "SegmentMin")
def _segment_min_or_max_grad(op: Operation, grad: Tensor) -> Grads:
    data, ids = op.inputs
    is_selected = math_ops.equal(data, gather(op.outputs[0], ids))
    ties = segment_sum(math_ops.cast(is_selected, grad.dtype), ids)
    shared = gather(grad / ties, ids)
    return [where(is_selected, shared, array_ops.zeros_like(shared)), None]


@gradient("SegmentProd")
def _segment_prod_grad(op: Operation, grad: Tensor) -> Grads:
    data, ids = op.inputs
    return [_prod_grad(data, ids, op.outputs[0], grad, lambda x: segment_sum(x, ids),
                       lambda x: segment_prod(x, ids)), None]


def _prod_grad(data: Tensor, ids: Tensor, product: Tensor, grad: Tensor,
               summed: Reduce, multiplied: Reduce) -> Tensor:
    """TF's product gradient, exact with zeros; ``summed``/``multiplied`` reduce rows by segment."""
    is_zero = math_ops.equal(data, array_ops.zeros_like(data))
    zeros_per_segment = summed(math_ops.cast(is_zero, grad.dtype))
    one = constant(1, dtype=grad.dtype)
    grad = where(math_ops.greater(zeros_per_segment, one), array_ops.zeros_like(grad), grad)
    non_zero = where(is_zero, array_ops.ones_like(data), data)
    others_if_zero = gather(multiplied(non_zero), ids)
    derivative = where(is_zero, others_if_zero, gather(product, ids) / non_zero)
    return gather(grad, ids) * derivative


# ---- unsorted: rows of data, one per flattened id ---------------------------------------------
def _rows(x: Tensor, ids: Tensor, inner_rank: int) -> Tensor:
    if x.shape.is_fully_defined():
        inner = x.shape.as_list()[x.shape.ndims - inner_rank:]
        return array_ops.reshape(x, [-1] + inner)
    inner_shape = array_ops.shape(x)[x.shape.ndims - inner_rank:]
    return array_ops.reshape(x, array_ops.concat([constant([-1]), inner_shape], 0))


def _gather_kept(params: Tensor, flat_ids: Tensor) -> Tensor:
    """params[id] for each id, zeros for the rows whose negative id dropped them."""
    zero = constant(0, dtype=flat_ids.dtype)
    gathered = gather(params, math_ops.maximum(flat_ids, zero))
    kept = math_ops.greater_equal(flat_ids, zero)   # a vector condition selects whole rows
    return where(kept, gathered, array_ops.zeros_like(gathered))


@gradient("UnsortedSegmentMax", "UnsortedSegmentMin")
def _unsorted_min_or_max_grad(op: Operation, grad: Tensor) -> Grads:
    data, ids, num_segments = op.inputs
    inner = _inner_rank(data, ids, op)
    flat_ids, rows = array_ops.reshape(ids, [-1]), _rows(data, ids, inner)
    zero = constant(0, dtype=flat_ids.dtype)
    kept = math_ops.logical_and(
        math_ops.equal(rows, _gather_kept(op.outputs[0], flat_ids)),
        _per_row(math_ops.greater_equal(flat_ids, zero), inner))
    ties = unsorted_segment_sum(math_ops.cast(kept, grad.dtype), flat_ids, num_segments)
    shared = _gather_kept(grad / ties, flat_ids)
    row_grads = where(kept, shared, array_ops.zeros_like(shared))
    return [array_ops.reshape(row_grads, shape_of(data)), None, None]


@gradient("UnsortedSegmentProd")
def _unsorted_segment_prod_grad(op: Operation, grad: Tensor) -> Grads:
    data, ids, num_segments = op.inputs
    inner = _inner_rank(data, ids, op)
    flat_ids, rows = array_ops.reshape(ids, [-1]), _rows(data, ids, inner)
    zero = constant(0, dtype=flat_ids.dtype)
    kept_ids = math_ops.maximum(flat_ids, zero)

    row_grads = _prod_grad(rows, kept_ids, op.outputs[0], grad,
                           lambda x: unsorted_segment_sum(x, flat_ids, num_segments),
                           lambda x: unsorted_segment_prod(x, flat_ids, num_segments))
    kept = math_ops.greater_equal(flat_ids, zero)
    row_grads = where(kept, row_grads, array_ops.zeros_like(row_grads))
    return [array_ops.reshape(row_grads, shape_of(data)), None, None]

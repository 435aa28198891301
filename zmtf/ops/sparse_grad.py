"""Gradients of the SparseTensor ops, as TF's sparse_grad.py builds them.

Only the values of a SparseTensor take a gradient (its indices and dense shape are ints); the
gradient of the values is a dense vector, one entry per value.
"""

from __future__ import annotations

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op
from zmtf.ops import array_ops, math_ops
from zmtf.ops.composite_ops import range_
from zmtf.ops.partition_ops import invert_permutation
from zmtf.ops.selection_ops import gather
from zmtf.ops.sequence_ops import gather_nd
from zmtf.ops.sparse_ops import sparse_reorder
from zmtf.framework.sparse_tensor import SparseTensor

Grads = list[Tensor | None]

not_differentiable("SparseConcat", "SparseAddGrad", "SparseSliceGrad", "SparseReshape")


@gradient("SparseToDense")
def _sparse_to_dense_grad(op: Operation, grad: Tensor) -> Grads:
    indices = op.inputs[0]
    values_grad = gather_nd(grad, array_ops.reshape(indices, [-1, 1]) if indices.shape.ndims == 1
                            else indices)
    if op.inputs[2].shape.ndims == 0:   # one scalar value spread over every index
        values_grad = math_ops.reduce_sum(values_grad)
    default_grad = math_ops.reduce_sum(grad) - math_ops.reduce_sum(values_grad)
    return [None, None, values_grad, default_grad]


@gradient("SparseTensorDenseMatMul")
def _sparse_dense_matmul_grad(op: Operation, grad: Tensor) -> Grads:
    indices, values, shape, b = op.inputs
    adj_a, adj_b = op.get_attr("adjoint_a"), op.get_attr("adjoint_b")
    b_grad = apply_op("SparseTensorDenseMatMul", [indices, values, shape, grad],
                      {"adjoint_a": not adj_a, "adjoint_b": False}).outputs[0]
    if adj_b:
        b_grad = array_ops.transpose(b_grad)
    rows, cols = indices[:, 0], indices[:, 1]
    parts_a = gather(grad, cols if adj_a else rows)              # grad rows at each entry's output
    parts_b = gather(array_ops.transpose(b) if adj_b else b, rows if adj_a else cols)
    values_grad = math_ops.reduce_sum(parts_a * parts_b, axis=1)
    return [None, values_grad, None, b_grad]


@gradient("SparseReduceSum")
def _sparse_reduce_sum_grad(op: Operation, grad: Tensor) -> Grads:
    """Each value gets the gradient of the output element it was summed into."""
    indices, _, shape, axes = op.inputs
    rank = array_ops.size(shape)
    axes64 = math_ops.cast(math_ops.floormod(axes, rank), dtypes.int64)
    is_reduced = math_ops.reduce_any(math_ops.equal(
        array_ops.expand_dims(math_ops.cast(_iota(rank), dtypes.int64), 1),
        array_ops.expand_dims(array_ops.reshape(axes64, [-1]), 0)), axis=1)
    kept_shape = shape - math_ops.cast(is_reduced, dtypes.int64) * (shape - 1)   # reduced dims: 1
    grad_kept = array_ops.reshape(grad, kept_shape)
    out_index = indices * (1 - math_ops.cast(is_reduced, dtypes.int64))
    return [None, gather_nd(grad_kept, out_index), None, None]


def _iota(count: Tensor) -> Tensor:
    return range_(count)


@gradient("SparseTensorDenseAdd")
def _sparse_dense_add_grad(op: Operation, grad: Tensor) -> Grads:
    return [None, gather_nd(grad, op.inputs[0]), None, grad]


@gradient("SparseAdd")
def _sparse_add_grad(op: Operation, *grads: Tensor) -> Grads:
    a_grad, b_grad = apply_op("SparseAddGrad", [grads[1], op.inputs[0], op.inputs[3],
                                                op.outputs[0]]).outputs
    a_grad.set_shape(op.inputs[1].shape)
    b_grad.set_shape(op.inputs[4].shape)
    return [None, a_grad, None, None, b_grad, None, None]


@gradient("SparseReorder")
def _sparse_reorder_grad(op: Operation, _indices_grad: Tensor, values_grad: Tensor) -> Grads:
    indices, _, shape = op.inputs
    entries = _iota(array_ops.shape(indices)[0])
    ordered = sparse_reorder(SparseTensor(indices, entries, shape))
    return [None, gather(values_grad, invert_permutation(ordered.values)), None]


@gradient("SparseFillEmptyRows")
def _sparse_fill_empty_rows_grad(op: Operation, _indices_grad: Tensor, values_grad: Tensor,
                                 *_unused: Tensor) -> Grads:
    """Input values get their output entry's gradient; the default gets the rest."""
    picked = gather(values_grad, op.outputs[3])
    return [None, picked, None, math_ops.reduce_sum(values_grad) - math_ops.reduce_sum(picked)]


@gradient("SparseSlice")
def _sparse_slice_grad(op: Operation, *grads: Tensor) -> Grads:
    values_grad = apply_op("SparseSliceGrad", [grads[1], op.inputs[0], op.inputs[3],
                                               op.outputs[0]]).outputs[0]
    values_grad.set_shape(op.inputs[1].shape)
    return [None, values_grad, None, None, None]

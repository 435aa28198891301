"""``tf.sparse``: the SparseTensor ops under the namespace TF 1.13+ scripts use
(``tf.sparse.to_dense``, ``tf.sparse.reorder``, ``tf.sparse.sparse_dense_matmul``, ...)."""

from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.ops.sparse_math_ops import (
    sparse_add as add, sparse_reduce_sum as reduce_sum,
    sparse_tensor_dense_matmul as sparse_dense_matmul,
)
from zmtf.ops.sparse_cross_ops import sparse_cross as cross, sparse_cross_hashed as cross_hashed
from zmtf.ops.sparse_ops import (
    sparse_concat as concat, sparse_fill_empty_rows as fill_empty_rows, sparse_slice as slice,  # noqa: A004
    sparse_mask as mask, sparse_placeholder as placeholder, sparse_reorder as reorder,
    sparse_reshape as reshape, sparse_retain as retain, sparse_tensor_to_dense as to_dense,
)

__all__ = ["SparseTensor", "add", "concat", "cross", "cross_hashed", "fill_empty_rows", "mask", "reduce_sum", "slice",
           "sparse_dense_matmul", "placeholder", "reorder", "reshape", "retain", "to_dense"]

"""``tf.sets``: ``set_intersection``, ``set_union``, ``set_difference`` and ``set_size`` over
the last axis of dense tensors and SparseTensors (each row of the last axis is one set). The
results are SparseTensors whose rows hold the set's elements in ascending order, as TF's; the
last dimension of their dense_shape is the largest set's size. Not differentiable, as in TF.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.sparse_tensor import SparseTensor, is_sparse, convert_to_sparse
from zmtf.framework.tensor_shape import TensorShape

#: the element dtypes TF's set kernels take
_VALID = (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
          dtypes.string)
_SET_OPS = ("DenseToDenseSetOperation", "DenseToSparseSetOperation", "SparseToSparseSetOperation")
STRING_INPUT_OPS.update(_SET_OPS + ("SetSize",))


def _rank_of(part: Tensor, dense: bool) -> int | None:
    """A dense operand's rank, or a sparse one's (the length of its dense_shape)."""
    rank = part.shape.ndims if dense else part.shape.as_list()[0] if part.shape.ndims else None
    if rank is not None and rank < 2:
        raise ValueError(f"Shape must be at least rank 2 but is rank {rank} for a set operand "
                         f"({part.name}): sets are the rows of the last axis")
    return rank


@op_def(*_SET_OPS)
def _set_operation_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    op_type = attrs["_op_type"]
    first_dense = op_type != "SparseToSparseSetOperation"
    a = inputs[0] if first_dense else inputs[2]
    b = inputs[1] if op_type == "DenseToDenseSetOperation" else inputs[-1]
    ranks = {r for r in (_rank_of(a, first_dense), _rank_of(b, op_type == "DenseToDenseSetOperation"))
             if r is not None}
    if len(ranks) > 1:
        raise ValueError(f"Dimension must be {min(ranks)} but is {max(ranks)} for '{op_type}': "
                         f"both sets need one rank")
    if op_type == "DenseToDenseSetOperation" and a.shape.ndims and b.shape.ndims:
        try:
            TensorShape(a.shape.as_list()[:-1]).merge_with(TensorShape(b.shape.as_list()[:-1]))
        except ValueError as error:
            raise ValueError(f"{error} for '{op_type}' with input shapes: {a.shape}, {b.shape}: "
                             f"all but the last dimension must agree") from None
    rank = ranks.pop() if ranks else None
    values = inputs[0] if first_dense else inputs[1]
    return [(dtypes.int64, TensorShape([None, rank])), (values.dtype, TensorShape([None])),
            (dtypes.int64, TensorShape([rank]))]


@op_def("SetSize")
def _set_size_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int32, TensorShape(None))]


not_differentiable(*_SET_OPS, "SetSize")


def _operand(value: Any, what: str) -> Tensor | SparseTensor:
    return convert_to_sparse(value, what) if is_sparse(value) else convert_to_tensor(value, name=what)


def _operands(a: Any, b: Any) -> tuple[Any, Any, bool]:
    """(a, b, flipped): a sparse a with a dense b is swapped, as TF only has dense-sparse."""
    a = _operand(a, "a")
    if a.dtype not in _VALID:
        raise TypeError(f"'a' has invalid dtype `{a.dtype}` not in supported dtypes: "
                        f"{', '.join(d.name for d in _VALID)}")
    b = _operand(b, "b")
    if b.dtype != a.dtype:
        raise TypeError(f"Types don't match, {a.dtype} vs {b.dtype}.")
    if isinstance(a, SparseTensor) and not isinstance(b, SparseTensor):
        return b, a, True
    return a, b, False


def _sparse_parts(x: SparseTensor) -> list[Tensor]:
    return [x.indices, x.values, x.dense_shape]


def _set_operation(a: Any, b: Any, operation: str, validate_indices: bool) -> SparseTensor:
    if isinstance(a, SparseTensor):
        op_type, inputs = "SparseToSparseSetOperation", _sparse_parts(a) + _sparse_parts(b)
    elif isinstance(b, SparseTensor):
        op_type, inputs = "DenseToSparseSetOperation", [a] + _sparse_parts(b)
    else:
        op_type, inputs = "DenseToDenseSetOperation", [a, b]
    attrs = {"_op_type": op_type, "set_operation": operation,
             "validate_indices": bool(validate_indices)}
    indices, values, shape = apply_op(op_type, inputs, attrs, name=op_type).outputs
    return SparseTensor(indices, values, shape)


def set_intersection(a: Any, b: Any, validate_indices: bool = True) -> SparseTensor:
    """The elements in both a's and b's set, row by row."""
    a, b, _ = _operands(a, b)
    return _set_operation(a, b, "intersection", validate_indices)


def set_union(a: Any, b: Any, validate_indices: bool = True) -> SparseTensor:
    """The elements in a's or b's set, row by row."""
    a, b, _ = _operands(a, b)
    return _set_operation(a, b, "union", validate_indices)


def set_difference(a: Any, b: Any, aminusb: bool = True, validate_indices: bool = True) -> SparseTensor:
    """a's elements not in b (b's not in a with ``aminusb=False``), row by row."""
    a, b, flipped = _operands(a, b)
    return _set_operation(a, b, "a-b" if aminusb != flipped else "b-a", validate_indices)


def set_size(a: Any, validate_indices: bool = True) -> Tensor:
    """The number of distinct elements in each row of the SparseTensor a (int32, of a's shape
    without its last axis)."""
    if not is_sparse(a):
        raise TypeError(f"Expected `SparseTensor`, got {a}.")
    a = convert_to_sparse(a, "set_size")
    if a.dtype not in _VALID:
        raise TypeError(f"Invalid dtype `{a.dtype}` not in supported dtypes: "
                        f"{', '.join(d.name for d in _VALID)}")
    attrs = {"validate_indices": bool(validate_indices)}
    return apply_op("SetSize", _sparse_parts(a), attrs, name="SetSize").outputs[0]

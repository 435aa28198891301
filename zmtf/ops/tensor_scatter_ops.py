"""tf.tensor_scatter_nd_update / add / sub / max / min (and TF1's tensor_scatter_update /
add / sub): a copy of a tensor with the elements or slices at N-d indices replaced or
combined, with TF's gradients."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.scatter_ops import nd_updates_shape
from zmtf.ops.sequence_ops import gather_nd, scatter_nd

TENSOR_SCATTER_OPS = ("TensorScatterUpdate", "TensorScatterAdd", "TensorScatterSub",
                      "TensorScatterMax", "TensorScatterMin")


@op_def(*TENSOR_SCATTER_OPS)
def _tensor_scatter_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    tensor, indices, updates = inputs
    if indices.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"indices must be int32 or int64, got {indices.dtype.name}")
    expected = nd_updates_shape(tensor.shape, indices.shape)
    if expected is not None and not updates.shape.is_compatible_with(expected):
        raise ValueError(f"updates.shape {updates.shape} must be indices.shape[:-1] + "
                         f"tensor.shape[indices.shape[-1]:] = {expected}")
    return [(tensor.dtype, tensor.shape)]


def _tensor_scatter(op_type: str, tensor: Any, indices: Any, updates: Any,
                    name: str | None) -> Tensor:
    t = convert_to_tensor(tensor, name="tensor")
    i = convert_to_tensor(indices, name="indices")
    u = convert_to_tensor(updates, dtype=t.dtype, name="updates")
    return apply_op(op_type, [t, i, u], {}, name=name or op_type).outputs[0]


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """A copy of ``tensor`` with ``updates[i]`` at ``indices[i]`` (the last wins)."""
    return _tensor_scatter("TensorScatterUpdate", tensor, indices, updates, name)


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """A copy of ``tensor`` with ``updates[i]`` added at ``indices[i]``."""
    return _tensor_scatter("TensorScatterAdd", tensor, indices, updates, name)


def tensor_scatter_nd_sub(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """A copy of ``tensor`` with ``updates[i]`` subtracted at ``indices[i]``."""
    return _tensor_scatter("TensorScatterSub", tensor, indices, updates, name)


def tensor_scatter_nd_max(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """A copy of ``tensor`` with the larger of it and ``updates[i]`` at ``indices[i]``."""
    return _tensor_scatter("TensorScatterMax", tensor, indices, updates, name)


def tensor_scatter_nd_min(tensor: Any, indices: Any, updates: Any, name: str | None = None) -> Tensor:
    """A copy of ``tensor`` with the smaller of it and ``updates[i]`` at ``indices[i]``."""
    return _tensor_scatter("TensorScatterMin", tensor, indices, updates, name)


@gradient("TensorScatterUpdate")
def _update_grad(op: Operation, grad: Tensor) -> list:
    indices, updates = op.inputs[1], op.inputs[2]
    cleared = tensor_scatter_nd_update(grad, indices, array_ops.zeros_like(updates))
    return [cleared, None, gather_nd(grad, indices)]


@gradient("TensorScatterAdd")
def _add_grad(op: Operation, grad: Tensor) -> list:
    return [grad, None, gather_nd(grad, op.inputs[1])]


@gradient("TensorScatterSub")
def _sub_grad(op: Operation, grad: Tensor) -> list:
    return [grad, None, math_ops.negative(gather_nd(grad, op.inputs[1]))]


@gradient("TensorScatterMax", "TensorScatterMin")
def _max_min_grad(op: Operation, grad: Tensor) -> list:
    """TF's rule: ties between the tensor and the updates share the gradient equally."""
    x, indices, y = op.inputs
    z = op.outputs[0]
    x_indicators = math_ops.cast(math_ops.equal(x, z), grad.dtype)
    y_indicator = math_ops.cast(math_ops.equal(y, gather_nd(z, indices)), grad.dtype)
    ys_indicators = scatter_nd(indices, y_indicator, array_ops.shape(x))
    indicators = x_indicators + ys_indicators
    return [grad * x_indicators / indicators, None,
            gather_nd(grad / indicators, indices) * y_indicator]

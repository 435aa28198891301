"""Static-shape helpers of TF1: tf.ensure_shape, tf.get_static_value,
tf.broadcast_dynamic_shape / broadcast_static_shape and tf.dimension_value /
dimension_at_index (zmtf's TensorShape holds plain ints; tf.Dimension wraps one)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import Dimension, TensorShape, as_shape, broadcast_shape

STRING_INPUT_OPS.add("EnsureShape")


@op_def("EnsureShape")
def _ensure_shape_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    expected = TensorShape(attrs["shape"])
    if not x.shape.is_compatible_with(expected):
        raise ValueError(f"Shape of tensor {x.name} {x.shape} is not compatible with expected "
                         f"shape {expected}")
    return [(x.dtype, x.shape.merge_with(expected))]


@gradient("EnsureShape")
def _ensure_shape_grad(op: Operation, grad: Tensor) -> list:
    return [grad]


def ensure_shape(x: Any, shape: Any, name: str | None = None) -> Tensor:
    """``x`` itself, with its static shape refined by ``shape`` (None: any size); at run time
    InvalidArgumentError unless its shape matches."""
    t = convert_to_tensor(x, name="x")
    dims = as_shape(shape).dims
    return apply_op("EnsureShape", [t], {"shape": dims}, name=name or "EnsureShape").outputs[0]


@op_def("BroadcastArgs")
def _broadcast_args_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    a, b = inputs
    if a.dtype != b.dtype or a.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"broadcast_dynamic_shape: shapes must both be int32 or int64, got "
                        f"{a.dtype.name} and {b.dtype.name}")
    lengths = [t.shape[0] if t.shape.ndims == 1 else None for t in (a, b)]
    n = None if None in lengths else max(lengths)  # type: ignore[type-var]
    return [(a.dtype, TensorShape([n]))]


not_differentiable("BroadcastArgs")


def broadcast_dynamic_shape(shape_x: Any, shape_y: Any) -> Tensor:
    """The shape (a 1-D int tensor) that tensors of shapes shape_x and shape_y broadcast to."""
    a = convert_to_tensor(shape_x, name="shape_x")
    b = convert_to_tensor(shape_y, dtype=a.dtype, name="shape_y")
    return apply_op("BroadcastArgs", [a, b], {}, name="BroadcastArgs").outputs[0]


def broadcast_static_shape(shape_x: Any, shape_y: Any) -> TensorShape:
    """The TensorShape that shapes shape_x and shape_y broadcast to; ValueError if they
    cannot."""
    return broadcast_shape(as_shape(shape_x), as_shape(shape_y))


def dimension_value(dimension: Any) -> int | None:
    """A dimension as an int (or None when unknown), whether it is a Dimension or an int."""
    return dimension.value if isinstance(dimension, Dimension) else dimension


def dimension_at_index(shape: Any, index: int) -> Dimension:
    """Dimension ``index`` of ``shape`` as a Dimension (unknown when the rank is)."""
    shape = as_shape(shape)
    return Dimension(None if shape.ndims is None else shape.dims[index])  # type: ignore[index]


# ---- tf.get_static_value: fold the ops whose value is known while the graph is built -------
def _fold_const(op: Operation, values: list) -> Any:
    return np.asarray(op.get_attr("value"))


def _fold_shape(op: Operation, values: list) -> Any:
    shape = op.inputs[0].shape
    if op.type == "Rank":
        return None if shape.ndims is None else np.array(shape.ndims, np.int32)
    if not shape.is_fully_defined():
        return None
    out = op.outputs[0].dtype.np
    return np.array(shape.as_list() if op.type == "Shape" else shape.num_elements(), out)


_FOLDERS: dict[str, Callable[[Operation, list], Any]] = {
    "Const": _fold_const,
    "Shape": _fold_shape, "Size": _fold_shape, "Rank": _fold_shape,
    "Identity": lambda op, v: v[0],
    "StopGradient": lambda op, v: v[0],
    "Cast": lambda op, v: v[0].astype(op.outputs[0].dtype.np),
    "Pack": lambda op, v: np.stack(v, axis=op.get_attr("axis")),
    "ExpandDims": lambda op, v: np.expand_dims(v[0], int(v[1])),
    "Reshape": lambda op, v: v[0].reshape(v[1]),
    "Fill": lambda op, v: np.full(v[0], v[1]),
}
_NEEDS_INPUTS = {"Identity", "StopGradient", "Cast", "Pack", "ExpandDims", "Reshape", "Fill"}


def get_static_value(tensor: Any, partial: bool = False) -> np.ndarray | None:
    """The value of ``tensor`` when it can be computed without running the graph (constants,
    static shapes, and casts, stacks and reshapes of those); None otherwise. A value that is
    not a Tensor is returned as it is."""
    del partial  # zmtf folds whole values only
    if not isinstance(tensor, Tensor):
        return tensor
    op = tensor.op
    folder = _FOLDERS.get(op.type)
    if folder is None:
        return None
    inputs = []
    if op.type in _NEEDS_INPUTS:
        for t in op.inputs:
            value = get_static_value(t)
            if value is None:
                return None
            inputs.append(np.asarray(value))
    try:
        return folder(op, inputs)
    except (KeyError, ValueError, TypeError):
        return None

"""Array ops: placeholders, identity, shapes, reshape/transpose, fills, one_hot, concat."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape, as_shape


@op_def("Placeholder")
def _placeholder_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(as_dtype(attrs["dtype"]), TensorShape(attrs["shape"]))]


def placeholder(dtype: Any, shape: Any = None, name: str | None = None) -> Tensor:
    """A tensor whose value must be fed: ``sess.run(y, feed_dict={x: value})``."""
    shape = as_shape(shape)
    attrs = {"dtype": as_dtype(dtype).name, "shape": shape.dims}
    return apply_op("Placeholder", [], attrs, name=name or "Placeholder").outputs[0]


def identity(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op("Identity", [convert_to_tensor(input)], name=name).outputs[0]


def _shape_value(t: Tensor) -> list[int | None] | None:
    """The constant value of a 1-D shape tensor when known at graph time."""
    if t.op.type == "Const":
        return [int(v) for v in np.asarray(t.op.get_attr("value")).reshape(-1)]
    if t.op.type == "Shape" and t.op.inputs[0].shape.ndims is not None:
        return t.op.inputs[0].shape.as_list()
    if t.op.type == "Pack" and t.op.get_attr("axis") == 0 and all(i.shape.ndims == 0 for i in t.op.inputs):
        return [_scalar_value(i) for i in t.op.inputs]   # an auto-packed [batch, -1]
    return None


def _scalar_value(t: Tensor) -> int | None:
    return int(np.asarray(t.op.get_attr("value"))) if t.op.type == "Const" else None


def _shape_tensor(shape: Any) -> Tensor:
    if isinstance(shape, Tensor):
        return shape
    if isinstance(shape, TensorShape):
        shape = shape.as_list()
    if isinstance(shape, (list, tuple)) and any(isinstance(d, Tensor) or hasattr(d, "_as_graph_element")
                                                for d in shape):
        return convert_to_tensor(shape, name="shape")   # TF auto-packs [tf.shape(x)[0], -1]
    return constant(np.asarray(shape, dtype=np.int32).reshape(-1), dtype=dtypes.int32, name="shape")


@op_def("Reshape")
def _reshape_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, shape = inputs
    target = _shape_value(shape)
    if target is None:
        return [(x.dtype, TensorShape(None))]
    n = x.shape.num_elements()
    if None in target:   # Shape() of a partly known tensor: nothing to check against n
        return [(x.dtype, TensorShape([None if d == -1 else d for d in target]))]
    if -1 in target and n is not None:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        target = [n // known if d == -1 and known else d for d in target]
    if n is not None and -1 not in target and int(np.prod(target, dtype=np.int64)) != n:
        raise ValueError(f"Cannot reshape a tensor with {n} elements to shape {target}")
    return [(x.dtype, TensorShape([None if d == -1 else d for d in target]))]


def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    return apply_op("Reshape", [convert_to_tensor(tensor), _shape_tensor(shape)], name=name).outputs[0]


@op_def("Shape")
def _shape_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(as_dtype(attrs["out_type"]), TensorShape([inputs[0].shape.ndims]))]


def shape(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:  # noqa: A002
    attrs = {"out_type": as_dtype(out_type).name}
    return apply_op("Shape", [convert_to_tensor(input)], attrs, name=name).outputs[0]


@op_def("Size")
def _size_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(as_dtype(attrs["out_type"]), TensorShape([]))]


def size(input: Any, name: str | None = None, out_type: Any = dtypes.int32) -> Tensor:  # noqa: A002
    """The number of elements of ``input``, as a 0-d ``out_type`` tensor."""
    attrs = {"out_type": as_dtype(out_type).name}
    return apply_op("Size", [convert_to_tensor(input)], attrs, name=name).outputs[0]


@op_def("Rank")
def _rank_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int32, TensorShape([]))]


def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of dimensions of ``input``, as a 0-d int32 tensor."""
    return apply_op("Rank", [convert_to_tensor(input)], name=name).outputs[0]


@op_def("Transpose")
def _transpose_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, perm = inputs[0], attrs["perm"]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    perm = perm if perm is not None else list(range(len(dims)))[::-1]
    if sorted(perm) != list(range(len(dims))):
        raise ValueError(f"perm {perm} is not a permutation of the {len(dims)} dimensions of {x.name}")
    return [(x.dtype, TensorShape([dims[p] for p in perm]))]


def transpose(a: Any, perm: Sequence[int] | None = None, name: str = "transpose") -> Tensor:
    attrs = {"perm": None if perm is None else [int(p) for p in perm]}
    return apply_op("Transpose", [convert_to_tensor(a)], attrs, name=name).outputs[0]


@op_def("Fill")
def _fill_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    dims, value = inputs
    target = _shape_value(dims)
    return [(value.dtype, TensorShape(target) if target is not None else TensorShape(None))]


def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    return apply_op("Fill", [_shape_tensor(dims), convert_to_tensor(value)], name=name).outputs[0]


_MAX_CONST_FILL = 1000  # as TF: bigger zeros/ones are a Fill, not a constant shipped with the graph


def _filled(shape: Any, dtype: Any, value: float, name: str) -> Tensor:
    dt = as_dtype(dtype)
    if isinstance(shape, Tensor) or (isinstance(shape, (list, tuple)) and
                                     any(isinstance(d, Tensor) for d in shape)):
        return fill(shape, constant(value, dtype=dt), name=name)
    dims = as_shape(shape).as_list()
    if int(np.prod(dims, dtype=np.int64)) > _MAX_CONST_FILL:
        with get_default_graph().name_scope(name) as scope:
            return apply_op("Fill", [_shape_tensor(dims), constant(value, dtype=dt)], name=scope).outputs[0]
    return constant(np.full(dims, value, dtype=dt.np), dtype=dt, name=name)


@op_def("StopGradient")
def _stop_gradient_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def stop_gradient(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The input's value, but tf.gradients does not flow through it."""
    return apply_op("StopGradient", [convert_to_tensor(input)], name=name).outputs[0]


def zeros(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, 0, name or "zeros")


def ones(shape: Any, dtype: Any = dtypes.float32, name: str | None = None) -> Tensor:
    return _filled(shape, dtype, 1, name or "ones")


def zeros_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    out = apply_op("ZerosLike", [convert_to_tensor(tensor)], name=name).outputs[0]
    return out if dtype is None else _cast(out, dtype)


def ones_like(tensor: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    out = apply_op("OnesLike", [convert_to_tensor(tensor)], name=name).outputs[0]
    return out if dtype is None else _cast(out, dtype)


def _cast(t: Tensor, dtype: Any) -> Tensor:
    from zmtf.ops.math_ops import cast

    return cast(t, dtype)


@op_def("OneHot")
def _one_hot_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    idx = inputs[0]
    if idx.shape.ndims is None:
        return [(as_dtype(attrs["dtype"]), TensorShape(None))]
    dims = idx.shape.as_list()
    axis = attrs["axis"] if attrs["axis"] >= 0 else len(dims)
    return [(as_dtype(attrs["dtype"]), TensorShape(dims[:axis] + [attrs["depth"]] + dims[axis:]))]


def one_hot(indices: Any, depth: int, on_value: Any = None, off_value: Any = None,
            axis: int | None = None, dtype: Any = None, name: str | None = None) -> Tensor:
    dt = as_dtype(dtype) if dtype is not None else dtypes.float32
    attrs = {"depth": int(depth), "on_value": 1 if on_value is None else on_value,
             "off_value": 0 if off_value is None else off_value,
             "axis": -1 if axis is None else int(axis), "dtype": dt.name}
    return apply_op("OneHot", [convert_to_tensor(indices)], attrs, name=name).outputs[0]


@op_def("ExpandDims")
def _expand_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    axis = attrs["axis"] if attrs["axis"] >= 0 else len(dims) + 1 + attrs["axis"]
    return [(x.dtype, TensorShape(dims[:axis] + [1] + dims[axis:]))]


def expand_dims(input: Any, axis: int, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op("ExpandDims", [convert_to_tensor(input)], {"axis": int(axis)}, name=name).outputs[0]


@op_def("Squeeze")
def _squeeze_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, axes = inputs[0], attrs["squeeze_dims"]
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None))]
    dims = x.shape.as_list()
    axes = [a % len(dims) for a in axes] if axes else [i for i, d in enumerate(dims) if d == 1]
    return [(x.dtype, TensorShape([d for i, d in enumerate(dims) if i not in axes]))]


def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    axes = [] if axis is None else [int(a) for a in (axis if isinstance(axis, (list, tuple)) else [axis])]
    return apply_op("Squeeze", [convert_to_tensor(input)], {"squeeze_dims": axes}, name=name).outputs[0]


@op_def("ConcatV2", "Pack")
def _concat_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    first = inputs[0]
    if any(t.shape.ndims is None for t in inputs):
        return [(first.dtype, TensorShape(None))]
    dims = first.shape.as_list()
    if attrs["_kind"] == "stack":
        axis = attrs["axis"] % (len(dims) + 1)
        return [(first.dtype, TensorShape(dims[:axis] + [len(inputs)] + dims[axis:]))]
    axis = attrs["axis"] % len(dims)
    sizes = [t.shape.as_list()[axis] for t in inputs]
    total = None if any(s is None for s in sizes) else sum(sizes)  # type: ignore[arg-type]
    return [(first.dtype, TensorShape(dims[:axis] + [total] + dims[axis + 1:]))]


def concat(values: Sequence[Any], axis: int, name: str = "concat") -> Tensor:
    tensors = [convert_to_tensor(v) for v in values]
    return apply_op("ConcatV2", tensors, {"axis": int(axis), "_kind": "concat"}, name=name).outputs[0]


def stack(values: Sequence[Any], axis: int = 0, name: str = "stack") -> Tensor:
    tensors = [convert_to_tensor(v) for v in values]
    return apply_op("Pack", tensors, {"axis": int(axis), "_kind": "stack"}, name=name).outputs[0]


@op_def("BroadcastTo", "SumToShape", "MeanGrad")
def _broadcast_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    target = _shape_value(inputs[1])
    return [(inputs[0].dtype, TensorShape(target) if target is not None else TensorShape(None))]


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    return apply_op("BroadcastTo", [convert_to_tensor(input), _shape_tensor(shape)], name=name).outputs[0]

"""Constants and the conversion of Python/numpy values (and Variables) to Tensors."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.dtypes import DType, as_dtype, infer_dtype, string, to_string_array
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.framework.tensor_shape import TensorShape
from zmtf.framework import upper_layers


@op_def("Const")
def _const_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    value = attrs["value"]
    return [(as_dtype(value.dtype), TensorShape(value.shape))]


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str = "Const",
             verify_shape: bool = False) -> Tensor:
    """A Const op holding ``value`` (broadcast to ``shape`` when given), e.g. tf.constant(4.0)."""
    dt = as_dtype(dtype) if dtype is not None else infer_dtype(value)
    array = to_string_array(value) if dt == string else np.array(value, dtype=dt.np)
    if shape is not None:
        shape = [int(d) for d in (shape if isinstance(shape, (list, tuple)) else [shape])]
        if array.size == int(np.prod(shape, dtype=np.int64)):
            array = array.reshape(shape)
        elif array.size == 1 and not verify_shape:
            array = np.full(shape, array.reshape(())[()], dtype=dt.np)
        else:
            raise TypeError(f"Expected Tensor's shape: {tuple(shape)}, got {array.shape}.")
    array.setflags(write=False)
    return apply_op("Const", [], {"value": array, "dtype": dt.name}, name=name).outputs[0]


def convert_to_tensor(value: Any, dtype: Any = None, name: str | None = None,
                      preferred_dtype: Any = None) -> Tensor:
    """Tensors pass through (dtype-checked); Variables give their value; the rest becomes a Const."""
    if hasattr(value, "_as_graph_element") and not isinstance(value, Tensor):
        value = value._as_graph_element()
    if isinstance(value, Tensor):
        if dtype is not None and as_dtype(dtype) != value.dtype:
            raise ValueError(
                f"Tensor conversion requested dtype {as_dtype(dtype).name} for Tensor with "
                f"dtype {value.dtype.name}: {value!r}"
            )
        return value
    if isinstance(value, (list, tuple)) and _holds_tensor(value):
        return _autopacked(value, dtype, name)
    if dtype is None and preferred_dtype is not None:
        try:
            return constant(value, dtype=preferred_dtype, name=name or "Const")
        except (TypeError, ValueError, OverflowError):
            pass
    return constant(value, dtype=dtype, name=name or "Const")


def convert_pair(x: Any, y: Any) -> tuple[Tensor, Tensor]:
    """Convert a binary op's operands; a Python scalar takes the dtype of the tensor side."""
    if isinstance(x, Tensor) or hasattr(x, "_as_graph_element"):
        x = convert_to_tensor(x)
        y = convert_to_tensor(y, dtype=_scalar_dtype(y, x.dtype), name="y")
    else:
        y = convert_to_tensor(y)
        x = convert_to_tensor(x, dtype=_scalar_dtype(x, y.dtype), name="x")
    return x, y


def _scalar_dtype(value: Any, other: DType) -> DType | None:
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return None
    if isinstance(value, np.ndarray) and value.dtype != np.float64 and value.dtype != np.int64:
        return None
    return other


def _holds_tensor(value: Any) -> bool:
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_tensor(v) for v in value)


def _first_dtype(value: Any) -> DType | None:
    if isinstance(value, (list, tuple)):
        return next((d for d in map(_first_dtype, value) if d is not None), None)
    if isinstance(value, Tensor) or hasattr(value, "_as_graph_element"):
        return convert_to_tensor(value).dtype
    return None


def _autopacked(value: Any, dtype: Any, name: str | None) -> Tensor:
    """A (nested) list holding tensors, e.g. ``[tf.shape(x)[0], -1]``: its items stacked into
    one tensor (TF's auto-packing), Python numbers converted to the tensors' dtype."""
    from zmtf.framework.op_def import apply_op

    dt = as_dtype(dtype) if dtype is not None else _first_dtype(value)
    items = []
    for item in value:
        if isinstance(item, (list, tuple)) and _holds_tensor(item):
            items.append(_autopacked(item, dt, None))
            continue
        if isinstance(item, Tensor) or hasattr(item, "_as_graph_element"):
            tensor = convert_to_tensor(item)
            if tensor.dtype != dt:
                raise TypeError(f"Cannot convert a list containing a tensor of dtype "
                                f"{tensor.dtype.name} to {dt.name} (Tensor is: {tensor!r})")
            items.append(tensor)
        else:
            items.append(constant(item, dtype=dt))
    return apply_op("Pack", items, {"axis": 0, "_kind": "stack"}, name=name or "packed").outputs[0]


# SparseTensor (framework/) converts its parts with this; it may not import this module
upper_layers.register("convert_to_tensor", convert_to_tensor)

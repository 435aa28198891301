"""Variable-state ops: the Variable node, assignments and optimizer apply ops."""

from __future__ import annotations

from typing import Any

from zmtf.framework.dtypes import as_dtype
from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape

ASSIGN_OPS = ("Assign", "AssignAdd", "AssignSub", "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam",
              "ApplyAdagrad", "ApplyRMSProp", "ApplyCenteredRMSProp", "SparseApplyMomentum", "SparseApplyAdagrad",
              "ApplyAdadelta", "SparseApplyAdadelta", "ApplyFtrl", "ApplyFtrlV2", "SparseApplyFtrl",
              "SparseApplyFtrlV2", "ApplyProximalGradientDescent", "ApplyProximalAdagrad",
              "SparseApplyProximalGradientDescent", "SparseApplyProximalAdagrad", "SparseApplyRMSProp",
              "SparseApplyCenteredRMSProp", "ApplyAdagradDA", "SparseApplyAdagradDA")


@op_def("Variable", stateful=True)
def _variable_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(as_dtype(attrs["dtype"]), TensorShape(attrs["shape"]))]


@op_def(*ASSIGN_OPS, stateful=True)
def _assign_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    ref = inputs[0]
    if ref.op.type != "Variable":
        raise TypeError(f"'{ref.name}' is not a variable reference; assign to a tf.Variable")
    if not attrs.get("validate_shape", True):   # the variable takes the value's shape
        return [(ref.dtype, inputs[1].shape)]
    return [(ref.dtype, ref.shape)]


@op_def("CountUpTo", stateful=True)
def _count_up_to_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    ref = inputs[0]
    if ref.op.type != "Variable" or not ref.dtype.is_integer:
        raise TypeError(f"count_up_to needs an int32 or int64 tf.Variable, got '{ref.name}' "
                        f"({ref.dtype.name})")
    return [(ref.dtype, TensorShape([]))]


@op_def("IsVariableInitialized", stateful=True)
def _is_init_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.bool_, TensorShape([]))]


def variable_op(shape: TensorShape, dtype: Any, name: str) -> Tensor:
    """The raw Variable node; its output is a reference, read through an Identity."""
    attrs = {"shape": shape.dims, "dtype": as_dtype(dtype).name, "var_name": ""}
    container = getattr(get_default_graph(), "_container", "")   # tf.container's
    if container:
        attrs["container"] = container
    op = apply_op("Variable", [], attrs, name=name)
    op.attrs["var_name"] = op.name  # the store key is the node's unique name, as in TF
    return op.outputs[0]


def _as_ref(ref: Any) -> Tensor:
    """A tf.Variable stands for its reference tensor in the assign functions."""
    return ref._ref_tensor() if hasattr(ref, "_ref_tensor") else ref


def _value_for(ref: Tensor, value: Any, name: str) -> Tensor:
    return convert_to_tensor(value, dtype=ref.dtype, name=name)


def assign(ref: Any, value: Any, validate_shape: bool | None = None, use_locking: bool = True,
           name: str | None = None) -> Tensor:
    """``ref = value``. ``validate_shape=False`` lets the variable take the value's shape
    (its declared static shape stays as it was, as in TF)."""
    if hasattr(ref, "_ref_tensor"):
        if validate_shape is None:
            return ref.assign(value, name=name)
        with ref.graph.colocate_with(ref.op):
            return assign(ref._ref_tensor(), value, validate_shape, use_locking, name)
    validate_shape = True if validate_shape is None else bool(validate_shape)
    value = _value_for(ref, value, "value")
    if validate_shape and not ref.shape.is_compatible_with(value.shape):
        raise ValueError(
            f"Assign requires shapes of both tensors to match. lhs shape= {ref.shape} "
            f"rhs shape= {value.shape} (variable {ref.op.name})"
        )
    attrs = {"validate_shape": bool(validate_shape), "shape": ref.shape.dims}
    return apply_op("Assign", [ref, value], attrs, name=name or "Assign").outputs[0]


def assign_add(ref: Tensor, value: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    if hasattr(ref, "_ref_tensor"):
        return ref.assign_add(value, name=name)
    return apply_op("AssignAdd", [ref, _value_for(ref, value, "value")], name=name or "AssignAdd").outputs[0]


def assign_sub(ref: Tensor, value: Any, use_locking: bool = False, name: str | None = None) -> Tensor:
    if hasattr(ref, "_ref_tensor"):
        return ref.assign_sub(value, name=name)
    return apply_op("AssignSub", [ref, _value_for(ref, value, "value")], name=name or "AssignSub").outputs[0]


def is_variable_initialized(ref: Tensor, name: str | None = None) -> Tensor:
    return apply_op("IsVariableInitialized", [_as_ref(ref)], name=name).outputs[0]


def count_up_to(ref: Any, limit: int, name: str | None = None) -> Tensor:
    """ref's value before ``ref += 1``; OutOfRangeError once ref has reached ``limit``."""
    if hasattr(ref, "count_up_to"):
        return ref.count_up_to(limit)
    return apply_op("CountUpTo", [ref], {"limit": int(limit)}, name=name or "CountUpTo").outputs[0]

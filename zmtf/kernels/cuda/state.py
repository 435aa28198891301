"""Variables on the GPU: Variable, Assign, AssignAdd, AssignSub, ApplyGradientDescent.

The store protocol is the CPU one (``zmtf.kernels.cpu.state``): a Variable op outputs a
``VariableRef`` into ``ctx.resources``, which for a GPU variable holds a device array.
Assign stores a private device copy; updates run in place under the variable's lock; the
outputs are copies, so later updates never show through them.

Registered for float16/32/64 only, deliberately: TF has no GPU kernels for integer
variables, so ``tf.Variable(3)`` pinned to /gpu:0 cannot be placed (soft placement moves
it to the CPU).
"""

from __future__ import annotations

from typing import Any

from numba import cuda

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu._common import shape_str
from zmtf.kernels.cpu.state import VariableRef, _ref, _shape_error, _shapes_match
from zmtf.kernels.cuda import _device
from zmtf.kernels.cuda.elementwise import BINARY_OPS, binary
from zmtf.kernels.registry import register

FLOATS: tuple[str, ...] = ("float16", "float32", "float64")


@cuda.jit
def gradient_descent_kernel(var, alpha, delta):  # type: ignore[no-untyped-def]
    """var -= alpha[0] * delta, in place."""
    step = alpha[0]
    for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
        var[i] -= step * delta[i]


@register("Variable", "GPU", FLOATS)
@register("VariableV2", "GPU", FLOATS)
def variable(ctx: Any, inputs: list, attrs: dict) -> list:
    """Variable(): a VariableRef to ``var_name``; never fails, even when uninitialized."""
    return [VariableRef(ctx.resources, attrs["var_name"], attrs.get("shape"))]


@register("Assign", "GPU", FLOATS)
def assign(ctx: Any, inputs: list, attrs: dict) -> list:
    """Assign(ref, value): store a private device copy of ``value``; output another copy.

    With ``validate_shape`` (default True) the value must match the variable's declared
    shape and, when initialized, its current shape.
    """
    node_name = attrs["_node_name"]
    ref, value = _ref(inputs[0], node_name), inputs[1]
    shape = tuple(value.shape)
    stored = _device.copy(ctx, value)  # the store's own: the producer may reuse its buffer
    store = ref.store
    with store.lock(ref.name):
        if attrs.get("validate_shape", True):
            declared = attrs.get("shape", ref.shape)
            if declared is not None and not _shapes_match(declared, shape):
                raise _shape_error(declared, shape, node_name)
            if store.is_initialized(ref.name):
                current = tuple(store.read(ref.name).shape)
                if current != shape:
                    raise _shape_error(current, shape, node_name)
        store.assign(ref.name, stored)
        return [_device.copy(ctx, stored)]


def _read_device(ctx: Any, ref: VariableRef) -> Any:
    """The stored device array (a host array left in the store is moved to the device)."""
    value = ref.store.read(ref.name)
    if not _device.is_device_array(value):
        value = _device.to_device(ctx, value)
        ref.store.assign(ref.name, value)
    return value


def _update(ctx: Any, inputs: list, attrs: dict, op_type: str) -> list:
    node_name = attrs["_node_name"]
    ref, delta = _ref(inputs[0], node_name), inputs[1]
    spec = BINARY_OPS["Add" if op_type == "AssignAdd" else "Sub"]
    with ref.store.lock(ref.name):
        current = _read_device(ctx, ref)
        try:
            binary(spec, ctx, current, delta, out=current)
        except InvalidArgumentError:
            raise InvalidArgumentError(
                f"{op_type} (node '{node_name}'): update shape {shape_str(delta.shape)} does "
                f"not match variable '{ref.name}' of shape {shape_str(current.shape)}"
            ) from None
        return [_device.copy(ctx, current)]


@register("AssignAdd", "GPU", FLOATS)
def assign_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """AssignAdd(ref, delta): ref += delta in place, under the variable's lock."""
    return _update(ctx, inputs, attrs, "AssignAdd")


@register("AssignSub", "GPU", FLOATS)
def assign_sub(ctx: Any, inputs: list, attrs: dict) -> list:
    """AssignSub(ref, delta): ref -= delta in place, under the variable's lock."""
    return _update(ctx, inputs, attrs, "AssignSub")


@register("ApplyGradientDescent", "GPU", FLOATS)
def apply_gradient_descent(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyGradientDescent(ref, alpha, delta): var -= alpha * delta, in place."""
    node_name = attrs["_node_name"]
    ref = _ref(inputs[0], node_name)
    alpha, delta = inputs[1], inputs[2]
    with ref.store.lock(ref.name):
        var = _read_device(ctx, ref)
        if tuple(delta.shape) != tuple(var.shape):
            raise InvalidArgumentError(
                f"delta (node '{node_name}') must have the variable's shape "
                f"{shape_str(var.shape)}, got {shape_str(delta.shape)}"
            )
        step = _device.scalar_view(alpha, ctx, f"alpha of node '{node_name}'", var.dtype)
        _device.launch(
            ctx, gradient_descent_kernel, var.size, _device.flat(var), step,
            _device.flat(_device.on_device(ctx, delta)),
        )
        return [_device.copy(ctx, var)]

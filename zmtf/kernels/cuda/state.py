"""Variables on the GPU: Variable, Assign, AssignAdd, AssignSub, and the fused optimizer
updates ApplyGradientDescent, ApplyMomentum, ApplyAdagrad, ApplyRMSProp and ApplyAdam.

The store protocol is the CPU one (``zmtf.kernels.cpu.state``): a Variable op outputs a
``VariableRef`` into ``ctx.resources``, which for a GPU variable holds a device array.
Assign stores a private device copy; updates run in place under the variable's lock.
Assign/AssignAdd/AssignSub output copies, so later updates never show through them; the
optimizer updates output the variable itself, as TF's return the ref (and the CPU kernels
the array): a training step would otherwise copy every variable it updates, for nothing.

Registered for float16/32/64 only, deliberately: TF has no GPU kernels for integer
variables, so ``tf.Variable(3)`` pinned to /gpu:0 cannot be placed (soft placement moves
it to the CPU).

The optimizers' hyperparameters (learning rate, Adam's beta powers, ...) are read by the
kernel from 1-element device arrays, never pulled to the host: a step does not wait on
the GPU. The formulas are the CPU kernels' (TF's), in the variable's dtype where numba
keeps it; hyperparameter arithmetic is float64, as the CPU's Python floats are.
"""

from __future__ import annotations

import math
from typing import Any

from numba import cuda

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.cpu.state import VariableRef, _locked, _ref, _shape_error, _shapes_match
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


@cuda.jit
def momentum_kernel(var, accum, grad, lr, momentum, nesterov):  # type: ignore[no-untyped-def]
    """accum = accum * momentum + grad; var -= lr * accum (Nesterov: lr * grad + lr *
    momentum * accum)."""
    rate = lr[0]
    mu = momentum[0]
    for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
        a = accum[i] * mu + grad[i]
        accum[i] = a
        if nesterov:
            var[i] -= grad[i] * rate + a * (mu * rate)
        else:
            var[i] -= a * rate


@cuda.jit
def adagrad_kernel(var, accum, grad, lr):  # type: ignore[no-untyped-def]
    """accum += grad^2; var -= lr * grad / sqrt(accum)."""
    rate = lr[0]
    for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
        a = accum[i] + grad[i] * grad[i]
        accum[i] = a
        var[i] -= rate * grad[i] / math.sqrt(a)


@cuda.jit
def rmsprop_kernel(var, ms, mom, grad, lr, rho, momentum, epsilon):  # type: ignore[no-untyped-def]
    """ms = rho * ms + (1 - rho) * grad^2; mom = momentum * mom + lr * grad / sqrt(ms + eps);
    var -= mom."""
    rate = lr[0]
    decay = rho[0]
    mu = momentum[0]
    eps = epsilon[0]
    for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
        g = grad[i]
        m = ms[i] * decay + g * g * (1 - decay)
        ms[i] = m
        step = mom[i] * mu + rate * g / math.sqrt(m + eps)
        mom[i] = step
        var[i] -= step


@cuda.jit
def adam_kernel(var, m, v, grad, beta1_power, beta2_power, lr, beta1, beta2, epsilon,  # type: ignore[no-untyped-def]
                nesterov):
    """TF's Adam: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m) * (1 - beta1);
    v += (g^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon)."""
    b1 = float(beta1[0])
    b2 = float(beta2[0])
    eps = float(epsilon[0])
    lr_t = float(lr[0]) * math.sqrt(1.0 - float(beta2_power[0])) / (1.0 - float(beta1_power[0]))
    for i in range(cuda.grid(1), var.size, cuda.gridsize(1)):
        g = grad[i]
        mi = m[i] + (g - m[i]) * (1.0 - b1)
        vi = v[i] + (g * g - v[i]) * (1.0 - b2)
        m[i] = mi
        v[i] = vi
        direction = mi * b1 + g * (1.0 - b1) if nesterov else mi
        var[i] -= direction * lr_t / (math.sqrt(vi) + eps)


@register("Variable", "GPU", FLOATS)
@register("VariableV2", "GPU", FLOATS)
def variable(ctx: Any, inputs: list, attrs: dict) -> list:
    """Variable(): a VariableRef to ``var_name`` in its ``container``; never fails."""
    store, container = ctx.resources, attrs.get("container")
    name = store.key(container, attrs["var_name"]) if container else attrs["var_name"]
    return [VariableRef(store, name, attrs.get("shape"))]


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
        return [var]


def _apply(ctx: Any, inputs: list, attrs: dict, slots: int, grad_index: int, kernel: Any,
           scalar_names: tuple[str, ...], scalar_indices: tuple[int, ...], *flags: bool) -> list:
    """Run a fused optimizer update in place: inputs[0] is the variable and inputs[1:slots]
    its slots (accumulators), all GPU variables of one shape, locked for the update."""
    node_name = attrs["_node_name"]
    refs = [_ref(inputs[i], node_name) for i in range(slots)]
    grad = _device.on_device(ctx, inputs[grad_index])
    with _locked(refs):
        arrays = [_read_device(ctx, ref) for ref in refs]
        var = arrays[0]
        for ref, array in zip(refs[1:], arrays[1:]):
            if tuple(array.shape) != tuple(var.shape):
                raise InvalidArgumentError(
                    f"slot '{ref.name}' (node '{node_name}') must have the variable's shape "
                    f"{shape_str(var.shape)}, got {shape_str(array.shape)}")
        if tuple(grad.shape) != tuple(var.shape):
            raise InvalidArgumentError(
                f"grad (node '{node_name}') must have the variable's shape "
                f"{shape_str(var.shape)}, got {shape_str(grad.shape)}")
        scalars = [_device.scalar_view(inputs[i], ctx, f"{what} of node '{node_name}'", var.dtype)
                   for what, i in zip(scalar_names, scalar_indices)]
        _device.launch(ctx, kernel, var.size, *(_device.flat(a) for a in arrays),
                       _device.flat(grad), *scalars, *flags)
        return [var]


@register("ApplyMomentum", "GPU", FLOATS)
def apply_momentum(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyMomentum(ref, accum, lr, grad, momentum), with ``use_nesterov``."""
    return _apply(ctx, inputs, attrs, 2, 3, momentum_kernel, ("lr", "momentum"), (2, 4),
                  bool(attrs.get("use_nesterov", False)))


@register("ApplyAdagrad", "GPU", FLOATS)
def apply_adagrad(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyAdagrad(ref, accum, lr, grad)."""
    return _apply(ctx, inputs, attrs, 2, 3, adagrad_kernel, ("lr",), (2,))


@register("ApplyRMSProp", "GPU", FLOATS)
def apply_rmsprop(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyRMSProp(ref, ms, mom, lr, rho, momentum, epsilon, grad)."""
    return _apply(ctx, inputs, attrs, 3, 7, rmsprop_kernel, ("lr", "rho", "momentum", "epsilon"),
                  (3, 4, 5, 6))


@register("ApplyAdam", "GPU", FLOATS)
def apply_adam(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyAdam(ref, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad)."""
    return _apply(ctx, inputs, attrs, 3, 9, adam_kernel,
                  ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon"),
                  (3, 4, 5, 6, 7, 8), bool(attrs.get("use_nesterov", False)))

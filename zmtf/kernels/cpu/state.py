"""Variables and the kernels that read-modify-write them: Assign*, optimizer Apply* ops.

A ``Variable`` op outputs a ``VariableRef``, a handle on one entry of the runtime's
variable store (``ctx.resources``), not a value. Consumers read the value through
``Identity``, which returns the stored array itself (TF1 ref reads: no copy inside a step;
the runtime copies fetched values that alias the store). The store owns its arrays:
``Assign`` stores a private copy (a value its only holder handed over, framework/
handed_over.py, is copied into the variable's buffer or kept), updates happen in place under
``ctx.resources.lock(name)``, and the outputs of the kernels here are copies.

Registered on CPU for every dtype (the lookup dtype is the variable's dtype).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, OutOfRangeError
from zmtf.framework.handed_over import take
from zmtf.kernels.cpu.common import quiet_fp, quietly, shape_str
from zmtf.kernels.cpu._jit import jit
from zmtf.kernels.registry import register

_Array = np.ndarray


class VariableRef:
    """A reference to variable ``name`` in ``store``; ``read()`` returns the current value.

    ``shape`` is the declared shape (None or -1 entries where unknown), used by Assign's
    ``validate_shape``. ``read()`` returns the stored array itself: copy it before letting
    it escape, since later assignments update it in place. The store (a ResourceContainer)
    has ``values`` (name -> array) and ``read(name)``, which raises for an uninitialized one.
    """

    __slots__ = ("store", "name", "shape")

    def __init__(self, store: Any, name: str, shape: Sequence[int | None] | None = None) -> None:
        self.store = store
        self.name = name
        self.shape = None if shape is None else tuple(shape)

    def read(self) -> _Array:
        """The stored value (FailedPreconditionError from the store if uninitialized)."""
        value = self.store.values.get(self.name)   # the usual read: no call of the store's
        return value if value is not None else self.store.read(self.name)

    def __repr__(self) -> str:
        return f"VariableRef({self.name!r})"


def _ref(value: Any, node_name: str, index: int = 0) -> VariableRef:
    if not isinstance(value, VariableRef):
        raise InvalidArgumentError(
            f"input {index} of node '{node_name}' must be a variable reference (the output of "
            f"a Variable op), got {type(value).__name__}"
        )
    return value


@register("Variable")
@register("VariableV2")
def variable(ctx: Any, inputs: list, attrs: dict) -> list:
    """Variable(): a VariableRef to ``var_name`` in its ``container`` (tf.container); never
    fails, even when uninitialized."""
    store, container = ctx.resources, attrs.get("container")
    name = store.key(container, attrs["var_name"]) if container else attrs["var_name"]
    return [VariableRef(store, name, attrs.get("shape"))]


# its output depends on the store and the node alone: runtime.executor.bind presets it
variable.store_output = True  # type: ignore[attr-defined]


def _shapes_match(declared: Sequence[int | None], actual: tuple[int, ...]) -> bool:
    return len(declared) == len(actual) and all(
        d is None or d < 0 or d == a for d, a in zip(declared, actual)
    )


def _shape_error(lhs: Sequence[Any], rhs: tuple[int, ...], node_name: str) -> InvalidArgumentError:
    lhs_str = "[" + ",".join("?" if d is None or d < 0 else str(d) for d in lhs) + "]"
    return InvalidArgumentError(
        f"Assign requires shapes of both tensors to match. lhs shape= {lhs_str} rhs shape= "
        f"{shape_str(rhs)} (node '{node_name}'; pass validate_shape=False to change the shape)"
    )


@register("Assign")
def assign(ctx: Any, inputs: list, attrs: dict) -> list:
    """Assign(ref, value): store a private copy of ``value``; output another copy of it.

    With ``validate_shape`` (default True) the value must match the variable's declared
    shape and, when initialized, its current shape.

    A value its only holder handed over (framework/handed_over.py: Saver.restore's freshly
    read tensors) is not copied into a new array, as TF's AssignOp does it: it is copied into
    the variable's own buffer when that has its shape and dtype (no allocation: the memory
    stays where it is, so no later step has to fault in new pages), else it becomes the
    variable's storage itself if it owns its memory (every view of it then has it as
    ``base``, which fetches check for aliasing) and is writable and C-contiguous; a view
    that cannot be kept is copied, as any other value.
    """
    node_name = attrs["_node_name"]
    ref, fed = _ref(inputs[0], node_name), inputs[1]
    value = np.asarray(fed)
    given = value is fed and take(fed)
    # kept: a handed-over value that can be the storage itself (a view cannot: a shard's slice)
    kept = given and value.flags.owndata and value.flags.c_contiguous and value.flags.writeable
    stored = value if given else np.array(value, copy=True, order="C")
    store = ref.store
    with store.lock(ref.name):
        if attrs.get("validate_shape", True):
            declared = attrs.get("shape", ref.shape)
            if declared is not None and not _shapes_match(declared, value.shape):
                raise _shape_error(declared, value.shape, node_name)
            if store.is_initialized(ref.name):
                current = store.read(ref.name).shape
                if current != value.shape:
                    raise _shape_error(current, value.shape, node_name)
        if given:
            own = store.values.get(ref.name)
            if (own is not None and own.shape == value.shape and own.dtype == value.dtype
                    and own.flags.writeable and own.flags.c_contiguous):
                np.copyto(own, value)
                return [own]
            if not kept:
                stored = np.array(value, copy=True, order="C")
        store.assign(ref.name, stored)
        # The stored (private) array, as TF1 returns the ref: fetches copy what aliases storage.
        return [stored]


def _read_writable(ref: VariableRef) -> _Array:
    """The stored array, made writable by replacing it with a private copy if needed."""
    value = ref.store.read(ref.name)
    if not value.flags.writeable:
        value = value.copy()
        ref.store.assign(ref.name, value)
    return value


def _update(inputs: list, attrs: dict, ufunc: np.ufunc, op_type: str) -> list:
    node_name = attrs["_node_name"]
    ref, delta = _ref(inputs[0], node_name), inputs[1]
    with ref.store.lock(ref.name):
        current = _read_writable(ref)
        if delta.shape == current.shape or not delta.shape:   # the usual cases, no numpy call
            fits = True
        else:
            try:
                fits = np.broadcast_shapes(current.shape, delta.shape) == current.shape
            except ValueError:
                fits = False
        if not fits:
            raise InvalidArgumentError(
                f"{op_type} (node '{node_name}'): update shape {shape_str(delta.shape)} does not "
                f"match variable '{ref.name}' of shape {shape_str(current.shape)}"
            )
        quietly(ufunc, current, delta, out=current, casting="unsafe")
        return [current]


@register("AssignAdd")
def assign_add(ctx: Any, inputs: list, attrs: dict) -> list:
    """AssignAdd(ref, delta): ref += delta in place, under the variable's lock."""
    return _update(inputs, attrs, np.add, "AssignAdd")


@register("AssignSub")
def assign_sub(ctx: Any, inputs: list, attrs: dict) -> list:
    """AssignSub(ref, delta): ref -= delta in place, under the variable's lock."""
    return _update(inputs, attrs, np.subtract, "AssignSub")


@register("CountUpTo")
def count_up_to(ctx: Any, inputs: list, attrs: dict) -> list:
    """CountUpTo(ref): the value before ref += 1; OutOfRangeError once ref has reached limit."""
    node_name, limit = attrs["_node_name"], int(attrs["limit"])
    ref = _ref(inputs[0], node_name)
    with ref.store.lock(ref.name):
        current = _read_writable(ref)
        before = current.copy()
        if before >= limit:
            raise OutOfRangeError(None, None, f"Reached limit of {limit}", node_name=node_name)
        current += 1
        return [before]


@register("IsVariableInitialized")
def is_variable_initialized(ctx: Any, inputs: list, attrs: dict) -> list:
    """IsVariableInitialized(ref) -> bool scalar."""
    ref = _ref(inputs[0], attrs["_node_name"])
    return [np.asarray(bool(ref.store.is_initialized(ref.name)))]


# ---------------------------------------------------------------------------------------
# optimizer updates


class _locked:
    """Hold the locks of several variables, taken in name order so two ops cannot deadlock.

    A plain class, not contextlib: an optimizer update takes it on every step, per variable."""

    __slots__ = ("_locks",)

    def __init__(self, refs: Sequence[VariableRef]) -> None:
        if len(refs) == 1:
            self._locks = [refs[0].store.lock(refs[0].name)]
        elif len(refs) == 2:   # var and accumulator: written out, no comprehensions
            first, second = refs
            if first.name > second.name:
                first, second = second, first
            self._locks = [first.store.lock(first.name)]
            if second.name != first.name:
                self._locks.append(second.store.lock(second.name))
        else:
            names = sorted({r.name: r for r in refs}.items())
            self._locks = [ref.store.lock(name) for name, ref in names]

    def __enter__(self) -> None:
        taken = []
        try:
            for lock in self._locks:
                lock.acquire()
                taken.append(lock)
        except BaseException:
            for lock in reversed(taken):
                lock.release()
            raise

    def __exit__(self, *exc: Any) -> None:
        for lock in reversed(self._locks):
            lock.release()


def _check_same_shape(var: _Array, other: _Array, what: str, attrs: dict) -> None:
    if var.shape != other.shape:
        raise InvalidArgumentError(
            f"{what} (node '{attrs['_node_name']}') must have the variable's shape "
            f"{shape_str(var.shape)}, got {shape_str(other.shape)}"
        )


# Fused updates: one pass over the variable instead of numpy's three or four passes and a
# temporary as big as the variable (~4x less memory traffic; 800 KB w1 of the example MLP:
# ~130 -> ~35 us per ApplyMomentum). Same float formulas, in the variable's dtype.
_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _fusable(var: _Array, *others: _Array) -> bool:
    if var.dtype not in _FUSED_DTYPES or not var.flags.c_contiguous:
        return False
    for other in others:   # a loop: a generator's every item is a call of its own
        if other.dtype != var.dtype or other.shape != var.shape or not other.flags.c_contiguous:
            return False
    return True


@jit()
def _gd_update(var, delta, alpha):  # type: ignore[no-untyped-def]
    for i in range(var.size):
        var[i] -= delta[i] * alpha


@jit()
def _momentum_update(var, accum, grad, lr, momentum, nesterov):  # type: ignore[no-untyped-def]
    for i in range(var.size):
        a = accum[i] * momentum + grad[i]
        accum[i] = a
        if nesterov:
            var[i] -= grad[i] * lr + a * (momentum * lr)
        else:
            var[i] -= a * lr


@jit()
def _adagrad_update(var, accum, grad, lr):  # type: ignore[no-untyped-def]
    for i in range(var.size):
        a = accum[i] + grad[i] * grad[i]
        accum[i] = a
        var[i] -= lr * grad[i] / np.sqrt(a)


@jit()
def _rmsprop_update(var, ms, mom, grad, lr, rho, momentum, epsilon):  # type: ignore[no-untyped-def]
    for i in range(var.size):
        m = ms[i] * rho + grad[i] * grad[i] * (1 - rho)
        ms[i] = m
        step = mom[i] * momentum + lr * grad[i] / np.sqrt(m + epsilon)
        mom[i] = step
        var[i] -= step


@jit()
def _adam_update(var, m, v, grad, lr_t, beta1, one_minus_beta1, one_minus_beta2,  # type: ignore[no-untyped-def]
                 epsilon, nesterov):
    for i in range(var.size):
        g = grad[i]
        mi = m[i] + (g - m[i]) * one_minus_beta1
        m[i] = mi
        vi = v[i] + (g * g - v[i]) * one_minus_beta2
        v[i] = vi
        direction = mi * beta1 + g * one_minus_beta1 if nesterov else mi
        var[i] -= direction * lr_t / (np.sqrt(vi) + epsilon)


@jit()
def _centered_rmsprop_update(var, mg, ms, mom, grad, lr, rho, momentum, epsilon):  # type: ignore[no-untyped-def]
    for i in range(var.size):
        g = grad[i]
        m = ms[i] * rho + g * g * (1 - rho)
        ms[i] = m
        a = mg[i] * rho + g * (1 - rho)
        mg[i] = a
        step = mom[i] * momentum + lr * g / np.sqrt(m - a * a + epsilon)
        mom[i] = step
        var[i] -= step


@register("ApplyGradientDescent")
def apply_gradient_descent(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyGradientDescent(ref, alpha, delta): var -= alpha * delta."""
    ref = _ref(inputs[0], attrs["_node_name"])
    alpha, delta = inputs[1], inputs[2]
    with _locked([ref]), quiet_fp():
        var = _read_writable(ref)
        _check_same_shape(var, delta, "delta", attrs)
        alpha = alpha.astype(var.dtype)
        if _fusable(var, delta):
            _gd_update(var.reshape(-1), delta.reshape(-1), alpha[()])
        else:
            step = np.multiply(delta, alpha, dtype=var.dtype)
            np.subtract(var, step, out=var)
        return [var]


@register("ApplyMomentum")
def apply_momentum(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyMomentum(ref, accum, lr, grad, momentum), TF's formulas.

    accum = accum * momentum + grad; var -= lr * accum, or with ``use_nesterov``
    var -= lr * grad + lr * momentum * accum.
    """
    node_name = attrs["_node_name"]
    ref, accum_ref, lr, grad, momentum = inputs[0], inputs[1], inputs[2], inputs[3], inputs[4]
    if type(ref) is not VariableRef or type(accum_ref) is not VariableRef:   # _ref names them
        ref, accum_ref = _ref(ref, node_name), _ref(accum_ref, node_name, 1)
    with _locked([ref, accum_ref]):
        var, accum = ref.store.read(ref.name), accum_ref.store.read(accum_ref.name)
        if not var.flags.writeable or not accum.flags.writeable:   # rare: copy on write
            var, accum = _read_writable(ref), _read_writable(accum_ref)
        if var.shape != accum.shape or var.shape != grad.shape:
            _check_same_shape(var, accum, "accum", attrs)
            _check_same_shape(var, grad, "grad", attrs)
        if lr.dtype != var.dtype or momentum.dtype != var.dtype:
            with quiet_fp():
                lr, momentum = lr.astype(var.dtype), momentum.astype(var.dtype)
        if _fusable(var, accum, grad):   # numba code: no numpy float warnings to silence
            _momentum_update(var.reshape(-1), accum.reshape(-1), grad.reshape(-1), lr[()],
                             momentum[()], bool(attrs.get("use_nesterov", False)))
            return [var]
        with quiet_fp():
            return _momentum_numpy(var, accum, lr, grad, momentum, attrs)


def _momentum_numpy(var: _Array, accum: _Array, lr: _Array, grad: _Array, momentum: _Array,
                    attrs: dict) -> list:
    """ApplyMomentum in numpy (other dtypes, strided arrays); its caller silences float warnings."""
    np.multiply(accum, momentum, out=accum)
    np.add(accum, grad, out=accum, casting="unsafe")
    if attrs.get("use_nesterov", False):
        step = np.multiply(grad, lr, dtype=var.dtype)
        step += accum * (momentum * lr)
    else:
        step = np.multiply(accum, lr)
    np.subtract(var, step, out=var)
    return [var]


@register("ApplyAdagrad")
def apply_adagrad(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyAdagrad(ref, accum, lr, grad): accum += grad^2; var -= lr * grad / sqrt(accum)."""
    node_name = attrs["_node_name"]
    ref, accum_ref = _ref(inputs[0], node_name), _ref(inputs[1], node_name, 1)
    lr, grad = inputs[2], inputs[3]
    with _locked([ref, accum_ref]), quiet_fp():
        var, accum = _read_writable(ref), _read_writable(accum_ref)
        _check_same_shape(var, accum, "accum", attrs)
        _check_same_shape(var, grad, "grad", attrs)
        lr = lr.astype(var.dtype)
        if _fusable(var, accum, grad):
            _adagrad_update(var.reshape(-1), accum.reshape(-1), grad.reshape(-1), lr[()])
        else:
            accum += np.square(grad, dtype=var.dtype)
            var -= lr * grad / np.sqrt(accum)
        return [var]


@register("ApplyRMSProp")
def apply_rmsprop(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyRMSProp(ref, ms, mom, lr, rho, momentum, epsilon, grad), TF's formulas."""
    node_name = attrs["_node_name"]
    ref, ms_ref, mom_ref = (_ref(inputs[i], node_name, i) for i in range(3))
    lr, rho, momentum, epsilon, grad = inputs[3:8]
    with _locked([ref, ms_ref, mom_ref]), quiet_fp():
        var, ms, mom = _read_writable(ref), _read_writable(ms_ref), _read_writable(mom_ref)
        for what, other in (("ms", ms), ("mom", mom), ("grad", grad)):
            _check_same_shape(var, other, what, attrs)
        lr, rho, momentum, epsilon = (x.astype(var.dtype) for x in (lr, rho, momentum, epsilon))
        if _fusable(var, ms, mom, grad):
            _rmsprop_update(var.reshape(-1), ms.reshape(-1), mom.reshape(-1), grad.reshape(-1),
                            lr[()], rho[()], momentum[()], epsilon[()])
        else:
            ms[...] = ms * rho + np.square(grad) * (1 - rho)
            mom[...] = mom * momentum + lr * grad / np.sqrt(ms + epsilon)
            var -= mom
        return [var]


@register("ApplyCenteredRMSProp")
def apply_centered_rmsprop(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyCenteredRMSProp(ref, mg, ms, mom, lr, rho, momentum, epsilon, grad): RMSProp
    whose denominator is the gradient's variance estimate, ms - mg^2 (TF's formulas)."""
    node_name = attrs["_node_name"]
    ref, mg_ref, ms_ref, mom_ref = (_ref(inputs[i], node_name, i) for i in range(4))
    lr, rho, momentum, epsilon, grad = inputs[4:9]
    with _locked([ref, mg_ref, ms_ref, mom_ref]), quiet_fp():
        var, mg, ms, mom = (_read_writable(r) for r in (ref, mg_ref, ms_ref, mom_ref))
        for what, other in (("mg", mg), ("ms", ms), ("mom", mom), ("grad", grad)):
            _check_same_shape(var, other, what, attrs)
        lr, rho, momentum, epsilon = (x.astype(var.dtype) for x in (lr, rho, momentum, epsilon))
        if _fusable(var, mg, ms, mom, grad):
            _centered_rmsprop_update(var.reshape(-1), mg.reshape(-1), ms.reshape(-1), mom.reshape(-1),
                                     grad.reshape(-1), lr[()], rho[()], momentum[()], epsilon[()])
        else:
            ms[...] = ms * rho + np.square(grad) * (1 - rho)
            mg[...] = mg * rho + grad * (1 - rho)
            mom[...] = mom * momentum + lr * grad / np.sqrt(ms - np.square(mg) + epsilon)
            var -= mom
        return [var]


@register("ApplyAdam")
def apply_adam(ctx: Any, inputs: list, attrs: dict) -> list:
    """ApplyAdam(ref, m, v, beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad).

    TF's formulas: lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t);
    m = m + (g - m) * (1 - beta1); v = v + (g*g - v) * (1 - beta2);
    var -= lr_t * m / (sqrt(v) + epsilon)   (with ``use_nesterov``: m*beta1 + (1-beta1)*g).
    """
    node_name = attrs["_node_name"]
    ref, m_ref, v_ref = (_ref(inputs[i], node_name, i) for i in range(3))
    beta1_power, beta2_power, lr, beta1, beta2, epsilon = (float(t) for t in inputs[3:9])
    grad = inputs[9]
    with _locked([ref, m_ref, v_ref]), quiet_fp():
        var, m, v = _read_writable(ref), _read_writable(m_ref), _read_writable(v_ref)
        for what, other in (("m", m), ("v", v), ("grad", grad)):
            _check_same_shape(var, other, what, attrs)
        lr_t = lr * math.sqrt(1.0 - beta2_power) / (1.0 - beta1_power)
        if _fusable(var, m, v, grad):   # one pass, in the variable's dtype as numpy's below
            t = var.dtype.type
            _adam_update(var.reshape(-1), m.reshape(-1), v.reshape(-1), grad.reshape(-1), t(lr_t),
                         t(beta1), t(1.0 - beta1), t(1.0 - beta2), t(epsilon),
                         bool(attrs.get("use_nesterov")))
            return [var]
        m += (grad - m) * (1.0 - beta1)
        v += (np.square(grad) - v) * (1.0 - beta2)
        direction = m * beta1 + grad * (1.0 - beta1) if attrs.get("use_nesterov") else m
        step = direction * lr_t / (np.sqrt(v) + epsilon)
        np.subtract(var, step, out=var, casting="unsafe")
        return [var]

"""Variable kernels: references, assignment copy semantics, in-place updates, optimizers."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from zmtf.framework.errors import FailedPreconditionError, InvalidArgumentError
from zmtf.kernels import VariableRef


def test_variable_output_is_a_ref_even_when_uninitialized(ctx):
    from zmtf.kernels import lookup

    (ref,) = lookup("Variable", "CPU", "float32")(
        ctx, [], {"_node_name": "v", "var_name": "v", "shape": [2], "dtype": "float32"}
    )
    assert isinstance(ref, VariableRef) and ref.name == "v" and ref.store is ctx.resources
    with pytest.raises(FailedPreconditionError, match="uninitialized value v"):
        ref.read()


def _variable(ctx, name, shape=None):
    from zmtf.kernels import lookup

    attrs = {"_node_name": name, "var_name": name, "shape": shape, "dtype": "float32"}
    return lookup("Variable", "CPU", "float32")(ctx, [], attrs)[0]


def test_is_variable_initialized(ctx, run):
    ref = _variable(ctx, "v", [2])
    assert run("IsVariableInitialized", [ref])[0].dtype == np.bool_
    assert not run("IsVariableInitialized", [ref])[0]
    run("Assign", [ref, np.zeros(2, np.float32)])
    assert run("IsVariableInitialized", [ref])[0]


def test_assign_stores_a_private_copy(ctx, run):
    ref = _variable(ctx, "v", [3])
    value = np.arange(3, dtype=np.float32)
    (out,) = run("Assign", [ref, value])
    stored = ctx.resources.read("v")
    assert not np.shares_memory(stored, value)
    assert out is stored  # Assign outputs the variable itself (TF1's ref); fetches copy it
    value[:] = 100  # the caller reuses its buffer
    np.testing.assert_array_equal(stored, [0, 1, 2])
    np.testing.assert_array_equal(out, [0, 1, 2])


def test_identity_of_a_variable_reads_its_current_value(ctx, run):
    ref = _variable(ctx, "v", [2])
    run("Assign", [ref, np.array([1.0, 2.0], np.float32)])
    np.testing.assert_array_equal(run("Identity", [ref])[0], [1.0, 2.0])
    run("AssignAdd", [ref, np.array([10.0, 10.0], np.float32)])
    np.testing.assert_array_equal(run("Identity", [ref])[0], [11.0, 12.0])


def test_identity_of_uninitialized_variable_fails(ctx, run):
    ref = _variable(ctx, "w", [2])
    with pytest.raises(FailedPreconditionError, match="uninitialized value w"):
        run("Identity", [ref])


def test_assign_validates_shape_against_declared_shape(ctx, run):
    ref = _variable(ctx, "v", [2, 3])
    message = (
        r"Assign requires shapes of both tensors to match. lhs shape= \[2,3\] rhs shape= \[3\]"
    )
    with pytest.raises(InvalidArgumentError, match=message):
        run("Assign", [ref, np.ones(3, np.float32)])
    run("Assign", [ref, np.ones(3, np.float32)], validate_shape=False)
    assert ctx.resources.read("v").shape == (3,)


def test_assign_validates_shape_against_current_value(ctx, run):
    ref = _variable(ctx, "v")  # declared shape unknown
    run("Assign", [ref, np.ones((2, 2), np.float32)])
    with pytest.raises(InvalidArgumentError, match=r"lhs shape= \[2,2\] rhs shape= \[4\]"):
        run("Assign", [ref, np.ones(4, np.float32)])


def test_assign_accepts_unknown_declared_dims(ctx, run):
    ref = _variable(ctx, "v", [None, 3])
    run("Assign", [ref, np.ones((5, 3), np.float32)])
    assert ctx.resources.read("v").shape == (5, 3)


@pytest.mark.parametrize("op_type,expected", [("AssignAdd", [11, 22]), ("AssignSub", [-9, -18])])
def test_assign_add_sub_update_in_place(ctx, run, op_type, expected):
    ref = _variable(ctx, "v", [2])
    run("Assign", [ref, np.array([1, 2], np.float32)])
    stored = ctx.resources.read("v")
    (out,) = run(op_type, [ref, np.array([10, 20], np.float32)])
    assert ctx.resources.read("v") is stored  # no reallocation
    np.testing.assert_array_equal(stored, expected)
    np.testing.assert_array_equal(out, expected)
    assert out is stored  # the updated variable itself, as TF1 returns the ref


def test_assign_add_on_uninitialized_fails(ctx, run):
    ref = _variable(ctx, "v", [2])
    with pytest.raises(FailedPreconditionError):
        run("AssignAdd", [ref, np.ones(2, np.float32)])


def test_assign_add_shape_mismatch(ctx, run):
    ref = _variable(ctx, "v", [2])
    run("Assign", [ref, np.ones(2, np.float32)])
    with pytest.raises(InvalidArgumentError, match="does not match variable 'v'"):
        run("AssignAdd", [ref, np.ones(3, np.float32)])


def test_concurrent_assign_add_loses_no_update(ctx, run):
    ref = _variable(ctx, "counter", [])
    run("Assign", [ref, np.asarray(0, np.int64)])
    one = np.asarray(1, np.int64)

    def work():
        for _ in range(300):
            run("AssignAdd", [ref, one])

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ctx.resources.read("counter") == 1200


def _init(ctx, run, name, value):
    ref = _variable(ctx, name, list(np.shape(value)))
    run("Assign", [ref, np.asarray(value, np.float32)])
    return ref


def test_apply_gradient_descent(ctx, run):
    ref = _init(ctx, run, "w", [1.0, 2.0])
    stored = ctx.resources.read("w")
    delta = np.array([1.0, -2.0], np.float32)
    (out,) = run("ApplyGradientDescent", [ref, np.asarray(0.1, np.float32), delta])
    np.testing.assert_allclose(out, [0.9, 2.2], rtol=1e-6)
    assert ctx.resources.read("w") is stored


@pytest.mark.parametrize("use_nesterov", [False, True])
def test_apply_momentum(ctx, run, use_nesterov):
    var, accum = np.array([1.0, 2.0]), np.array([0.5, -0.5])
    grad, lr, momentum = np.array([0.1, 0.2]), 0.01, 0.9
    ref, accum_ref = _init(ctx, run, "w", var), _init(ctx, run, "acc", accum)
    inputs = [ref, accum_ref, np.asarray(lr, np.float32), grad.astype(np.float32),
              np.asarray(momentum, np.float32)]
    (out,) = run("ApplyMomentum", inputs, use_nesterov=use_nesterov)
    new_accum = accum * momentum + grad
    if use_nesterov:
        expected = var - (grad * lr + new_accum * momentum * lr)
    else:
        expected = var - lr * new_accum
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    np.testing.assert_allclose(ctx.resources.read("acc"), new_accum, rtol=1e-6)


@pytest.mark.parametrize("case", ["float16 variable", "strided variable", "float64 scalars"])
def test_apply_momentum_outside_the_fused_path_agrees_and_stays_silent(ctx, run, case):
    """The numpy form (no numba kernel for float16 or non-contiguous storage) and float64
    lr/momentum cast to the variable's dtype give the fused path's result, and overflow is
    inf without a numpy warning (pytest turns warnings into errors)."""
    dtype = np.float16 if case == "float16 variable" else np.float32
    var, accum = np.array([1.0, 2.0, 60000.0], dtype), np.array([0.5, -0.5, 60000.0], dtype)
    scalar = np.float64 if case == "float64 scalars" else dtype
    grad, lr, momentum = np.array([0.1, 0.2, 60000.0], dtype), scalar(0.01), scalar(0.9)
    refs = []
    for name, value in (("w", var), ("acc", accum)):
        ref = VariableRef(ctx.resources, name)
        stored = np.repeat(value, 2)[::2] if case == "strided variable" else value.copy()
        ctx.resources.assign(name, stored)
        refs.append(ref)
    (out,) = run("ApplyMomentum", refs + [np.asarray(lr), grad, np.asarray(momentum)])
    new_accum = accum.astype(np.float64) * 0.9 + grad
    expected = var - 0.01 * new_accum
    np.testing.assert_allclose(out[:2], expected[:2], rtol=2e-3)
    if dtype == np.float16:
        assert np.isinf(ctx.resources.read("acc")[2])   # 0.9 * 6e4 + 6e4 overflows float16
    assert out.dtype == dtype
    assert out is ctx.resources.read("w")   # updated in place, strided or not


def test_apply_momentum_names_the_input_of_the_wrong_shape(ctx, run):
    refs = [_init(ctx, run, "w", [1.0, 2.0]), _init(ctx, run, "acc", [0.0, 0.0])]
    scalar = np.asarray(0.5, np.float32)
    with pytest.raises(InvalidArgumentError, match="grad .* must have the variable's shape"):
        run("ApplyMomentum", refs + [scalar, np.ones(3, np.float32), scalar])
    with pytest.raises(InvalidArgumentError, match="input 1 of node .* must be a variable ref"):
        run("ApplyMomentum", [refs[0], np.zeros(2, np.float32), scalar, np.ones(2, np.float32),
                              scalar])


def test_apply_momentum_on_read_only_storage_updates_a_private_copy(ctx, run):
    refs = [_init(ctx, run, "w", [1.0, 2.0]), _init(ctx, run, "acc", [0.0, 0.0])]
    frozen = np.array([1.0, 2.0], np.float32)
    frozen.flags.writeable = False   # e.g. a value that arrived zero-copy from the wire
    ctx.resources.assign("w", frozen)
    scalar = np.asarray(0.5, np.float32)
    (out,) = run("ApplyMomentum", refs + [scalar, np.ones(2, np.float32), scalar])
    np.testing.assert_allclose(out, [0.5, 1.5])
    np.testing.assert_array_equal(frozen, [1.0, 2.0])   # untouched
    assert ctx.resources.read("w") is out


@pytest.mark.parametrize("use_nesterov", [False, True])
def test_apply_adam(ctx, run, use_nesterov):
    var, m, v = np.array([1.0, -2.0, 3.0]), np.array([0.1, 0.0, -0.1]), np.array([0.01, 0.02, 0])
    grad = np.array([0.5, -0.5, 1.0])
    # the kernel sees float32 scalars: use the same rounded values in the reference
    beta1, beta2, lr, eps = (float(np.float32(s)) for s in (0.9, 0.999, 0.001, 1e-8))
    t = 3
    refs = [_init(ctx, run, name, value) for name, value in (("w", var), ("m", m), ("v", v))]
    scalars = [float(np.float32(beta1**t)), float(np.float32(beta2**t)), lr, beta1, beta2, eps]
    inputs = refs + [np.asarray(s, np.float32) for s in scalars] + [grad.astype(np.float32)]
    (out,) = run("ApplyAdam", inputs, use_nesterov=use_nesterov)
    lr_t = lr * np.sqrt(1 - scalars[1]) / (1 - scalars[0])
    new_m = m + (grad - m) * (1 - beta1)
    new_v = v + (grad * grad - v) * (1 - beta2)
    direction = new_m * beta1 + (1 - beta1) * grad if use_nesterov else new_m
    expected = var - lr_t * direction / (np.sqrt(new_v) + eps)
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    np.testing.assert_allclose(ctx.resources.read("m"), new_m, rtol=1e-5)
    np.testing.assert_allclose(ctx.resources.read("v"), new_v, rtol=1e-5)


def test_state_kernels_reject_non_refs(run):
    with pytest.raises(InvalidArgumentError, match="must be a variable reference"):
        run("AssignAdd", [np.ones(2, np.float32), np.ones(2, np.float32)])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("nesterov", [False, True])
def test_apply_adam_one_pass_equals_the_numpy_formulas(dtype, nesterov):
    """Contiguous arrays take the one-pass numba loop; a non-contiguous gradient the numpy
    formulas: both give the same bits."""
    from zmtf.kernels.cpu import state
    from zmtf.runtime.resources import ResourceContainer

    rng = np.random.default_rng(5)
    var, m, g = (rng.standard_normal((30, 7)).astype(dtype) for _ in range(3))
    v = rng.random((30, 7)).astype(dtype)

    def apply(grad):
        store = ResourceContainer()
        for name, value in (("w", var), ("m", m), ("v", v)):
            store.assign(name, value.copy())
        scalars = [np.asarray(x, dtype) for x in (0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-8)]
        inputs = [VariableRef(store, n, [30, 7]) for n in "wmv"] + scalars + [grad]
        state.apply_adam(None, inputs, {"_node_name": "adam", "use_nesterov": nesterov})
        return [store.read(n).copy() for n in "wmv"]

    one_pass, numpy_path = apply(g), apply(np.asfortranarray(g))
    assert state._adam_update.signatures
    for a, b in zip(one_pass, numpy_path):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(one_pass[0], var)

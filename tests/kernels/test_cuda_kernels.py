"""GPU kernels under numba's CUDA simulator, compared with the CPU kernels on small inputs.

Every GPU kernel is looked up in the registry as the runtime does, fed device arrays, and
its outputs are checked to be device arrays of exactly the CPU kernel's dtype and shape,
with the same values. Sizes stay at a few hundred elements: each simulated GPU thread is
a Python thread.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import zlib
from typing import Any

import numpy as np
import pytest

import zmtf.kernels.cuda as gpu
from zmtf.framework.errors import InternalError, InvalidArgumentError, NotFoundError
from zmtf.framework.errors import ResourceExhaustedError
from zmtf.kernels import VariableRef, lookup, supports

if not gpu.AVAILABLE:
    pytest.skip(f"GPU kernels not registered: {gpu.REASON}", allow_module_level=True)

from numba import cuda  # noqa: E402  (only once we know numba.cuda imports)

from zmtf.kernels.cuda import _device  # noqa: E402
from zmtf.kernels.cuda._plan import broadcast_plan, chunking, contiguous_reduction, reduce_plan  # noqa: E402

RNG = np.random.default_rng(0)
STATE_OPS = ("Assign", "AssignAdd", "AssignSub", "ApplyGradientDescent", "ApplyMomentum",
             "ApplyAdagrad", "ApplyRMSProp", "ApplyAdam")


# ---------------------------------------------------------------------------------------
# harness


@pytest.fixture(autouse=True)
def _seed_per_test(request: Any) -> None:
    """Each test draws the same inputs whatever runs before it."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))


@pytest.fixture
def gctx(make_ctx: Any) -> Any:
    """A CPU test context plus what the runtime gives GPU kernels: a stream, a const cache
    and a budgeted allocator that records every allocation."""
    ctx = make_ctx()
    ctx.gpu_stream = cuda.stream()
    ctx.gpu_const_cache = {}
    ctx.gpu_allocations = []
    ctx.gpu_budget = None

    def gpu_empty(shape: tuple, dtype: Any) -> Any:
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if ctx.gpu_budget is not None and nbytes > ctx.gpu_budget:
            raise ResourceExhaustedError(f"OOM: {nbytes} bytes over the test budget")
        ctx.gpu_allocations.append((tuple(shape), np.dtype(dtype)))
        return cuda.device_array(shape, dtype)

    ctx.gpu_empty = gpu_empty
    return ctx


def _is_device(value: Any) -> bool:
    return not isinstance(value, np.ndarray) and hasattr(value, "copy_to_host")


def _dtype_of(inputs: list, attrs: dict) -> str | None:
    first = inputs[0] if inputs else None
    if isinstance(first, VariableRef):
        if first.store.is_initialized(first.name):
            return first.read().dtype.name
        first = inputs[1] if len(inputs) > 1 else None  # Assign: the variable's dtype
    if first is not None:
        return np.dtype(first.dtype).name
    return attrs.get("dtype")


def run_gpu(ctx: Any, op_type: str, inputs: list, **attrs: Any) -> list[Any]:
    """Run the GPU kernel on device copies of ``inputs``; return its device outputs."""
    attrs.setdefault("_node_name", f"gpu_{op_type.lower()}")
    device_inputs = [
        cuda.to_device(v) if isinstance(v, np.ndarray) else v for v in inputs
    ]
    before = [v.copy_to_host() if _is_device(v) else None for v in device_inputs]
    kernel = lookup(op_type, "GPU", _dtype_of(inputs, attrs))
    outputs = kernel(ctx, device_inputs, attrs)
    assert isinstance(outputs, list)
    for out in outputs:
        assert _is_device(out), f"{op_type} returned {type(out).__name__}, not a device array"
    if op_type not in STATE_OPS:
        for old, new in zip(before, device_inputs):
            if old is not None:
                message = f"{op_type} mutated an input"
                np.testing.assert_array_equal(old, new.copy_to_host(), message)
    return outputs


def host(outputs: list[Any]) -> list[np.ndarray]:
    return [o.copy_to_host() for o in outputs]


def _tolerance(dtype: np.dtype) -> dict:
    if dtype == np.float32:
        return {"rtol": 2e-5, "atol": 1e-6}
    if dtype == np.float64:
        return {"rtol": 1e-12, "atol": 1e-13}
    return {"rtol": 0, "atol": 0}


@pytest.fixture
def assert_matches_cpu(run_in: Any, make_ctx: Any, gctx: Any) -> Any:
    """assert_matches_cpu(op_type, inputs, **attrs): assert the GPU kernel matches the CPU kernel's
    dtype, shape and values (a fresh CPU context per call); returns the GPU outputs."""

    def check(op_type: str, inputs: list, **attrs: Any) -> list:
        expected = run_in(make_ctx(), op_type, inputs, **attrs)
        got = host(run_gpu(gctx, op_type, inputs, **attrs))
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            assert g.dtype == e.dtype, f"{op_type}: dtype {g.dtype} != CPU {e.dtype}"
            assert g.shape == e.shape, f"{op_type}: shape {g.shape} != CPU {e.shape}"
            np.testing.assert_allclose(g, e, equal_nan=True, **_tolerance(e.dtype))
        return got

    return check


def normal(shape: tuple, dtype: Any = np.float32) -> np.ndarray:
    return np.asarray(RNG.standard_normal(shape), dtype=dtype)


# ---------------------------------------------------------------------------------------
# registry and import


def test_registry_places_float_state_on_gpu_but_not_integer_variables() -> None:
    assert supports("Variable", "GPU", "int32") is False
    assert supports("Variable", "GPU", "float32") is True
    assert supports("MatMul", "GPU", "float32")
    assert not supports("MatMul", "GPU", "int32")
    assert not supports("Assign", "GPU", "int64")
    assert supports("Const", "GPU", "int32") and supports("Identity", "GPU", "bool")
    with pytest.raises(NotFoundError, match="Variable"):
        lookup("Variable", "GPU", "int32")


def test_import_without_cuda_registers_nothing() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    code = (
        "import numba.cuda, zmtf.kernels.cuda as g; from zmtf.kernels import registry; "
        "gpu = [k for k in registry._KERNELS if k[1] == 'GPU' and not k[0].startswith('_')]; "
        "assert g.AVAILABLE == numba.cuda.is_available(), g.REASON; "
        "assert g.AVAILABLE or (not gpu and 'is_available' in g.REASON), (gpu, g.REASON); "
        "print('ok')"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], env=env, capture_output=True, text=True,
        timeout=120,
    )
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


_PTX_CHECK = r"""
import sys
import numba.cuda.dispatcher as dispatcher
from numba import cuda, types as T

class Device:  # device functions ask the current device for its compute capability
    compute_capability = (9, 0)

dispatcher.get_current_device = Device
from zmtf.kernels.cuda import array, elementwise, matmul, nn, reduce, state

def A(t, nd=1):
    return T.Array(t, nd, "C")

f16, f32, f64, i32, i64, b1 = T.float16, T.float32, T.float64, T.int32, T.int64, T.boolean
idx = (A(i64),) * 2
cases = [(k, (A(f32), A(f32))) for k in elementwise.UNARY_OPS.values()]
for spec in elementwise.BINARY_OPS.values():
    out = A(b1 if spec.bool_out else f32)
    cases.append((spec.flat, (A(f32), A(f32), out)))
    cases.append((spec.strided, (A(f32), A(f32), out, A(i64)) + idx))
cases += [
    (matmul._KERNELS["float32"], (A(f32, 2),) * 3 + (b1, b1)),
    (matmul._KERNELS["float64"], (A(f64, 2),) * 3 + (b1, b1)),
    (reduce.reduce_kernel, (A(f32), A(f64)) + idx * 2 + (i64, i64, i64, b1, f64)),
    (reduce.arg_max_kernel, (A(f32), A(i64)) + idx + (i64, i64)),
    (reduce.reduce_kernel, (A(i32), A(i32)) + idx * 2 + (i64, i64, i64, b1, f64)),
    (reduce.row_reduce_kernel, (A(f32), A(f64), i64, i64, i64, b1, f64)),
    (reduce.column_reduce_kernel, (A(f64), A(f32), i64, i64, i64, i64, b1, f64)),
    (nn.softmax_kernel, (A(f32), A(f32), i64, i64)),
    (nn.sparse_xent_kernel, (A(f32), A(i32), A(f32), A(f32), i64, i64)),
    (nn.xent_kernel, (A(f64),) * 4 + (i64, i64)),
    (array.fill_kernel, (A(b1), b1)),
    (array.fill_from_kernel, (A(f16), A(f16))),
    (array.cast_kernel, (A(f16), A(i32))),
    (array.nonzero_kernel, (A(f16), A(b1))),
    (array.gather_kernel, (A(i64), A(i64)) + idx),
    (state.gradient_descent_kernel, (A(f16),) * 3),
    (state.momentum_kernel, (A(f32),) * 5 + (b1,)),
    (state.adagrad_kernel, (A(f64),) * 4),
    (state.rmsprop_kernel, (A(f32),) * 8),
    (state.adam_kernel, (A(f32),) * 4 + (A(f64),) * 6 + (b1,)),
]
part, parts = int(sys.argv[1]), int(sys.argv[2])   # this process compiles every parts-th
for kernel, args in cases[part::parts]:
    ptx, _ = cuda.compile_ptx(kernel.py_func, args, cc=(9, 0))
    assert ".entry" in ptx, kernel
print("compiled", len(cases[part::parts]))
"""


def test_kernels_compile_to_ptx_for_a_real_gpu() -> None:
    """Lower the kernels for the real CUDA target (sm_90 PTX) in a process without the
    simulator: typing and NVVM catch what the simulator, which runs Python, cannot. Needs
    libNVVM (a CUDA toolkit), not a GPU; patches numba's device query for device functions."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    probe = "from numba.cuda.cudadrv import nvvm; print(nvvm.is_available())"
    found = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    if found.stdout.strip() != "True":
        pytest.skip(f"libNVVM not found, cannot compile PTX here: {found.stderr[-300:]}")
    parts = 2   # NVVM's compiles are the test's cost: one process per core of a 2-core VM
    procs = [subprocess.Popen([sys.executable, "-W", "error", "-c", _PTX_CHECK, str(part), str(parts)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for part in range(parts)]
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0 and out.startswith("compiled"), err[-3000:]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------------------------------
# pure plans


def test_broadcast_plan_coalesces_dims() -> None:
    same = broadcast_plan([(64, 32), (64, 32)])
    assert (same.shape, same.dims, same.strides) == ((64, 32), (2048,), ((1,), (1,)))
    assert same.is_flat
    row = broadcast_plan([(64, 32), (32,)])
    assert (row.dims, row.strides) == ((64, 32), ((32, 1), (0, 1)))
    scalar = broadcast_plan([(), (2, 1, 3)])
    assert (scalar.shape, scalar.dims, scalar.strides) == ((2, 1, 3), (6,), ((0,), (1,)))
    outer = broadcast_plan([(4, 1, 5), (1, 3, 1)])
    assert (outer.shape, outer.dims) == ((4, 3, 5), (4, 3, 5))
    assert outer.strides == ((5, 0, 1), (0, 1, 0)) and not outer.is_flat
    assert broadcast_plan([(), ()]).dims == ()
    assert broadcast_plan([(3, 1)], (2, 3, 4)).strides == ((0, 1, 0),)
    with pytest.raises(ValueError):
        broadcast_plan([(3,), (4,)])
    with pytest.raises(ValueError):
        broadcast_plan([(3, 2)], (3, 4))


def test_reduce_plan_and_chunking() -> None:
    plan = reduce_plan((2, 3, 4), (1,))
    assert plan == type(plan)((2, 4), (12, 1), (3,), (4,), 8, 3)
    assert reduce_plan((2, 3, 4), (1, 2)).red_dims == (12,)
    everything = reduce_plan((2, 3), (0, 1))
    assert (everything.out_dims, everything.out_strides, everything.out_count) == ((1,), (0,), 1)
    assert reduce_plan((5,), ()).red_dims == (1,)
    assert chunking(1, 10, width=64) == (1, 10)
    assert chunking(100, 1000, width=64) == (1, 1000)
    chunks, chunk_len = chunking(1, 1000, width=8)
    assert chunks == 8 and chunks * chunk_len >= 1000 > (chunks - 1) * chunk_len


def test_adjacent_reduced_axes_view_the_input_as_rows_or_columns() -> None:
    assert contiguous_reduction((64, 10), (1,)) == (64, 10, 1)        # softmax rows
    assert contiguous_reduction((64, 10), (0,)) == (1, 64, 10)        # bias gradient
    assert contiguous_reduction((2, 3, 4), (0, 1, 2)) == (1, 24, 1)   # a loss
    assert contiguous_reduction((2, 3, 4, 5), (1, 2)) == (2, 12, 5)
    assert contiguous_reduction((2, 1, 3, 4), (0, 2)) == (1, 6, 4)    # size-1 axes do not split
    assert contiguous_reduction((5, 6), ()) == (30, 1, 1)
    assert contiguous_reduction((2, 3, 4), (0, 2)) is None            # scattered: general kernel


# ---------------------------------------------------------------------------------------
# elementwise

BINARY = ["Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum", "Minimum", "SquaredDifference",
          "Equal", "Less", "Greater", "ReluGrad", "SigmoidGrad", "TanhGrad"]
SHAPES = [((3, 4), (3, 4)), ((3, 4), ()), ((), (2, 3)), ((2, 3, 4), (3, 1)), ((), ())]
MORE_SHAPES = [((4, 1, 5), (1, 3, 1)), ((5,), (2, 5)), ((0, 3), (1, 3)), ((2, 1), (2, 6))]


def _binary_inputs(op_type: str, x_shape: tuple, y_shape: tuple, dtype: Any) -> list:
    if op_type in ("Equal", "Less", "Greater", "Maximum", "Minimum"):  # ties
        return [np.asarray(RNG.integers(-2, 3, s), dtype) for s in (x_shape, y_shape)]
    y = normal(y_shape, dtype)
    if op_type == "RealDiv":
        y = (np.sign(y) + (y == 0)) * (np.abs(y) + 0.5)
    return [normal(x_shape, dtype), np.asarray(y, dtype)]


# TF's grad helpers take same-shape inputs (and the CPU kernels do not broadcast them)
BINARY_CASES = [
    (op, shapes) for op in BINARY for shapes in SHAPES
    if not op.endswith("Grad") or shapes[0] == shapes[1]
]


@pytest.mark.parametrize("op_type,shapes", BINARY_CASES, ids=str)
def test_binary_matches_cpu(assert_matches_cpu, op_type, shapes) -> None:
    assert_matches_cpu(op_type, _binary_inputs(op_type, *shapes, np.float32))


@pytest.mark.parametrize("shapes", MORE_SHAPES, ids=str)
@pytest.mark.parametrize("op_type", ["Add", "Mul", "Maximum", "Less"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_binary_broadcasting_matches_cpu(assert_matches_cpu, op_type, shapes, dtype) -> None:
    assert_matches_cpu(op_type, _binary_inputs(op_type, *shapes, dtype))


def test_host_inputs_are_refused_with_an_explanation(gctx) -> None:
    kernel = lookup("Add", "GPU", "float32")
    with pytest.raises(InternalError, match="must copy inputs of GPU nodes to the device"):
        kernel(gctx, [normal((3,)), normal((3,))], {"_node_name": "add"})


def test_binary_nan_and_incompatible_shapes(gctx) -> None:
    x = np.array([np.nan, 1.0, 2.0], np.float32)
    y = np.array([0.0, np.nan, 3.0], np.float32)
    (out,) = host(run_gpu(gctx, "Maximum", [x, y]))
    np.testing.assert_array_equal(out, np.maximum(x, y))
    with pytest.raises(InvalidArgumentError, match=r"Incompatible shapes: \[3\] vs. \[4\]"):
        run_gpu(gctx, "Add", [x, np.zeros(4, np.float32)])


UNARY = ["Neg", "Abs", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Square", "Sqrt"]


@pytest.mark.parametrize("shape", [(), (7,), (3, 5)], ids=str)
@pytest.mark.parametrize("op_type", UNARY)
def test_unary_matches_cpu(assert_matches_cpu, op_type, shape) -> None:
    x = np.asarray(normal(shape) * 3, np.float32)  # 0-d stays an array
    if op_type in ("Log", "Sqrt"):
        x = np.asarray(np.abs(x) + 0.1, np.float32)
    assert_matches_cpu(op_type, [x])


def test_unary_float64_and_extremes(assert_matches_cpu) -> None:
    assert_matches_cpu("Tanh", [normal((4, 3), np.float64)])
    wide = np.array([-100.0, -20.0, 0.0, 20.0, 100.0, np.nan], np.float32)
    assert_matches_cpu("Sigmoid", [wide])  # no overflow either side
    assert_matches_cpu("Relu", [wide])


@pytest.mark.parametrize("count", [1, 2, 3])
def test_add_n_matches_cpu(assert_matches_cpu, count) -> None:
    assert_matches_cpu("AddN", [normal((3, 4)) for _ in range(count)])


def test_add_n_rejects_mixed_shapes(gctx) -> None:
    with pytest.raises(InvalidArgumentError, match="same shape"):
        run_gpu(gctx, "AddN", [normal((3,)), normal((4,))])


# ---------------------------------------------------------------------------------------
# matmul


@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("mkn", [(1, 1, 1), (3, 5, 2), (17, 20, 18), (4, 0, 3)], ids=str)
def test_matmul_matches_cpu(assert_matches_cpu, mkn, transpose_a, transpose_b) -> None:
    m, k, n = mkn
    a = normal((k, m) if transpose_a else (m, k))
    b = normal((n, k) if transpose_b else (k, n))
    assert_matches_cpu("MatMul", [a, b], transpose_a=transpose_a, transpose_b=transpose_b)


@pytest.mark.skipif(gpu.SIMULATOR, reason="several 128-wide tiles: too slow on the simulator, whose "
                    "tiles (8 wide) the cases above already cross")
@pytest.mark.parametrize("transposes", [(False, False), (True, True)], ids=str)
def test_matmul_crosses_real_gpu_tiles(assert_matches_cpu, transposes) -> None:
    m, k, n = 300, 37, 257
    a = normal((k, m) if transposes[0] else (m, k))
    b = normal((n, k) if transposes[1] else (k, n))
    assert_matches_cpu("MatMul", [a, b], transpose_a=transposes[0], transpose_b=transposes[1])


def test_matmul_float64_one_full_tile_and_errors(assert_matches_cpu, gctx) -> None:
    assert_matches_cpu("MatMul", [normal((16, 16), np.float64), normal((16, 16), np.float64)])
    with pytest.raises(InvalidArgumentError, match="Matrix size-incompatible"):
        run_gpu(gctx, "MatMul", [normal((2, 3)), normal((2, 3))])
    with pytest.raises(InvalidArgumentError, match="2-D"):
        run_gpu(gctx, "MatMul", [normal((2, 3, 1)), normal((3, 2))])


# ---------------------------------------------------------------------------------------
# reductions

AXES = [None, (0,), (1,), (2,), (0, 2), (-1,), (), (0, 1, 2)]


@pytest.mark.parametrize("keep_dims", [False, True])
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("op_type", ["Sum", "Mean", "Max"])
def test_reduction_matches_cpu(assert_matches_cpu, op_type, axis, keep_dims) -> None:
    assert_matches_cpu(op_type, [normal((3, 4, 5))], axis=axis, keep_dims=keep_dims)


@pytest.mark.parametrize(
    "shape,axis", [((300,), None), ((2, 150), (1,)), ((150, 2), (0,)), ((), None), ((0, 3), (0,))],
    ids=str,
)
@pytest.mark.parametrize("op_type", ["Sum", "Mean", "Max"])
def test_reduction_two_pass_scalar_and_empty(assert_matches_cpu, op_type, shape, axis) -> None:
    assert_matches_cpu(op_type, [normal(shape, np.float64)], axis=axis)


@pytest.mark.parametrize("shape,axis", [((1 << 16,), None), ((4, 1 << 14), (1,)), ((1 << 14, 3), (0,)),
                                        ((40, 3, 50), (0, 2))],    # scattered axes: general kernel
                         ids=str)
@pytest.mark.parametrize("op_type", ["Sum", "Max"])
def test_long_reductions_split_into_two_passes(assert_matches_cpu, op_type, shape, axis) -> None:
    assert_matches_cpu(op_type, [normal(shape, np.float64)], axis=axis)


def test_reduction_axis_as_device_input_and_nan(assert_matches_cpu, gctx) -> None:
    x = normal((3, 4))
    (got,) = host(run_gpu(gctx, "Sum", [x, cuda.to_device(np.array([1], np.int32))]))
    np.testing.assert_allclose(got, x.sum(axis=1), rtol=1e-5)
    x[1, 2] = np.nan
    assert_matches_cpu("Max", [x], axis=(1,))


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_max_matches_cpu(assert_matches_cpu, axis) -> None:
    x = np.asarray(RNG.integers(0, 4, (5, 6)), np.float32)  # ties: the first index wins
    assert_matches_cpu("ArgMax", [x], axis=axis)
    x[2, 3] = np.nan
    assert_matches_cpu("ArgMax", [x], axis=axis, output_type="int32")


@pytest.mark.parametrize("shapes", [((4, 3), (3,)), ((2, 4, 3), (4, 1)), ((3, 2), (3, 2))], ids=str)
def test_sum_to_shape_matches_cpu(assert_matches_cpu, shapes) -> None:
    x_shape, target = shapes
    assert_matches_cpu("SumToShape", [normal(x_shape), np.array(target, np.int32)])


@pytest.mark.parametrize("grad_shape, target, axis, keep", [
    ((), (4, 3), None, False), ((3,), (4, 3), (0,), False), ((4, 1), (4, 3), (1,), True),
    ((2, 1, 5), (2, 3, 5), (-2,), True), ((0,), (0, 3), (1,), False),
], ids=str)
def test_mean_grad_matches_cpu(assert_matches_cpu, grad_shape, target, axis, keep) -> None:
    assert_matches_cpu("MeanGrad", [normal(grad_shape), np.array(target, np.int32)],
                       axis=axis, keep_dims=keep)


# ---------------------------------------------------------------------------------------
# nn


@pytest.mark.parametrize("shape", [(4, 7), (1, 1), (5,), (2, 3, 4)], ids=str)
def test_softmax_matches_cpu(assert_matches_cpu, shape) -> None:
    assert_matches_cpu("Softmax", [normal(shape) * 10])


@pytest.mark.parametrize("label_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_xent_matches_cpu(assert_matches_cpu, dtype, label_dtype) -> None:
    features = normal((6, 5), dtype) * 4
    labels = np.asarray(RNG.integers(0, 5, 6), label_dtype)
    assert_matches_cpu("SparseSoftmaxCrossEntropyWithLogits", [features, labels])


def test_sparse_xent_invalid_label_gives_nan_row_like_tf_gpu(gctx) -> None:
    features = normal((3, 4))
    labels = np.array([1, 4, -1], np.int32)
    loss, backprop = host(run_gpu(gctx, "SparseSoftmaxCrossEntropyWithLogits", [features, labels]))
    assert np.isfinite(loss[0]) and np.isnan(loss[1:]).all()
    assert np.isfinite(backprop[0]).all() and np.isnan(backprop[1:]).all()
    with pytest.raises(InvalidArgumentError, match="batch size"):
        run_gpu(gctx, "SparseSoftmaxCrossEntropyWithLogits", [features, np.zeros(2, np.int32)])


def test_xent_matches_cpu(assert_matches_cpu, gctx) -> None:
    features = normal((5, 4)) * 3
    labels = np.exp(normal((5, 4)))
    labels /= labels.sum(axis=1, keepdims=True)
    assert_matches_cpu("SoftmaxCrossEntropyWithLogits", [features, labels])
    with pytest.raises(InvalidArgumentError, match="same size"):
        run_gpu(gctx, "SoftmaxCrossEntropyWithLogits", [features, labels[:, :3].copy()])


@pytest.mark.parametrize(
    "shapes,data_format",
    [(((3, 4), (4,)), "NHWC"), (((2, 3, 2, 4), (4,)), "NHWC"), (((2, 3, 2, 2), (3,)), "NCHW")],
    ids=str,
)
def test_bias_add_matches_cpu(assert_matches_cpu, shapes, data_format) -> None:
    value_shape, bias_shape = shapes
    assert_matches_cpu("BiasAdd", [normal(value_shape), normal(bias_shape)], data_format=data_format)


# ---------------------------------------------------------------------------------------
# array ops


def test_shapes_are_shared_small_constants_read_back_without_the_device(gctx) -> None:
    x = cuda.to_device(np.zeros((4, 5), np.float32))
    (first,) = run_gpu(gctx, "Shape", [x])
    (again,) = run_gpu(gctx, "Shape", [cuda.to_device(np.ones((4, 5), np.float32))])
    assert again is first and first.dtype == np.int32
    np.testing.assert_array_equal(_device.to_host(gctx, first), [4, 5])
    (other,) = run_gpu(gctx, "Shape", [x], out_type="int64")
    assert other is not first and other.copy_to_host().tolist() == [4, 5]


def test_const_is_copied_once_per_node_and_context(gctx, make_ctx) -> None:
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    value.flags.writeable = False
    (first,) = run_gpu(gctx, "Const", [], value=value, dtype="float32", _node_name="c")
    (again,) = run_gpu(gctx, "Const", [], value=value, dtype="float32", _node_name="c")
    assert again is first and [k[0] for k in gctx.gpu_const_cache] == ["c", "host"]
    np.testing.assert_array_equal(first.copy_to_host(), value)
    np.testing.assert_array_equal(_device.to_host(gctx, first), value)   # no device read
    bare = make_ctx()  # no cache: a fresh copy each call, through cuda.device_array
    (a,) = run_gpu(bare, "Const", [], value=value, dtype="float32", _node_name="c")
    (b,) = run_gpu(bare, "Const", [], value=value, dtype="float32", _node_name="c")
    assert a is not b and np.array_equal(a.copy_to_host(), b.copy_to_host())


@pytest.mark.parametrize(
    "value", [np.float32(2.5), np.int32(7), np.array([True, False]), np.int64([[1, 2]])], ids=repr
)
def test_const_dtypes_and_0d(gctx, value) -> None:
    value = np.asarray(value)
    (out,) = run_gpu(gctx, "Const", [], value=value, dtype=value.dtype.name)
    got = out.copy_to_host()
    assert got.dtype == value.dtype and got.shape == value.shape
    np.testing.assert_array_equal(got, value)


def test_identity_reshape_shape(assert_matches_cpu, gctx) -> None:
    x = cuda.to_device(normal((2, 6)))
    (same,) = run_gpu(gctx, "Identity", [x])
    assert same is x
    (view,) = run_gpu(gctx, "Reshape", [x, np.array([3, -1], np.int32)])
    assert view.shape == (3, 4)
    np.testing.assert_array_equal(view.copy_to_host(), x.copy_to_host().reshape(3, 4))
    (flat,) = run_gpu(gctx, "Reshape", [x, cuda.to_device(np.array([-1], np.int64))])
    assert flat.shape == (12,)
    with pytest.raises(InvalidArgumentError, match="requested shape"):
        run_gpu(gctx, "Reshape", [x, np.array([5], np.int32)])
    for shape, out_type in [((2, 6), None), ((), None), ((3, 0), "int64")]:
        kwargs = {"out_type": out_type} if out_type else {}
        assert_matches_cpu("Shape", [normal(shape)], **kwargs)
    assert_matches_cpu("Reshape", [np.array([True, False, True, False]), np.array([2, 2], np.int32)])


@pytest.mark.parametrize(
    "source,target",
    [(np.float32, "int32"), (np.float32, "bool"), (np.float32, "float64"), (np.bool_, "float32"),
     (np.int32, "float32"), (np.int64, "int32"), (np.float16, "bool"), (np.float16, "float32")],
    ids=str,
)
def test_cast_matches_cpu(assert_matches_cpu, source, target) -> None:
    x = np.asarray(np.array([[0.0, 1.5, -2.7], [3.0, -0.0, 9.9]]), source)
    assert_matches_cpu("Cast", [x], DstT=target)


def test_cast_to_same_dtype_returns_input(gctx) -> None:
    x = cuda.to_device(normal((3,)))
    assert run_gpu(gctx, "Cast", [x], DstT="float32")[0] is x


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.float64])
def test_zeros_ones_like_match_cpu(assert_matches_cpu, dtype) -> None:
    x = np.asarray(normal((2, 3)), dtype)
    assert_matches_cpu("ZerosLike", [x])
    assert_matches_cpu("OnesLike", [x])
    assert_matches_cpu("OnesLike", [np.asarray(1.5, dtype)])


@pytest.mark.parametrize("value", [np.float32(1.25), np.int64(-3), np.bool_(True)], ids=repr)
def test_fill_matches_cpu(assert_matches_cpu, value) -> None:
    assert_matches_cpu("Fill", [np.array([2, 3], np.int32), np.asarray(value)])
    assert_matches_cpu("Fill", [np.array([], np.int64), np.asarray(value)])


@pytest.mark.parametrize(
    "shapes", [((3, 1), (2, 3, 4)), ((), (2, 2)), ((4,), (4,)), ((1,), (3, 0))], ids=str
)
def test_broadcast_to_matches_cpu(assert_matches_cpu, shapes) -> None:
    x_shape, target = shapes
    assert_matches_cpu("BroadcastTo", [normal(x_shape), np.array(target, np.int32)])


def test_broadcast_to_incompatible(gctx) -> None:
    with pytest.raises(InvalidArgumentError, match="Incompatible shapes"):
        run_gpu(gctx, "BroadcastTo", [normal((3,)), np.array([4], np.int32)])


# ---------------------------------------------------------------------------------------
# random


@pytest.mark.parametrize("op_type", ["RandomStandardNormal", "RandomUniform", "TruncatedNormal"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_random_matches_cpu_with_the_same_seed(run_in, make_ctx, gctx, op_type, dtype) -> None:
    shape = np.array([3, 40], np.int32)
    attrs = {"dtype": dtype, "seed": 7, "seed2": 3, "_node_name": "r"}
    expected = [run_in(make_ctx(), op_type, [shape], **attrs)[0] for _ in range(1)]
    got = host(run_gpu(gctx, op_type, [shape], **attrs))
    assert got[0].dtype == np.dtype(dtype) and got[0].shape == (3, 40)
    np.testing.assert_array_equal(got[0], expected[0])
    second = host(run_gpu(gctx, op_type, [cuda.to_device(shape)], **attrs))[0]
    assert not np.array_equal(second, got[0])  # the node's generator moves on


# ---------------------------------------------------------------------------------------
# state


def _gpu_variable(ctx: Any, name: str, shape: Any = None, dtype: str = "float32") -> VariableRef:
    attrs = {"_node_name": name, "var_name": name, "shape": shape, "dtype": dtype}
    return lookup("Variable", "GPU", dtype)(ctx, [], attrs)[0]


def test_assign_stores_a_private_device_copy(gctx) -> None:
    ref = _gpu_variable(gctx, "v", [3])
    value = cuda.to_device(np.arange(3, dtype=np.float32))
    (out,) = run_gpu(gctx, "Assign", [ref, value])
    stored = gctx.resources.read("v")
    assert _is_device(stored) and stored is not value and out is not stored
    value.copy_to_device(np.full(3, 100, np.float32))  # the producer reuses its buffer
    np.testing.assert_array_equal(stored.copy_to_host(), [0, 1, 2])
    np.testing.assert_array_equal(out.copy_to_host(), [0, 1, 2])
    (read,) = run_gpu(gctx, "Identity", [ref])
    assert read is stored  # a ref read: no copy
    with pytest.raises(InvalidArgumentError, match="lhs shape"):
        run_gpu(gctx, "Assign", [ref, np.zeros(4, np.float32)])


@pytest.mark.parametrize("op_type", ["AssignAdd", "AssignSub"])
def test_assign_add_sub_update_in_place(run_in, make_ctx, gctx, op_type) -> None:
    initial, delta = normal((2, 3)), normal((2, 3))
    ref = _gpu_variable(gctx, "v", [2, 3])
    run_gpu(gctx, "Assign", [ref, initial])
    stored = gctx.resources.read("v")
    (out,) = host(run_gpu(gctx, op_type, [ref, delta]))
    cpu = make_ctx()
    cpu_ref = VariableRef(cpu.resources, "v", [2, 3])
    run_in(cpu, "Assign", [cpu_ref, initial])
    (expected,) = run_in(cpu, op_type, [cpu_ref, delta])
    assert gctx.resources.read("v") is stored  # in place
    np.testing.assert_allclose(stored.copy_to_host(), expected, rtol=1e-6)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    run_gpu(gctx, op_type, [ref, np.ones((), np.float32)])  # a 0-d delta broadcasts
    np.testing.assert_allclose(
        stored.copy_to_host(), expected + (1 if op_type == "AssignAdd" else -1), rtol=1e-6
    )
    with pytest.raises(InvalidArgumentError, match="does not match variable 'v'"):
        run_gpu(gctx, op_type, [ref, normal((4,))])


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_apply_gradient_descent_matches_cpu(run_in, make_ctx, gctx, dtype) -> None:
    initial, delta, alpha = normal((4, 3), dtype), normal((4, 3), dtype), np.asarray(0.1, dtype)
    ref = _gpu_variable(gctx, "w", [4, 3], dtype)
    run_gpu(gctx, "Assign", [ref, initial])
    stored = gctx.resources.read("w")
    (out,) = host(run_gpu(gctx, "ApplyGradientDescent", [ref, alpha, delta]))
    cpu = make_ctx()
    cpu_ref = VariableRef(cpu.resources, "w", [4, 3])
    run_in(cpu, "Assign", [cpu_ref, initial])
    (expected,) = run_in(cpu, "ApplyGradientDescent", [cpu_ref, alpha, delta])
    assert out.dtype == expected.dtype and gctx.resources.read("w") is stored
    tolerance = 2e-3 if dtype == "float16" else 1e-6
    np.testing.assert_allclose(out, expected, rtol=tolerance)
    np.testing.assert_allclose(stored.copy_to_host(), expected, rtol=tolerance)


#: op -> (slot count, hyperparameters before the gradient, hyperparameters after it, attrs)
OPTIMIZERS = {
    "ApplyMomentum": (1, [0.1], [0.9], {}),
    "ApplyMomentum-nesterov": (1, [0.1], [0.9], {"use_nesterov": True}),
    "ApplyAdagrad": (1, [0.1], [], {}),
    "ApplyRMSProp": (2, [0.01, 0.9, 0.5, 1e-7], [], {}),
    "ApplyAdam": (2, [0.9 ** 3, 0.999 ** 3, 0.01, 0.9, 0.999, 1e-8], [], {}),
    "ApplyAdam-nesterov": (2, [0.81, 0.998, 0.01, 0.9, 0.999, 1e-8], [], {"use_nesterov": True}),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(OPTIMIZERS))
def test_fused_optimizer_updates_match_cpu(run_in, make_ctx, gctx, case, dtype) -> None:
    op_type = case.split("-")[0]
    slots, before, after, attrs = OPTIMIZERS[case]
    values = [normal((5, 3), dtype)] + [np.abs(normal((5, 3), dtype)) for _ in range(slots)]
    grad = normal((5, 3), dtype)
    scalars = [[np.asarray(h, dtype) for h in part] for part in (before, after)]
    cpu = make_ctx()
    results = []
    for ctx, run in ((gctx, run_gpu), (cpu, run_in)):
        refs = []
        for i, value in enumerate(values):
            ref = VariableRef(ctx.resources, f"s{i}", [5, 3])
            run(ctx, "Assign", [ref, value])
            refs.append(ref)
        run(ctx, op_type, refs + scalars[0] + [grad] + scalars[1], **attrs)
        stored = [ctx.resources.read(f"s{i}") for i in range(len(values))]
        results.append([v.copy_to_host() if _is_device(v) else np.asarray(v) for v in stored])
    tolerance = 1e-5 if dtype == "float32" else 1e-12
    for got, expected in zip(*results):
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
    assert not np.allclose(results[0][0], values[0])      # the variable moved


def test_optimizer_update_names_a_mismatched_gradient(gctx) -> None:
    refs = []
    for name in ("var", "accum"):
        ref = VariableRef(gctx.resources, name, [4])
        run_gpu(gctx, "Assign", [ref, normal((4,))])
        refs.append(ref)
    with pytest.raises(InvalidArgumentError, match=r"grad \(node 'gpu_applymomentum'\) must have the "
                                                   r"variable's shape \[4\], got \[3\]"):
        run_gpu(gctx, "ApplyMomentum", refs + [np.asarray(0.1, np.float32), normal((3,)),
                                              np.asarray(0.9, np.float32)])


def test_uninitialized_gpu_variable_fails_on_read(gctx) -> None:
    from zmtf.framework.errors import FailedPreconditionError

    ref = _gpu_variable(gctx, "u", [2])
    with pytest.raises(FailedPreconditionError, match="uninitialized value u"):
        lookup("Identity", "GPU", "float32")(gctx, [ref], {"_node_name": "read"})


# ---------------------------------------------------------------------------------------
# runtime contract: budgeted allocation, streams, concurrency


def test_outputs_are_allocated_through_gpu_empty(gctx) -> None:
    run_gpu(gctx, "MatMul", [normal((3, 4)), normal((4, 2))])
    assert ((3, 2), np.dtype(np.float32)) in gctx.gpu_allocations
    gctx.gpu_budget = 16
    with pytest.raises(ResourceExhaustedError, match="OOM"):
        run_gpu(gctx, "Add", [normal((10,)), normal((10,))])


def test_kernels_work_without_stream_or_budget(make_ctx) -> None:
    ctx = make_ctx()  # no gpu_stream, gpu_empty or gpu_const_cache: defaults apply
    (out,) = host(run_gpu(ctx, "Sum", [np.ones((4, 5), np.float32)], axis=(1,)))
    np.testing.assert_array_equal(out, np.full(4, 5, np.float32))


def test_concurrent_kernel_calls_are_serialized_by_the_context_lock(gctx) -> None:
    gctx.gpu_launch_lock = threading.Lock()  # what the runtime provides under the simulator
    x = normal((40,))
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(3):
                (out,) = host(run_gpu(gctx, "Relu", [x]))
                np.testing.assert_array_equal(out, np.maximum(x, 0))
        except BaseException as exc:  # noqa: BLE001  (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_numpy_2_5_with_numba_cuda_0_30_is_named_not_crashed() -> None:
    from zmtf.kernels.cuda import numpy_conflict

    reason = numpy_conflict("2.5.2", "0.30.4")
    assert "numba-cuda 0.30.4 cannot compile kernels with numpy 2.5.2" in reason
    assert "numpy<2.5" in reason
    assert numpy_conflict("2.4.6", "0.30.4") == ""
    assert numpy_conflict("2.5.0", "0.31.0") == ""
    assert numpy_conflict("2.5.0rc1", "") == ""          # no numba-cuda: numba's built-in target

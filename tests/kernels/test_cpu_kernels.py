"""CPU kernels on small inputs (the numpy path), compared with numpy references, over dtypes.

Large inputs that take the numba path are in test_cpu_large.py; variables in test_cpu_state.py.
"""

from __future__ import annotations


import numpy as np
import pytest

from zmtf.framework.errors import InvalidArgumentError

FLOATS = ["float16", "float32", "float64"]
INTS = ["int32", "int64"]
NUMERIC = FLOATS + INTS
RTOL = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12, "int32": 0, "int64": 0}


def values(
    dtype: str, shape: tuple[int, ...], seed: int = 0, low: int = -20, high: int = 20
) -> np.ndarray:
    """Random test data of ``dtype`` (always an ndarray, also for shape ())."""
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        data = rng.standard_normal(shape) * 3
    elif dtype == "bool":
        data = rng.random(shape) < 0.5
    else:
        data = rng.integers(low, high, shape)
    return np.asarray(data).astype(dtype)


def nonzero(dtype: str, shape: tuple[int, ...], seed: int = 1) -> np.ndarray:
    v = values(dtype, shape, seed)
    v[v == 0] = 1
    return v


def assert_matches(actual: np.ndarray, expected: np.ndarray, dtype: str | None = None) -> None:
    expected = np.asarray(expected)
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind == "f":
        rtol = RTOL[dtype or actual.dtype.name]
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=rtol)
    else:
        np.testing.assert_array_equal(actual, expected)


# ---------------------------------------------------------------------------------------
# binary elementwise

BINARY_REFERENCE = {
    "Add": (np.add, NUMERIC),
    "AddV2": (np.add, NUMERIC),
    "Sub": (np.subtract, NUMERIC),
    "Mul": (np.multiply, NUMERIC),
    "RealDiv": (np.true_divide, FLOATS),
    "FloorDiv": (np.floor_divide, NUMERIC),
    "FloorMod": (np.remainder, NUMERIC),
    "Maximum": (np.maximum, NUMERIC),
    "Minimum": (np.minimum, NUMERIC),
    "SquaredDifference": (lambda x, y: np.square(x - y), NUMERIC),
    "Equal": (np.equal, NUMERIC + ["bool"]),
    "NotEqual": (np.not_equal, NUMERIC + ["bool"]),
    "Less": (np.less, NUMERIC),
    "LessEqual": (np.less_equal, NUMERIC),
    "Greater": (np.greater, NUMERIC),
    "GreaterEqual": (np.greater_equal, NUMERIC),
    "LogicalAnd": (np.logical_and, ["bool"]),
    "LogicalOr": (np.logical_or, ["bool"]),
}
BINARY_CASES = [(op, dt) for op, (_, dts) in BINARY_REFERENCE.items() for dt in dts]
SHAPE_PAIRS = [((3, 4), (3, 4)), ((2, 3, 4), ()), ((), (5,)), ((3, 1, 4), (5, 1)), ((), ())]


@pytest.mark.parametrize("op_type,dtype", BINARY_CASES)
@pytest.mark.parametrize("shapes", SHAPE_PAIRS, ids=str)
def test_binary_matches_numpy(run, op_type, dtype, shapes):
    reference, _ = BINARY_REFERENCE[op_type]
    x, y = values(dtype, shapes[0], 0), nonzero(dtype, shapes[1], 1)
    (out,) = run(op_type, [x, y])
    with np.errstate(all="ignore"):
        expected = np.asarray(reference(x, y))
    assert_matches(out, expected.astype(expected.dtype), dtype)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_pow(run, dtype):
    x = values(dtype, (4, 5), low=-5, high=5)
    y = values(dtype, (4, 5), seed=3, low=0, high=4)
    if dtype.startswith("float"):
        x = np.abs(x) + np.asarray(0.5, dtype)
        y = np.clip(y, -3, 3)
    (out,) = run("Pow", [x, y])
    assert_matches(out, np.power(x, y), dtype)


def test_float_division_by_zero_gives_inf_without_warning(run):
    (out,) = run("RealDiv", [np.array([1.0, -1.0, 0.0], np.float32), np.zeros(3, np.float32)])
    np.testing.assert_array_equal(out, [np.inf, -np.inf, np.nan])


@pytest.mark.parametrize("op_type", ["FloorDiv", "FloorMod"])
def test_integer_division_by_zero_is_an_error(run, op_type):
    with pytest.raises(InvalidArgumentError, match="Integer division by zero"):
        run(op_type, [np.array([1, 2], np.int32), np.array([1, 0], np.int32)])


def test_integer_negative_power_is_an_error(run):
    with pytest.raises(InvalidArgumentError, match="negative integer powers"):
        run("Pow", [np.array([2], np.int32), np.array([-1], np.int32)])


def test_incompatible_shapes(run):
    with pytest.raises(InvalidArgumentError, match=r"Incompatible shapes: \[2,3\] vs. \[4\]"):
        run("Mul", [np.ones((2, 3), np.float32), np.ones(4, np.float32)])


def test_mixed_dtypes_keep_the_first_inputs_dtype(run):
    (out,) = run("Add", [np.ones(3, np.float32), np.asarray(2.0)])
    assert out.dtype == np.float32


def test_floor_ops_follow_python_semantics(run):
    x, y = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
    np.testing.assert_array_equal(run("FloorDiv", [x, y])[0], [3, -4, -4, 3])
    np.testing.assert_array_equal(run("FloorMod", [x, y])[0], [1, 1, -1, -1])


# ---------------------------------------------------------------------------------------
# unary elementwise


def _sigmoid(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


UNARY_REFERENCE = {
    "Neg": (np.negative, NUMERIC),
    "Abs": (np.abs, NUMERIC),
    "Square": (np.square, NUMERIC),
    "Sign": (np.sign, NUMERIC),
    "Relu": (lambda x: np.maximum(x, 0).astype(x.dtype), NUMERIC),
    "Relu6": (lambda x: np.clip(x, 0, 6).astype(x.dtype), NUMERIC),
    "Sigmoid": (_sigmoid, FLOATS),
    "Tanh": (np.tanh, FLOATS),
    "Exp": (np.exp, FLOATS),
    "Log": (np.log, FLOATS),
    "Sqrt": (np.sqrt, FLOATS),
    "Rsqrt": (lambda x: 1 / np.sqrt(x.astype(np.float64)), FLOATS),
    "Reciprocal": (lambda x: 1 / x.astype(np.float64), FLOATS),
    "Softplus": (lambda x: np.log1p(np.exp(x.astype(np.float64))), FLOATS),
}
UNARY_CASES = [(op, dt) for op, (_, dts) in UNARY_REFERENCE.items() for dt in dts]


@pytest.mark.parametrize("op_type,dtype", UNARY_CASES)
@pytest.mark.parametrize("shape", [(3, 5), ()], ids=str)
def test_unary_matches_numpy(run, op_type, dtype, shape):
    reference, _ = UNARY_REFERENCE[op_type]
    x = values(dtype, shape)
    if op_type in ("Log", "Sqrt", "Rsqrt"):
        x = np.asarray(np.abs(x) + np.asarray(0.25, dtype))
    (out,) = run(op_type, [x])
    assert_matches(out, np.asarray(reference(x)).astype(dtype), dtype)


def test_logical_not(run):
    (out,) = run("LogicalNot", [np.array([True, False])])
    np.testing.assert_array_equal(out, [False, True])


def test_unary_edge_values_without_warnings(run):
    x = np.array([0.0, -1.0, np.inf, -np.inf, np.nan, 1000.0, -1000.0], np.float32)
    np.testing.assert_array_equal(run("Log", [x])[0][:4], [-np.inf, np.nan, np.inf, np.nan])
    np.testing.assert_array_equal(run("Exp", [x])[0][5:], [np.inf, 0.0])
    np.testing.assert_array_equal(run("Sigmoid", [x])[0][5:], [1.0, 0.0])
    np.testing.assert_allclose(run("Softplus", [x])[0][5:], [1000.0, 0.0])
    assert np.isnan(run("Relu", [x])[0][4])


# ---------------------------------------------------------------------------------------
# gradient helpers, AddN


@pytest.mark.parametrize("dtype", FLOATS)
def test_activation_gradients(run, dtype):
    y, dy = values(dtype, (4, 3), 0), values(dtype, (4, 3), 1)
    y64, dy64 = y.astype(np.float64), dy.astype(np.float64)
    assert_matches(run("ReluGrad", [dy, y])[0], (dy64 * (y64 > 0)).astype(dtype), dtype)
    assert_matches(run("SigmoidGrad", [y, dy])[0], (dy64 * y64 * (1 - y64)).astype(dtype), dtype)
    assert_matches(run("TanhGrad", [y, dy])[0], (dy64 * (1 - y64 * y64)).astype(dtype), dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_relu_grad_of_a_big_tensor_keeps_numpys_nan_and_inf_rules(run, dtype):
    """From 16K elements ReluGrad is one numba pass (elementwise.py): a NaN or inf gradient
    where the feature is not positive still gives NaN (x * 0), a NaN feature stops it."""
    rng = np.random.default_rng(8)
    shape = (8, 26, 26, 16)
    gradients = rng.standard_normal(shape).astype(dtype)
    features = np.round(rng.standard_normal(shape)).astype(dtype)   # many exact zeros
    gradients.flat[::97], gradients.flat[::101] = np.nan, -np.inf
    features.flat[::89] = np.nan
    (out,) = run("ReluGrad", [gradients, features])
    with np.errstate(invalid="ignore"):
        expected = gradients * (features > 0).astype(dtype)
    assert out.dtype == np.dtype(dtype) and out.shape == shape
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("op", ["Add", "AddV2"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_a_bias_added_to_a_big_activation_is_numpys_sum_in_either_order(run, op, dtype):
    """From 16K elements x[..., C] + b[C] is one numba pass (elementwise.py _np_add)."""
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((8, 26, 26, 16)) * 10).astype(dtype)
    bias = (rng.standard_normal(16) * 10).astype(dtype)
    if x.dtype.kind == "f":
        x.flat[::13], bias[3] = np.nan, np.inf
    expected = x + bias
    for inputs in ([x, bias], [bias, x]):
        (out,) = run(op, inputs)
        assert out.dtype == x.dtype and out.shape == x.shape
        np.testing.assert_array_equal(out, expected)
    column = rng.standard_normal((8, 26, 26, 1)).astype(dtype)   # not a last-axis bias
    np.testing.assert_array_equal(run(op, [x, column])[0], x + column)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int32"])
def test_relu_of_a_big_tensor_is_numpys_maximum_bit_for_bit(run, dtype):
    """From 16K elements float Relu is one numba pass (elementwise.py): NaN stays NaN and
    -0.0 becomes +0.0, as np.maximum(x, 0) gives."""
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((8, 26, 26, 16)) * 10).astype(dtype)
    if x.dtype.kind == "f":
        x.flat[::7], x.flat[::11], x.flat[::13] = -0.0, np.nan, -np.inf
    (out,) = run("Relu", [x])
    expected = np.maximum(x, x.dtype.type(0))
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out.view(np.uint8), expected.view(np.uint8))


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize(
    "x_shape,target",
    [((2, 3, 4), (3, 4)), ((2, 3, 4), (3, 1)), ((2, 3, 4), (1, 3, 1)), ((2, 3), (2, 3)),
     ((5,), ())],
    ids=str,
)
def test_sum_to_shape_inverts_broadcasting(run, dtype, x_shape, target):
    x = values(dtype, x_shape)
    (out,) = run("SumToShape", [x, np.array(target, np.int32)])
    lead = len(x_shape) - len(target)
    axes = tuple(range(lead)) + tuple(
        lead + i for i, t in enumerate(target) if t == 1 and x_shape[lead + i] != 1
    )
    expected = x.astype(np.float64).sum(axis=axes).reshape(target).astype(dtype)
    assert_matches(out, expected, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("x_shape,target", [((64, 13, 13, 16), (16,)), ((40, 9, 30), (9, 30)),
                                            ((3000, 4), (1, 4)), ((2, 9000), (9000,))], ids=str)
def test_sum_over_leading_axes_adds_rows_in_numpys_order(run, dtype, x_shape, target):
    """A bias's gradient takes reduce.py's row-add loop (big, few columns): the same floats
    as numpy's sum, which adds rows one after another along a leading axis."""
    x = np.random.default_rng(7).standard_normal(x_shape).astype(dtype) * 100
    (out,) = run("SumToShape", [x, np.array(target, np.int32)])
    lead = len(x_shape) - len(target) + (1 if target[0] == 1 and len(target) > 1 else 0)
    expected = np.add.reduce(x, axis=tuple(range(lead))).reshape(target)
    assert out.dtype == np.dtype(dtype)
    if x_shape[-1] <= 4096:
        np.testing.assert_array_equal(out, expected)
    else:   # too wide for the loop: numpy's own sum
        np.testing.assert_allclose(out, expected, rtol=1e-5)


def test_sum_to_shape_rejects_non_broadcast_target(run):
    with pytest.raises(InvalidArgumentError, match=r"cannot reduce shape \[2,3\] to \[4\]"):
        run("SumToShape", [np.ones((2, 3), np.float32), np.array([4], np.int32)])


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_broadcast_to_returns_contiguous_copy(run, dtype):
    x = values(dtype, (3, 1))
    (out,) = run("BroadcastTo", [x, np.array([2, 3, 4], np.int32)])
    np.testing.assert_array_equal(out, np.broadcast_to(x, (2, 3, 4)))
    assert out.flags.c_contiguous and out.flags.writeable and not np.shares_memory(out, x)


def test_broadcast_to_incompatible(run):
    with pytest.raises(InvalidArgumentError, match=r"Incompatible shapes: \[3\] vs. \[4\]"):
        run("BroadcastTo", [np.ones(3, np.float32), np.array([4], np.int32)])


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("count", [1, 2, 4])
def test_add_n(run, dtype, count):
    xs = [values(dtype, (3, 2), seed=i) for i in range(count)]
    (out,) = run("AddN", xs)
    assert_matches(out, sum(xs[1:], xs[0]).astype(dtype), dtype)


def test_add_n_shape_mismatch(run):
    with pytest.raises(InvalidArgumentError, match="same shape"):
        run("AddN", [np.ones(2, np.float32), np.ones(3, np.float32)])


# ---------------------------------------------------------------------------------------
# reductions

AXES = [None, 0, -1, (0, 2), (), (2, 1)]


def _reduce_reference(op_type, x, axis, keep_dims):
    wide = x.astype(np.float64) if x.dtype.kind == "f" else x
    if op_type == "Sum":
        out = wide.sum(axis=axis, keepdims=keep_dims, dtype=wide.dtype)
    elif op_type == "Mean":
        if x.dtype.kind == "f":
            out = wide.mean(axis=axis, keepdims=keep_dims)
        else:
            total = x.sum(axis=axis, keepdims=keep_dims, dtype=x.dtype)
            count = x.size // max(total.size, 1)
            out = np.trunc(total / count)
    elif op_type == "Prod":
        out = wide.prod(axis=axis, keepdims=keep_dims, dtype=wide.dtype)
    else:
        out = {"Max": np.max, "Min": np.min}[op_type](x, axis=axis, keepdims=keep_dims)
    return np.asarray(out).astype(x.dtype)


@pytest.mark.parametrize("op_type", ["Sum", "Mean", "Max", "Min", "Prod"])
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("axis", AXES, ids=str)
@pytest.mark.parametrize("keep_dims", [False, True])
def test_reductions_match_numpy(run, op_type, dtype, axis, keep_dims):
    x = values(dtype, (2, 3, 4), low=-3, high=4)
    if op_type == "Prod" and dtype.startswith("float"):
        x = x / np.asarray(3, dtype)
    (out,) = run(op_type, [x], axis=axis, keep_dims=keep_dims)
    assert_matches(out, _reduce_reference(op_type, x, axis, keep_dims), dtype)


def test_reduction_axis_as_second_input(run):
    x = values("float32", (2, 3))
    (out,) = run("Sum", [x, np.array([1], np.int32)])
    np.testing.assert_allclose(out, x.sum(axis=1), rtol=1e-6)


def test_integer_mean_truncates_toward_zero_like_tf(run):
    (out,) = run("Mean", [np.array([-1, -2], np.int32)], axis=None)
    assert out == -1 and out.dtype == np.int32


def test_integer_sum_wraps_in_its_dtype(run):
    x = np.full(4, 2**30, np.int32)
    (out,) = run("Sum", [x], axis=None)
    assert out.dtype == np.int32 and out == np.int32(0)


def test_max_of_empty_is_lowest(run):
    (out,) = run("Max", [np.zeros((0, 3), np.float32)], axis=0)
    np.testing.assert_array_equal(out, [-np.inf] * 3)
    (out,) = run("Min", [np.zeros((0,), np.int32)], axis=None)
    assert out == np.iinfo(np.int32).max


def test_max_propagates_nan(run):
    (out,) = run("Max", [np.array([1.0, np.nan, 3.0], np.float32)], axis=None)
    assert np.isnan(out)


def test_invalid_reduction_axis(run):
    with pytest.raises(InvalidArgumentError, match="Invalid reduction dimension 2 for input with"):
        run("Sum", [np.ones((2, 3), np.float32)], axis=(2,))


@pytest.mark.parametrize("op_type,reference", [("All", np.all), ("Any", np.any)])
@pytest.mark.parametrize("axis", AXES, ids=str)
def test_boolean_reductions(run, op_type, reference, axis):
    x = values("bool", (2, 3, 4))
    (out,) = run(op_type, [x], axis=axis, keep_dims=False)
    assert_matches(out, reference(x, axis=axis))


@pytest.mark.parametrize("op_type,reference", [("ArgMax", np.argmax), ("ArgMin", np.argmin)])
@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("output_type", ["int32", "int64"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_arg_reductions(run, op_type, reference, dtype, output_type, axis):
    x = values(dtype, (4, 5), low=-100, high=100)
    (out,) = run(op_type, [x], axis=axis, output_type=output_type)
    assert_matches(out, reference(x, axis=axis).astype(output_type))


# ---------------------------------------------------------------------------------------
# MatMul


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul(run, dtype, transpose_a, transpose_b):
    a = values(dtype, (3, 4) if not transpose_a else (4, 3), 0, low=-5, high=5)
    b = values(dtype, (4, 2) if not transpose_b else (2, 4), 1, low=-5, high=5)
    (out,) = run("MatMul", [a, b], transpose_a=transpose_a, transpose_b=transpose_b)
    left, right = (a.T if transpose_a else a), (b.T if transpose_b else b)
    expected = (left.astype(np.float64) @ right.astype(np.float64)).astype(dtype)
    assert_matches(out, expected, "float16" if dtype == "float16" else "float32")


def test_matmul_incompatible(run):
    message = r"Matrix size-incompatible: In\[0\]: \[2,3\], In\[1\]: \[4,5\]"
    with pytest.raises(InvalidArgumentError, match=message):
        run("MatMul", [np.ones((2, 3), np.float32), np.ones((4, 5), np.float32)])


def test_matmul_empty_inner_dimension(run):
    (out,) = run("MatMul", [np.ones((2, 0), np.float32), np.ones((0, 3), np.float32)])
    np.testing.assert_array_equal(out, np.zeros((2, 3), np.float32))


# ---------------------------------------------------------------------------------------
# array ops


def test_identity_returns_the_same_object(run):
    x = np.arange(3.0)
    assert run("Identity", [x])[0] is x


def test_const_returns_the_shared_value(run):
    value = np.arange(4, dtype=np.int32)
    value.flags.writeable = False
    assert run("Const", [], value=value, dtype="int32")[0] is value


def test_no_op(run):
    assert run("NoOp", []) == []


@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
@pytest.mark.parametrize("shape", [[3, 4], [-1, 2], [12], [2, -1, 3], [1, 12, 1]], ids=str)
def test_reshape(run, dtype, shape):
    x = values(dtype, (2, 6))
    (out,) = run("Reshape", [x, np.array(shape, np.int32)])
    np.testing.assert_array_equal(out, x.reshape(shape))


def test_reshape_to_scalar(run):
    (out,) = run("Reshape", [np.array([7.0], np.float32), np.array([], np.int32)])
    assert out.shape == () and out == 7.0


@pytest.mark.parametrize(
    "shape,message",
    [
        ([4], "Input to reshape is a tensor with 6 values, but the requested shape has 4"),
        ([-1, 4], "tensor with 6 values, but the requested shape requires a multiple of 4"),
        ([-1, -1], "Only one input size may be -1, not both 0 and 1"),
    ],
)
def test_reshape_errors(run, shape, message):
    with pytest.raises(InvalidArgumentError, match=message):
        run("Reshape", [np.ones((2, 3), np.float32), np.array(shape, np.int32)])


@pytest.mark.parametrize("out_type", [None, "int32", "int64"])
def test_shape_size_rank(run, out_type):
    x = np.ones((2, 3, 4), np.float16)
    attrs = {"out_type": out_type} if out_type else {}
    (shape,) = run("Shape", [x], **attrs)
    (size,) = run("Size", [x], **attrs)
    (rank,) = run("Rank", [x])
    assert_matches(shape, np.array([2, 3, 4], out_type or "int32"))
    assert_matches(size, np.asarray(24, out_type or "int32"))
    assert_matches(rank, np.asarray(3, np.int32))


@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
@pytest.mark.parametrize("perm", [None, [0, 2, 1], [2, 0, 1]], ids=str)
def test_transpose(run, dtype, perm):
    x = values(dtype, (2, 3, 4))
    (out,) = run("Transpose", [x], perm=perm)
    np.testing.assert_array_equal(out, np.transpose(x, perm))
    assert out.flags.c_contiguous


def test_transpose_bad_perm(run):
    with pytest.raises(InvalidArgumentError, match="not a permutation"):
        run("Transpose", [np.ones((2, 3))], perm=[0, 0])


@pytest.mark.parametrize("src", NUMERIC + ["bool"])
@pytest.mark.parametrize("dst", NUMERIC + ["bool"])
def test_cast(run, src, dst):
    x = values(src, (5,))
    (out,) = run("Cast", [x], DstT=dst)
    assert_matches(out, x.astype(dst), dst if dst != "bool" else None)


def test_cast_nan_to_int_is_silent(run):
    (out,) = run("Cast", [np.array([np.nan, 1.5], np.float32)], DstT="int32")
    assert out.dtype == np.int32 and out[1] == 1


@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
def test_fill_zeros_ones_like(run, dtype):
    value = np.asarray(values(dtype, (1,))[0])
    (filled,) = run("Fill", [np.array([2, 3], np.int32), value])
    assert_matches(filled, np.full((2, 3), value, dtype))
    (zeros,) = run("ZerosLike", [filled])
    (ones,) = run("OnesLike", [filled])
    assert_matches(zeros, np.zeros((2, 3), dtype))
    assert_matches(ones, np.ones((2, 3), dtype))


def test_fill_rejects_non_scalar_value(run):
    with pytest.raises(InvalidArgumentError, match="value must be a scalar"):
        run("Fill", [np.array([2], np.int32), np.ones(2, np.float32)])


@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_expand_dims(run, axis):
    x = values("float32", (2, 3))
    (out,) = run("ExpandDims", [x], axis=axis)
    np.testing.assert_array_equal(out, np.expand_dims(x, axis))


def test_expand_dims_out_of_range(run):
    with pytest.raises(InvalidArgumentError, match="out of range"):
        run("ExpandDims", [np.ones((2, 3))], axis=3)


@pytest.mark.parametrize("dims,expected", [(None, (3,)), ([0], (3, 1)), ([-1, 0], (3,))], ids=str)
def test_squeeze(run, dims, expected):
    (out,) = run("Squeeze", [np.ones((1, 3, 1), np.int32)], squeeze_dims=dims)
    assert out.shape == expected


def test_squeeze_non_one_dim(run):
    message = r"Can not squeeze dim\[1\], expected a dimension of 1, got 3"
    with pytest.raises(InvalidArgumentError, match=message):
        run("Squeeze", [np.ones((1, 3))], squeeze_dims=[1])


@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat(run, dtype, axis):
    xs = [values(dtype, (2, 3), seed=i) for i in range(3)]
    (out,) = run("ConcatV2", xs, axis=axis)
    np.testing.assert_array_equal(out, np.concatenate(xs, axis=axis))
    (out_tf_style,) = run("ConcatV2", xs + [np.asarray(axis, np.int32)])
    np.testing.assert_array_equal(out_tf_style, out)


def test_concat_mismatch(run):
    message = r"shape\[0\] = \[2,3\] vs. shape\[1\] = \[2,4\]"
    with pytest.raises(InvalidArgumentError, match=message):
        run("ConcatV2", [np.ones((2, 3)), np.ones((2, 4))], axis=0)


@pytest.mark.parametrize("dtype", NUMERIC + ["bool"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_pack(run, dtype, axis):
    xs = [values(dtype, (2, 3), seed=i) for i in range(3)]
    (out,) = run("Pack", xs, axis=axis)
    np.testing.assert_array_equal(out, np.stack(xs, axis=axis))


def test_pack_mismatch(run):
    with pytest.raises(InvalidArgumentError, match="Shapes of all inputs must match"):
        run("Pack", [np.ones(2), np.ones(3)], axis=0)


# ---------------------------------------------------------------------------------------
# NN


def _log_softmax_reference(x):
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(4, 5), (2, 3, 7), (6,)], ids=str)
def test_softmax_and_log_softmax(run, dtype, shape):
    x = values(dtype, shape)
    expected_log = _log_softmax_reference(x)
    assert_matches(run("LogSoftmax", [x])[0], expected_log.astype(dtype), dtype)
    assert_matches(run("Softmax", [x])[0], np.exp(expected_log).astype(dtype), dtype)


def test_softmax_is_stable_for_large_logits(run):
    (out,) = run("Softmax", [np.array([[1000.0, 1000.0, -1000.0]], np.float32)])
    np.testing.assert_allclose(out, [[0.5, 0.5, 0.0]])


@pytest.mark.parametrize("dtype", FLOATS)
def test_softmax_cross_entropy(run, dtype):
    features = values(dtype, (4, 5))
    labels = np.random.default_rng(2).random((4, 5)).astype(dtype)
    labels /= labels.sum(axis=1, keepdims=True)
    loss, backprop = run("SoftmaxCrossEntropyWithLogits", [features, labels])
    log_probs = _log_softmax_reference(features)
    labels64 = labels.astype(np.float64)
    assert_matches(loss, (-(labels64 * log_probs).sum(axis=1)).astype(dtype), dtype)
    assert_matches(backprop, (np.exp(log_probs) - labels64).astype(dtype), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("label_dtype", ["int32", "int64"])
def test_sparse_softmax_cross_entropy(run, dtype, label_dtype):
    features = values(dtype, (4, 5))
    labels = np.array([0, 4, 2, 2], label_dtype)
    loss, backprop = run("SparseSoftmaxCrossEntropyWithLogits", [features, labels])
    log_probs = _log_softmax_reference(features)
    onehot = np.eye(5)[labels]
    assert_matches(loss, (-log_probs[np.arange(4), labels]).astype(dtype), dtype)
    assert_matches(backprop, (np.exp(log_probs) - onehot).astype(dtype), dtype)


@pytest.mark.parametrize("bad_label", [5, -1])
def test_sparse_softmax_label_out_of_range(run, bad_label):
    message = (
        rf"Received a label value of {bad_label} which is outside the valid range of \[0, 5\)\."
    )
    with pytest.raises(InvalidArgumentError, match=message):
        run(
            "SparseSoftmaxCrossEntropyWithLogits",
            [np.zeros((2, 5), np.float32), np.array([1, bad_label], np.int32)],
        )


@pytest.mark.parametrize("axis", [-1, 0, 1])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_one_hot(run, axis, dtype):
    indices = np.array([[0, 2], [3, -1]], np.int64)  # 3 and -1 are out of range for depth 3
    (out,) = run("OneHot", [indices], depth=3, on_value=5, off_value=-2, axis=axis, dtype=dtype)
    expected = np.where(indices[..., None] == np.arange(3), 5, -2).astype(dtype)
    if axis != -1:
        expected = np.moveaxis(expected, -1, axis)
    assert_matches(out, expected)


def test_one_hot_tf_style_inputs(run):
    inputs = [np.array([1, 0], np.int32), np.asarray(2, np.int32), np.asarray(1.0, np.float32),
              np.asarray(0.0, np.float32)]
    (out,) = run("OneHot", inputs)
    assert_matches(out, np.array([[0, 1], [1, 0]], np.float32))


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("data_format", ["NHWC", "NCHW"])
def test_bias_add(run, dtype, data_format):
    value = values(dtype, (2, 3, 4, 5))
    channels = 5 if data_format == "NHWC" else 3
    bias = values(dtype, (channels,), seed=4)
    (out,) = run("BiasAdd", [value, bias], data_format=data_format)
    shaped = bias if data_format == "NHWC" else bias.reshape(3, 1, 1)
    assert_matches(out, (value + shaped).astype(dtype), dtype)


def test_bias_add_size_mismatch(run):
    with pytest.raises(InvalidArgumentError, match="as many biases"):
        run("BiasAdd", [np.ones((2, 3), np.float32), np.ones(2, np.float32)])


# ---------------------------------------------------------------------------------------
# random


@pytest.mark.parametrize("op_type", ["RandomStandardNormal", "RandomUniform", "TruncatedNormal"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_random_shape_dtype_and_range(run, op_type, dtype):
    (out,) = run(op_type, [np.array([200, 50], np.int32)], dtype=dtype, seed=1, seed2=2)
    assert out.shape == (200, 50) and out.dtype == dtype
    if op_type == "RandomUniform":
        assert out.min() >= 0 and out.max() < 1
    elif op_type == "TruncatedNormal":
        assert np.abs(out).max() <= 2
    else:
        assert np.abs(out).max() > 2  # 10000 normal draws: some are beyond 2 stddev
    expected_mean = 0.5 if op_type == "RandomUniform" else 0.0
    assert abs(float(out.astype(np.float64).mean()) - expected_mean) < 0.05


@pytest.mark.parametrize("op_type", ["RandomStandardNormal", "RandomUniform", "TruncatedNormal"])
def test_random_seeded_runs_replay_and_advance(make_ctx, run_in, op_type):
    shape = np.array([3, 4], np.int32)
    first_ctx, second_ctx = make_ctx(), make_ctx()
    attrs = dict(dtype="float32", seed=7, seed2=3)
    draws = [run_in(first_ctx, op_type, [shape], **attrs)[0] for _ in range(2)]
    replay = run_in(second_ctx, op_type, [shape], **attrs)[0]
    assert not np.array_equal(draws[0], draws[1])  # each run draws new numbers
    np.testing.assert_array_equal(draws[0], replay)  # same seeds, same sequence


def test_random_rejects_negative_shape(run):
    with pytest.raises(InvalidArgumentError, match="negative dimension"):
        run("RandomUniform", [np.array([2, -1], np.int32)], dtype="float32", seed=0, seed2=0)

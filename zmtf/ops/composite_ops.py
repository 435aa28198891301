"""TF1 functions that are compositions of existing ops (their gradients come with them):
clipping and norms, dropout, logsumexp, moments, l2_normalize, leaky_relu, elu,
count_nonzero, range, placeholder_with_default."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.dtypes import as_dtype
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops, nn_ops, partition_ops, random_ops
from zmtf.ops.check_ops import assert_less, assert_non_negative
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.selection_ops import where
from zmtf.framework.tensor_shape import TensorShape


def _scope(name: str | None, default: str) -> Any:
    return get_default_graph().name_scope(name or default)


# ---- clipping and norms ------------------------------------------------------------------
def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any, name: str | None = None) -> Tensor:
    with _scope(name, "clip_by_value"):
        x = convert_to_tensor(t)
        lo = convert_to_tensor(clip_value_min, dtype=x.dtype)
        hi = convert_to_tensor(clip_value_max, dtype=x.dtype)
        return math_ops.minimum(math_ops.maximum(x, lo), hi)


def global_norm(t_list: Sequence[Any], name: str | None = None) -> Tensor:
    """sqrt(sum of every element squared) over the tensors (None entries are skipped)."""
    with _scope(name, "global_norm"):
        squares = [math_ops.reduce_sum(math_ops.square(convert_to_tensor(t))) for t in t_list
                   if t is not None]
        if not squares:
            raise ValueError("global_norm: t_list has no tensor")
        return math_ops.sqrt(math_ops.add_n(squares) if len(squares) > 1 else squares[0])


def clip_by_global_norm(t_list: Sequence[Any], clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list[Any], Tensor]:
    """Scale every tensor by clip_norm / max(global_norm, clip_norm); returns (list, norm)."""
    if isinstance(t_list, Tensor) or not isinstance(t_list, (list, tuple)):
        raise TypeError("t_list should be a sequence")
    with _scope(name, "clip_by_global_norm"):
        norm = use_norm if use_norm is not None else global_norm(t_list)
        clip = convert_to_tensor(clip_norm, dtype=norm.dtype)
        scale = clip * math_ops.minimum(math_ops.reciprocal(norm), math_ops.reciprocal(clip))
        clipped = [None if t is None else convert_to_tensor(t) * math_ops.cast(scale, convert_to_tensor(t).dtype)
                   for t in t_list]
        return clipped, norm


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Tensor:
    with _scope(name, "clip_by_norm"):
        x = convert_to_tensor(t)
        clip = convert_to_tensor(clip_norm, dtype=x.dtype)
        norm = math_ops.sqrt(math_ops.reduce_sum(math_ops.square(x), axis=axes, keepdims=True))
        return x * clip / math_ops.maximum(norm, clip)


def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: Any = None) -> Tensor:
    with _scope(name, "l2_normalize"):
        t = convert_to_tensor(x)
        axis = dim if axis is None else axis
        square_sum = math_ops.reduce_sum(math_ops.square(t), axis=axis, keepdims=True)
        return t * math_ops.rsqrt(math_ops.maximum(square_sum, constant(epsilon, dtype=t.dtype)))


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    with _scope(name, "l2_loss"):
        x = convert_to_tensor(t)
        return math_ops.reduce_sum(math_ops.square(x)) / constant(2.0, dtype=x.dtype)


# ---- activations, dropout ------------------------------------------------------------------
def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    with _scope(name, "LeakyRelu"):
        x = convert_to_tensor(features)
        return math_ops.maximum(x * constant(alpha, dtype=x.dtype), x)


def elu(features: Any, name: str | None = None) -> Tensor:
    with _scope(name, "Elu"):
        x = convert_to_tensor(features)
        zero = array_ops.zeros_like(x)
        # exp only of the negative part: the branch not taken must not overflow to inf
        return where(math_ops.greater(x, zero), x, math_ops.exp(math_ops.minimum(x, zero)) - 1.0)


def dropout(x: Any, keep_prob: Any = None, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None, rate: Any = None) -> Tensor:
    """Keep each element with probability keep_prob, scaled by 1 / keep_prob (TF1's)."""
    if keep_prob is None:
        if rate is None:
            raise ValueError("dropout: give keep_prob (or rate)")
        keep_prob = 1.0 - rate
    with _scope(name, "dropout"):
        t = convert_to_tensor(x)
        keep = convert_to_tensor(keep_prob, dtype=t.dtype)
        shape = array_ops.shape(t) if noise_shape is None else noise_shape
        noise = random_ops.random_uniform(shape, dtype=t.dtype, seed=seed) + keep
        return t / keep * math_ops.floor(noise)


# ---- losses and statistics ----------------------------------------------------------------
def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                      name: str | None = None, _sentinel: Any = None) -> Tensor:
    """max(x, 0) - x * z + log(1 + exp(-|x|)): stable for any logits."""
    with _scope(name, "logistic_loss"):
        x = convert_to_tensor(logits)
        z = convert_to_tensor(labels, dtype=x.dtype)
        zero = array_ops.zeros_like(x)
        return math_ops.maximum(x, zero) - x * z + math_ops.log(1.0 + math_ops.exp(-math_ops.abs(x)))


def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                     name: str | None = None, keep_dims: Any = None) -> Tensor:
    keepdims = bool(keep_dims) if keep_dims is not None else keepdims
    with _scope(name, "ReduceLogSumExp"):
        x = convert_to_tensor(input_tensor)
        top = array_ops.stop_gradient(math_ops.reduce_max(x, axis=axis, keepdims=True))
        out = math_ops.log(math_ops.reduce_sum(math_ops.exp(x - top), axis=axis, keepdims=True)) + top
        if keepdims:
            return out
        return array_ops.reshape(out, array_ops.shape(math_ops.reduce_sum(x, axis=axis)))


def moments(x: Any, axes: Any, shift: Any = None, name: str | None = None,
            keep_dims: bool = False, keepdims: Any = None) -> tuple[Tensor, Tensor]:
    keep = bool(keepdims) if keepdims is not None else keep_dims
    with _scope(name, "moments"):
        t = convert_to_tensor(x)
        mean = math_ops.reduce_mean(t, axis=axes, keepdims=True)
        variance = math_ops.reduce_mean(math_ops.squared_difference(t, array_ops.stop_gradient(mean)),
                                        axis=axes, keepdims=True)
        if not keep:
            mean = math_ops.reduce_mean(t, axis=axes)
            variance = array_ops.reshape(variance, array_ops.shape(mean))
        return mean, variance


def count_nonzero(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                  dtype: Any = dtypes.int64, name: str | None = None) -> Tensor:
    with _scope(name, "count_nonzero"):
        x = convert_to_tensor(input_tensor)
        nonzero = math_ops.not_equal(x, array_ops.zeros_like(x))
        return math_ops.reduce_sum(math_ops.cast(nonzero, dtype), axis=axis, keepdims=keepdims)


@op_def("Range")
def _range_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    for t, what in zip(inputs, ("start", "limit", "delta")):
        if t.shape.ndims not in (None, 0):
            raise ValueError(f"tf.range: {what} must be a scalar, got shape {t.shape} ({t.name})")
    return [(as_dtype(attrs["dtype"]), TensorShape([None]))]


def range_(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,
           name: str = "range") -> Tensor:
    """TF's tf.range: a constant for Python numbers, a Range op when a bound is a tensor
    (``tf.range(tf.shape(x)[0])``). Without ``dtype``: float32 if any bound is a float."""
    if limit is None:
        start, limit = 0, start
    bounds = (start, limit, delta)
    if not any(isinstance(v, Tensor) or hasattr(v, "_as_graph_element") for v in bounds):
        values = np.arange(start, limit, delta)
        if dtype is None:
            dtype = dtypes.float32 if values.dtype.kind == "f" else dtypes.int32
        return constant(values.astype(as_dtype(dtype).np), name=name)
    tensors = [convert_to_tensor(v) if isinstance(v, Tensor) or hasattr(v, "_as_graph_element")
               else v for v in bounds]
    if dtype is None:
        floating = any(t.dtype.is_floating if isinstance(t, Tensor) else isinstance(t, float)
                       for t in tensors)
        given = [t.dtype for t in tensors if isinstance(t, Tensor)]
        dtype = dtypes.float32 if floating and not any(d.is_floating for d in given) else \
            (next(d for d in given if d.is_floating) if floating else given[0])
    dtype = as_dtype(dtype)
    with get_default_graph().name_scope(name) as scope:
        args = [math_ops.cast(t, dtype) if isinstance(t, Tensor) else constant(t, dtype=dtype)
                for t in tensors]
        out = apply_op("Range", args, {"dtype": dtype.name}, name=scope).outputs[0]
    static = [_const_value(t) for t in args]
    if all(v is not None for v in static) and static[2] != 0:
        out.set_shape([len(np.arange(*static))])
    return out


def _const_value(t: Tensor) -> Any:
    """A scalar's value when it is a Const, else None."""
    return t.op.attrs["value"].item() if t.op.type == "Const" else None


def placeholder_with_default(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """``input`` unless fed: zmtf lets any tensor be fed, so this is an Identity by that name."""
    value = convert_to_tensor(input)
    out = array_ops.identity(value, name=name or "PlaceholderWithDefault")
    out.set_shape(shape)
    return out


# ---- debugging ------------------------------------------------------------------------------
@op_def("Print", stateful=True)
def _print_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def print_(input_: Any, data: Sequence[Any], message: str | None = None, first_n: int | None = None,
           summarize: int | None = None, name: str | None = None) -> Tensor:
    """TF1's ``tf.Print``: ``input_`` itself, logging ``message`` and the ``data`` values when
    it runs (logger "zmtf.print", wherever the op is placed: its task's log)."""
    x = convert_to_tensor(input_)
    values = [convert_to_tensor(d) for d in data]
    attrs = {"message": message or "", "first_n": -1 if first_n is None else int(first_n),
             "summarize": 3 if summarize is None else int(summarize)}
    return apply_op("Print", [x, *values], attrs, name=name or "Print").outputs[0]


@op_def("CheckNumerics")
def _check_numerics_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def check_numerics(tensor: Any, message: str, name: str | None = None) -> Tensor:
    """``tensor`` itself, or InvalidArgumentError "<message> : Tensor had NaN values" (or Inf)
    when it holds any. Its gradient is checked the same way."""
    t = convert_to_tensor(tensor)
    if t.dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
        raise TypeError(f"check_numerics takes float tensors, got {t.dtype.name}")
    return apply_op("CheckNumerics", [t], {"message": message}, name=name).outputs[0]


def verify_tensor_all_finite(t: Any, msg: str, name: str | None = None) -> Tensor:
    """TF1's name for ``check_numerics``."""
    return check_numerics(t, msg, name=name)


def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: float, name: str | None = None) -> Tensor:
    """TF's tf.nn.batch_normalization: ``(x - mean) * scale / sqrt(variance + eps) + offset``,
    computed as TF does (``x * inv + (offset - mean * inv)``); offset and scale may be None."""
    with _scope(name, "batchnorm"):
        t = convert_to_tensor(x)
        inv = math_ops.rsqrt(convert_to_tensor(variance, dtype=t.dtype) + variance_epsilon)
        if scale is not None:
            inv = inv * convert_to_tensor(scale, dtype=t.dtype)
        shift = -convert_to_tensor(mean, dtype=t.dtype) * inv
        if offset is not None:
            shift = convert_to_tensor(offset, dtype=t.dtype) + shift
        return t * inv + shift


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Tensor:
    """mean((x - mean(x))^2) over ``axis`` (tf.math.reduce_variance)."""
    with _scope(name, "reduce_variance"):
        x = convert_to_tensor(input_tensor)
        mean = math_ops.reduce_mean(x, axis=axis, keepdims=True)
        return math_ops.reduce_mean(math_ops.squared_difference(x, mean), axis=axis, keepdims=keepdims)


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """sqrt(reduce_variance) (tf.math.reduce_std)."""
    with _scope(name, "reduce_std"):
        return math_ops.sqrt(reduce_variance(input_tensor, axis=axis, keepdims=keepdims))


# ---- small TF1 conveniences ----------------------------------------------------------------
def log_sigmoid(x: Any, name: str | None = None) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), stable for large |x|."""
    with _scope(name, "LogSigmoid"):
        return math_ops.negative(nn_ops.softplus(math_ops.negative(convert_to_tensor(x))))


def softsign(features: Any, name: str | None = None) -> Tensor:
    """x / (1 + |x|): a tanh-like squashing whose tails decay polynomially."""
    with _scope(name, "Softsign"):
        x = convert_to_tensor(features)
        return x / (1 + math_ops.abs(x))


def xlogy(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x * log(y), and 0 wherever x is 0 (even for y = 0), with TF's gradients (0 there)."""
    with _scope(name, "Xlogy"):
        x, y = convert_to_tensor(x), convert_to_tensor(y)
        y_broadcast = y + array_ops.zeros_like(x)
        x_zero = math_ops.equal(x + array_ops.zeros_like(y), 0)
        # log(1) where x is 0: no 0 * log(0) = nan, and no gradient into y there
        return x * math_ops.log(where(x_zero, array_ops.ones_like(y_broadcast), y_broadcast))


def scalar_mul(scalar: Any, x: Any, name: str | None = None) -> Tensor:
    """``scalar * x`` for a scalar ``scalar``."""
    s = convert_to_tensor(scalar)
    if s.shape.ndims not in (0, None):
        raise ValueError(f"scalar_mul: scalar must be 0-d, got shape {s.shape}")
    t = convert_to_tensor(x)
    return math_ops.multiply(convert_to_tensor(scalar, dtype=t.dtype) if not isinstance(scalar, Tensor)
                             else s, t, name=name)


def identity_n(input: Sequence[Any], name: str | None = None) -> list[Tensor]:  # noqa: A002
    """Each input passed through ``tf.identity``."""
    with _scope(name, "IdentityN"):
        return [array_ops.identity(x) for x in input]


def shape_n(input: Sequence[Any], out_type: Any = dtypes.int32, name: str | None = None) -> list[Tensor]:  # noqa: A002
    """The shape of each input, as ``tf.shape``."""
    with _scope(name, "ShapeN"):
        return [array_ops.shape(x, out_type=out_type) for x in input]


def confusion_matrix(labels: Any, predictions: Any, num_classes: Any = None, weights: Any = None,
                     dtype: Any = dtypes.int32, name: str | None = None) -> Tensor:
    """``[num_classes, num_classes]`` counts (or summed weights) of (label, prediction) pairs;
    ``num_classes`` defaults to the largest value seen plus one, as in TF."""
    with _scope(name, "confusion_matrix"):
        labels = math_ops.cast(array_ops.reshape(convert_to_tensor(labels), [-1]), dtypes.int64)
        predictions = math_ops.cast(array_ops.reshape(convert_to_tensor(predictions), [-1]), dtypes.int64)
        checks = [assert_non_negative(labels, ["`labels` contains negative values"]),
                  assert_non_negative(predictions, ["`predictions` contains negative values"])]
        if num_classes is None:
            classes = math_ops.maximum(math_ops.reduce_max(predictions), math_ops.reduce_max(labels)) + 1
        else:
            classes = math_ops.cast(convert_to_tensor(num_classes), dtypes.int64)
            checks += [assert_less(labels, classes, ["`labels` out of bound"]),
                       assert_less(predictions, classes, ["`predictions` out of bound"])]
        with get_default_graph().control_dependencies(checks):
            cells = labels * classes + predictions
        dtype = as_dtype(dtype)
        values = (array_ops.ones_like(predictions, dtype) if weights is None else
                  math_ops.cast(array_ops.reshape(convert_to_tensor(weights), [-1]), dtype))
        counts = partition_ops.unsorted_segment_sum(values, cells, classes * classes)
        matrix = array_ops.reshape(counts, array_ops.stack([classes, classes]))
        if num_classes is not None and not isinstance(num_classes, Tensor):
            matrix.set_shape([int(num_classes), int(num_classes)])
        return matrix

"""``tf.layers``: the TF1 layer functions built on tf.get_variable (variables in a scope):
dense, conv2d, max_pooling2d, average_pooling2d, flatten, dropout, batch_normalization; and
the ``Dense`` layer object, which keeps its variables across calls (what seq2seq's output
and attention layers are)."""

from __future__ import annotations

import math
from typing import Any, Callable

from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.ops.rnn_cell import RNNCell
from zmtf.framework.tensor_shape import TensorShape, as_shape
from zmtf.ops import (
    array_ops, composite_ops, cond_ops, conv_ops, conv_variant_ops, math_ops, nn_ops, state_ops,
)
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.init_ops import Ones, Zeros
from zmtf.ops.variable_scope import get_variable, variable_scope


def dense(inputs: Any, units: int, activation: Callable[[Any], Any] | None = None,
          use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
          kernel_regularizer: Any = None, bias_regularizer: Any = None,
          trainable: bool = True, name: str | None = None, reuse: Any = None, **_unused: Any) -> Any:
    """``activation(inputs @ kernel + bias)``: variables "<name>/kernel" [in, units] (Glorot
    uniform by default) and "<name>/bias" [units] (zeros), in variable scope ``name``
    (default "dense", "dense_1", ...)."""
    x = convert_to_tensor(inputs)
    if x.shape.ndims != 2 or x.shape.as_list()[-1] is None:
        raise ValueError(f"tf.layers.dense in zmtf needs a 2-D input with a known last dimension, "
                         f"got {x.shape} ({x.name})")
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable("kernel", [x.shape.as_list()[-1], int(units)], dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              trainable=trainable)
        y = math_ops.matmul(x, kernel)
        if use_bias:
            bias = get_variable("bias", [int(units)], dtype=x.dtype, initializer=bias_initializer or Zeros(),
                                regularizer=bias_regularizer, trainable=trainable)
            y = nn_ops.bias_add(y, bias)
        return activation(y) if activation is not None else y



def _pair(value: Any, what: str) -> list[int]:
    """Keras-style sizes: an int or a pair of ints, as [height, width]."""
    items = [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]
    if len(items) != 2:
        raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}")
    return items


def _layer_padding(padding: str) -> str:
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"padding must be 'valid' or 'same', got {padding!r}")
    return padding.upper()


def _channels_last(data_format: str, layer: str) -> None:
    if data_format != "channels_last":
        raise ValueError(f"tf.layers.{layer} in zmtf supports data_format='channels_last' only "
                         f"(TF's CPU kernels are NHWC), got {data_format!r}")


def _conv_layer(layer: str, inputs: Any, rank: int, filters: int, name: str | None,
                reuse: Any, use_bias: bool, bias_initializer: Any, bias_regularizer: Any,
                trainable: bool, activation: Callable[[Any], Any] | None,
                convolve: Callable[[Any, int], Any]) -> Any:
    """The frame every convolution layer shares: the input checked, a variable scope (default
    ``layer``, ``layer_1``, ...), ``convolve(x, in_channels)`` making its kernels, then the
    bias "<name>/bias" [filters] (zeros) and the activation."""
    x = convert_to_tensor(inputs)
    if x.shape.ndims != rank or x.shape.as_list()[-1] is None:
        raise ValueError(f"tf.layers.{layer} needs a {rank}-D channels-last input with a known "
                         f"channel count, got {x.shape} ({x.name})")
    with variable_scope(name, default_name=layer, reuse=reuse):
        y = convolve(x, x.shape.as_list()[-1])
        if use_bias:
            bias = get_variable("bias", [int(filters)], dtype=x.dtype,
                                initializer=bias_initializer or Zeros(),
                                regularizer=bias_regularizer, trainable=trainable)
            y = nn_ops.bias_add(y, bias)
        return activation(y) if activation is not None else y


def conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
           padding: str = "valid", data_format: str = "channels_last", dilation_rate: Any = (1, 1),
           activation: Callable[[Any], Any] | None = None, use_bias: bool = True,
           kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Any = None, bias_regularizer: Any = None, trainable: bool = True,
           name: str | None = None, reuse: Any = None, **_unused: Any) -> Any:
    """``activation(conv2d(inputs, kernel) + bias)``: variables "<name>/kernel"
    [k_h, k_w, in_channels, filters] (Glorot uniform by default) and "<name>/bias" [filters]
    (zeros), in variable scope ``name`` (default "conv2d", "conv2d_1", ...)."""
    _channels_last(data_format, "conv2d")
    k_h, k_w = _pair(kernel_size, "kernel_size")

    def convolve(x: Any, channels: int) -> Any:
        kernel = get_variable("kernel", [k_h, k_w, channels, int(filters)], dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              trainable=trainable)
        return conv_ops.conv2d(x, kernel, _pair(strides, "strides"), _layer_padding(padding),
                               dilations=_pair(dilation_rate, "dilation_rate"))

    return _conv_layer("conv2d", inputs, 4, filters, name, reuse, use_bias, bias_initializer,
                       bias_regularizer, trainable, activation, convolve)


def transposed_convolution(x: Any, kernel: Any, sizes: list[int], steps: list[int], mode: str,
                           filters: int) -> Any:
    """conv2d_transpose of ``x`` with the output size TF's layers compute: ``size * stride``
    ('SAME') or ``size * stride + max(kernel - stride, 0)`` ('VALID'); the batch may be
    unknown."""
    dims = x.shape.as_list()
    spatial = [None if d is None else d * s + (max(k - s, 0) if mode == "VALID" else 0)
               for d, k, s in zip(dims[1:3], sizes, steps)]
    if None in spatial:
        raise ValueError(f"a transposed convolution in zmtf needs the input's height and "
                         f"width, got {x.shape} ({x.name})")
    batch = dims[0] if dims[0] is not None else array_ops.shape(x)[0]
    output_shape = (array_ops.stack([batch, *spatial, filters]) if dims[0] is None
                    else [batch, *spatial, filters])
    y = conv_ops.conv2d_transpose(x, kernel, output_shape, [1, *steps, 1], mode)
    y.set_shape([dims[0], *spatial, filters])
    return y


def conv2d_transpose(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last",
                     activation: Callable[[Any], Any] | None = None, use_bias: bool = True,
                     kernel_initializer: Any = None, bias_initializer: Any = None,
                     kernel_regularizer: Any = None, bias_regularizer: Any = None,
                     trainable: bool = True, name: str | None = None, reuse: Any = None,
                     **_unused: Any) -> Any:
    """The transpose of conv2d: "<name>/kernel" [k_h, k_w, filters, in_channels] and
    "<name>/bias"; each spatial size becomes ``size * stride`` ('same') or
    ``size * stride + max(kernel - stride, 0)`` ('valid'), as TF's layer computes it."""
    _channels_last(data_format, "conv2d_transpose")
    sizes, steps = _pair(kernel_size, "kernel_size"), _pair(strides, "strides")
    mode = _layer_padding(padding)

    def convolve(x: Any, channels: int) -> Any:
        kernel = get_variable("kernel", [*sizes, int(filters), channels], dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              trainable=trainable)
        return transposed_convolution(x, kernel, sizes, steps, mode, int(filters))

    return _conv_layer("conv2d_transpose", inputs, 4, filters, name, reuse, use_bias,
                       bias_initializer, bias_regularizer, trainable, activation, convolve)


def separable_conv2d(inputs: Any, filters: int, kernel_size: Any, strides: Any = (1, 1),
                     padding: str = "valid", data_format: str = "channels_last",
                     dilation_rate: Any = (1, 1), depth_multiplier: int = 1,
                     activation: Callable[[Any], Any] | None = None, use_bias: bool = True,
                     depthwise_initializer: Any = None, pointwise_initializer: Any = None,
                     bias_initializer: Any = None, depthwise_regularizer: Any = None,
                     pointwise_regularizer: Any = None, bias_regularizer: Any = None,
                     trainable: bool = True, name: str | None = None, reuse: Any = None,
                     **_unused: Any) -> Any:
    """A depthwise convolution then a 1x1 one: "<name>/depthwise_kernel"
    [k_h, k_w, in_channels, depth_multiplier], "<name>/pointwise_kernel"
    [1, 1, in_channels * depth_multiplier, filters] and "<name>/bias"."""
    _channels_last(data_format, "separable_conv2d")
    sizes = _pair(kernel_size, "kernel_size")

    def convolve(x: Any, channels: int) -> Any:
        depthwise = get_variable("depthwise_kernel", [*sizes, channels, int(depth_multiplier)],
                                 dtype=x.dtype, initializer=depthwise_initializer,
                                 regularizer=depthwise_regularizer, trainable=trainable)
        pointwise = get_variable("pointwise_kernel",
                                 [1, 1, channels * int(depth_multiplier), int(filters)],
                                 dtype=x.dtype, initializer=pointwise_initializer,
                                 regularizer=pointwise_regularizer, trainable=trainable)
        return conv_variant_ops.separable_conv2d(
            x, depthwise, pointwise, [1, *_pair(strides, "strides"), 1], _layer_padding(padding),
            rate=_pair(dilation_rate, "dilation_rate"))

    return _conv_layer("separable_conv2d", inputs, 4, filters, name, reuse, use_bias,
                       bias_initializer, bias_regularizer, trainable, activation, convolve)


def conv1d(inputs: Any, filters: int, kernel_size: Any, strides: Any = 1,
           padding: str = "valid", data_format: str = "channels_last", dilation_rate: Any = 1,
           activation: Callable[[Any], Any] | None = None, use_bias: bool = True,
           kernel_initializer: Any = None, bias_initializer: Any = None,
           kernel_regularizer: Any = None, bias_regularizer: Any = None, trainable: bool = True,
           name: str | None = None, reuse: Any = None, **_unused: Any) -> Any:
    """A convolution over [batch, width, channels]: "<name>/kernel"
    [kernel_size, in_channels, filters] and "<name>/bias"."""
    _channels_last(data_format, "conv1d")
    width, step, rate = (_single(v, what) for v, what in (
        (kernel_size, "kernel_size"), (strides, "strides"), (dilation_rate, "dilation_rate")))

    def convolve(x: Any, channels: int) -> Any:
        kernel = get_variable("kernel", [width, channels, int(filters)], dtype=x.dtype,
                              initializer=kernel_initializer, regularizer=kernel_regularizer,
                              trainable=trainable)
        return conv_variant_ops.conv1d(x, kernel, step, _layer_padding(padding), dilations=rate)

    return _conv_layer("conv1d", inputs, 3, filters, name, reuse, use_bias, bias_initializer,
                       bias_regularizer, trainable, activation, convolve)


def _single(value: Any, what: str) -> int:
    """Keras-style 1-D sizes: an int or a 1-tuple."""
    items = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    if len(items) != 1:
        raise ValueError(f"{what} must be an int or a tuple of one int, got {value!r}")
    return items[0]


def _pooling(pool: Callable[..., Any], layer: str, inputs: Any, pool_size: Any, strides: Any,
             padding: str, data_format: str, name: str | None) -> Any:
    _channels_last(data_format, layer)
    with get_default_graph().name_scope(name or layer):
        return pool(convert_to_tensor(inputs), [1, *_pair(pool_size, "pool_size"), 1],
                    [1, *_pair(strides, "strides"), 1], _layer_padding(padding))


def max_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                  data_format: str = "channels_last", name: str | None = None) -> Any:
    """The maximum over each ``pool_size`` window, moved by ``strides``."""
    return _pooling(conv_ops.max_pool, "max_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def average_pooling2d(inputs: Any, pool_size: Any, strides: Any, padding: str = "valid",
                      data_format: str = "channels_last", name: str | None = None) -> Any:
    """The mean over each ``pool_size`` window (with 'same', padding is not counted)."""
    return _pooling(conv_ops.avg_pool, "average_pooling2d", inputs, pool_size, strides, padding,
                    data_format, name)


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Any:
    """[batch, ...] -> [batch, product of the rest]; the batch dimension may be unknown."""
    x = convert_to_tensor(inputs)
    with get_default_graph().name_scope(name or "flatten"):
        rest = x.shape.as_list()[1:] if x.shape.ndims is not None else [None]
        if x.shape.ndims is not None and None not in rest:
            return array_ops.reshape(x, [-1, int(math.prod(rest))])
        batch = array_ops.shape(x)[:1]
        return array_ops.reshape(x, array_ops.concat([batch, [-1]], 0))


def dropout(inputs: Any, rate: float = 0.5, noise_shape: Any = None, seed: int | None = None,
            training: Any = False, name: str | None = None) -> Any:
    """TF1's dropout layer: drop each element with probability ``rate`` (scaling the rest by
    1 / (1 - rate)) when ``training`` is true, a Python bool or a bool tensor; else identity."""
    x = convert_to_tensor(inputs)
    with get_default_graph().name_scope(name or "dropout"):
        if training is False:
            return array_ops.identity(x)

        def dropped() -> Any:
            return composite_ops.dropout(x, rate=rate, noise_shape=noise_shape, seed=seed)

        if training is True:
            return dropped()
        return cond_ops.cond(convert_to_tensor(training), dropped, lambda: array_ops.identity(x))


def batch_normalization(inputs: Any, axis: int = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                        center: bool = True, scale: bool = True, beta_initializer: Any = None,
                        gamma_initializer: Any = None, moving_mean_initializer: Any = None,
                        moving_variance_initializer: Any = None, training: Any = False,
                        trainable: bool = True, name: str | None = None, reuse: Any = None,
                        fused: Any = None, **_unused: Any) -> Any:
    """TF1's batch normalization layer over every axis but ``axis``.

    Variables in scope ``name`` ("batch_normalization", "_1", ...): "gamma" and "beta"
    (trainable, [channels]) and "moving_mean"/"moving_variance" (not trainable). With
    ``training`` true (a Python bool or a bool tensor, then through tf.cond) it normalizes
    with the batch's mean and variance and adds the moving-average updates to
    ``tf.GraphKeys.UPDATE_OPS``, which the caller runs with its train op as in TF1:
    ``moving -= (moving - batch) * (1 - momentum)``; otherwise it uses the moving statistics.
    ``fused`` is accepted and ignored: zmtf computes the non-fused formulas (biased batch
    variance in the moving average, as TF's non-fused layer).
    """
    x = convert_to_tensor(inputs)
    rank = x.shape.ndims
    if rank is None or x.shape.as_list()[axis] is None:
        raise ValueError(f"tf.layers.batch_normalization needs a known rank and size along axis "
                         f"{axis}, got {x.shape} ({x.name})")
    axis = axis % rank
    channels = x.shape.as_list()[axis]
    reduce_axes = [a for a in range(rank) if a != axis]
    broadcast = [1] * rank
    broadcast[axis] = channels
    graph = get_default_graph()
    with variable_scope(name, default_name="batch_normalization", reuse=reuse):
        def param(var_name: str, init: Any, default: Any, train: bool) -> Any:
            return get_variable(var_name, [channels], dtype=x.dtype, initializer=init or default,
                                trainable=train)

        gamma = param("gamma", gamma_initializer, Ones(), trainable) if scale else None
        beta = param("beta", beta_initializer, Zeros(), trainable) if center else None
        moving_mean = param("moving_mean", moving_mean_initializer, Zeros(), False)
        moving_var = param("moving_variance", moving_variance_initializer, Ones(), False)

        def shaped(t: Any) -> Any:
            return t if axis == rank - 1 or t is None else array_ops.reshape(t, broadcast)

        def normalize(mean: Any, var: Any) -> Any:
            return composite_ops.batch_normalization(x, shaped(mean), shaped(var), shaped(beta),
                                                     shaped(gamma), epsilon)

        if training is False:
            return normalize(moving_mean, moving_var)
        mean, var = composite_ops.moments(x, reduce_axes)
        decay = 1.0 - momentum
        if training is not True:   # a tensor: the updates leave the averages alone when false
            decay = cond_ops.cond(convert_to_tensor(training), lambda: constant(decay, x.dtype),
                                  lambda: constant(0.0, x.dtype))
        for moving, batch in ((moving_mean, mean), (moving_var, var)):
            with graph.colocate_with(moving.op):
                update = state_ops.assign_sub(moving, (moving - batch) * decay)
            graph.add_to_collection(GraphKeys.UPDATE_OPS, update)
        if training is True:
            return normalize(mean, var)
        return cond_ops.cond(convert_to_tensor(training), lambda: normalize(mean, var),
                             lambda: normalize(moving_mean, moving_var))


class Dense:
    """TF1's ``tf.layers.Dense``: ``activation(inputs @ kernel + bias)`` over the last axis of
    inputs of any rank >= 2. Its first call enters a variable scope made unique from ``name``
    (default "dense") and creates "<scope>/kernel" and "<scope>/bias"; later calls reuse them."""

    def __init__(self, units: int, activation: Callable[[Any], Any] | None = None,
                 use_bias: bool = True, kernel_initializer: Any = None,
                 bias_initializer: Any = None, trainable: bool = True, name: str | None = None,
                 dtype: Any = None, **_unused: Any) -> None:
        self.units = int(units)
        self.activation, self.use_bias, self.trainable = activation, use_bias, trainable
        self._initializers = (kernel_initializer, bias_initializer or Zeros())
        self._scoped = _LayerScope(name or "dense")
        self.kernel: Any = None
        self.bias: Any = None

    @property
    def name(self) -> str:
        return self._scoped.name

    @property
    def variables(self) -> list[Any]:
        return [v for v in (self.kernel, self.bias) if v is not None]

    trainable_variables = variables

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        shape = as_shape(input_shape)
        if shape.ndims is not None and shape.ndims < 2:
            raise ValueError(f"Input {shape} should have rank at least 2")
        if shape.ndims is None or shape.dims[-1] is None:
            raise ValueError(f"The innermost dimension of input_shape must be defined, but saw: "
                             f"{shape}")
        return shape[:-1].concatenate([self.units])

    def __call__(self, inputs: Any) -> Any:
        x = convert_to_tensor(inputs)
        self.compute_output_shape(x.shape)
        depth = x.shape.as_list()[-1]
        with self._scoped.entered():
            if self.kernel is None:
                kernel_init, bias_init = self._initializers
                self.kernel = get_variable("kernel", [depth, self.units], dtype=x.dtype,
                                           initializer=kernel_init, trainable=self.trainable)
                if self.use_bias:
                    self.bias = get_variable("bias", [self.units], dtype=x.dtype,
                                             initializer=bias_init, trainable=self.trainable)
            if x.shape.ndims == 2:
                y = math_ops.matmul(x, self.kernel)
            else:   # [..., depth] -> [-1, depth] @ kernel -> [..., units]
                flat = math_ops.matmul(array_ops.reshape(x, [-1, depth]), self.kernel)
                leading = array_ops.shape(x)[:-1]
                y = array_ops.reshape(flat, array_ops.concat([leading, [self.units]], 0))
                y.set_shape(self.compute_output_shape(x.shape))
            if self.bias is not None:
                y = nn_ops.bias_add(y, self.bias)
            return self.activation(y) if self.activation is not None else y


class _LayerScope(RNNCell):
    """The variable-scope half of a TF1 layer (find a unique scope on the first call,
    re-enter it after), borrowed from the RNN cells so layers and cells name alike."""

    def __init__(self, name: str) -> None:
        super().__init__(name=name)

    @property
    def name(self) -> str:
        return self._scope.name if self._scope is not None else self._base_name

    def entered(self) -> Any:
        return self._entered(None)


__all__ = ["Dense", "average_pooling2d", "batch_normalization", "conv1d", "conv2d", "conv2d_transpose",
           "dense", "dropout", "flatten", "separable_conv2d",
           "max_pooling2d"]

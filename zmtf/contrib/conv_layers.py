"""``tf.contrib.layers`` convolutions and pooling with TF 1.15's names: scope "Conv"
(``Conv_1``, ...), "Conv2d_transpose", "SeparableConv2d" holding ``weights`` /
``depthwise_weights`` / ``pointwise_weights`` and ``biases`` (model variables); ReLU by
default; 'SAME' padding by default; a ``normalizer_fn`` (e.g. batch_norm) replaces the biases.
Only NHWC is built (zmtf's CPU kernels are channels-last)."""

from __future__ import annotations

from typing import Any, Callable

from zmtf.ops import layers as core_layers
from zmtf.contrib.arg_scope import add_arg_scope
from zmtf.contrib.initializers import xavier_initializer
from zmtf.contrib.variables import collect_named_outputs, model_variable, named
from zmtf.ops import conv_ops, conv_variant_ops, nn_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.init_ops import Zeros
from zmtf.ops.variable_scope import variable_scope


def _pair(value: Any, what: str) -> list[int]:
    items = [int(value)] * 2 if isinstance(value, int) else [int(v) for v in value]
    if len(items) != 2:
        raise ValueError(f"{what} must be an int or a list of 2 ints, got {value!r}")
    return items


def _nhwc(data_format: Any, layer: str) -> None:
    if data_format not in (None, "NHWC"):
        raise ValueError(f"tf.contrib.layers.{layer} in zmtf supports data_format='NHWC' only "
                         f"(zmtf's CPU kernels are channels-last), got {data_format!r}")


def _input4(inputs: Any, layer: str) -> Any:
    x = convert_to_tensor(inputs)
    if x.shape.ndims != 4 or x.shape.as_list()[-1] is None:
        raise ValueError(f"tf.contrib.layers.{layer} expects a 4-D NHWC input with a known "
                         f"channel count, got {x.shape} ({x.name})")
    return x


def finish_layer(y: Any, num_outputs: int, normalizer_fn: Any, normalizer_params: Any,
                 biases_initializer: Any, biases_regularizer: Any, trainable: bool,
                 variables_collections: Any, activation_fn: Any) -> Any:
    """The tail every contrib weight layer shares: ``normalizer_fn`` (then no biases) or
    the ``biases`` model variable, then ``activation_fn``."""
    if normalizer_fn is not None:
        y = normalizer_fn(y, **(normalizer_params or {}))
    elif biases_initializer is not None:
        biases = model_variable("biases", [int(num_outputs)], dtype=y.dtype,
                                initializer=biases_initializer, regularizer=biases_regularizer,
                                trainable=trainable,
                                collections=named(variables_collections, "biases"))
        y = nn_ops.bias_add(y, biases)
    return activation_fn(y) if activation_fn is not None else y


def _weights(name: str, shape: list[int], x: Any, initializer: Any, regularizer: Any,
             trainable: bool, variables_collections: Any) -> Any:
    return model_variable(name, shape, dtype=x.dtype, initializer=initializer,
                          regularizer=regularizer, trainable=trainable,
                          collections=named(variables_collections, "weights"))


@add_arg_scope
def convolution2d(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1,
                  padding: str = "SAME", data_format: Any = None, rate: Any = 1,
                  activation_fn: Callable[[Any], Any] | None = nn_ops.relu,
                  normalizer_fn: Any = None, normalizer_params: dict | None = None,
                  weights_initializer: Any = xavier_initializer(), weights_regularizer: Any = None,
                  biases_initializer: Any = Zeros(), biases_regularizer: Any = None,
                  reuse: Any = None, variables_collections: Any = None,
                  outputs_collections: Any = None, trainable: bool = True,
                  scope: Any = None) -> Any:
    """A 2-D convolution: "<scope>/weights" [k_h, k_w, in, num_outputs] (Xavier) and
    "<scope>/biases" [num_outputs]; ``rate`` > 1 dilates (atrous convolution)."""
    _nhwc(data_format, "conv2d")
    with variable_scope(scope, default_name="Conv", reuse=reuse) as sc:
        x = _input4(inputs, "conv2d")
        k_h, k_w = _pair(kernel_size, "kernel_size")
        weights = _weights("weights", [k_h, k_w, x.shape.as_list()[-1], int(num_outputs)], x,
                           weights_initializer, weights_regularizer, trainable,
                           variables_collections)
        y = conv_ops.conv2d(x, weights, _pair(stride, "stride"), padding.upper(),
                            dilations=_pair(rate, "rate"))
        y = finish_layer(y, num_outputs, normalizer_fn, normalizer_params, biases_initializer,
                         biases_regularizer, trainable, variables_collections, activation_fn)
        return collect_named_outputs(outputs_collections, sc.name, y)


@add_arg_scope
def convolution2d_transpose(inputs: Any, num_outputs: int, kernel_size: Any, stride: Any = 1,
                            padding: str = "SAME", data_format: Any = "NHWC",
                            activation_fn: Callable[[Any], Any] | None = nn_ops.relu,
                            normalizer_fn: Any = None, normalizer_params: dict | None = None,
                            weights_initializer: Any = xavier_initializer(),
                            weights_regularizer: Any = None, biases_initializer: Any = Zeros(),
                            biases_regularizer: Any = None, reuse: Any = None,
                            variables_collections: Any = None, outputs_collections: Any = None,
                            trainable: bool = True, scope: Any = None) -> Any:
    """The transpose of conv2d: "<scope>/weights" [k_h, k_w, num_outputs, in]; each spatial
    size becomes ``size * stride`` ('SAME') or ``size * stride + max(k - stride, 0)``."""
    _nhwc(data_format, "conv2d_transpose")
    with variable_scope(scope, default_name="Conv2d_transpose", reuse=reuse) as sc:
        x = _input4(inputs, "conv2d_transpose")
        sizes, steps = _pair(kernel_size, "kernel_size"), _pair(stride, "stride")
        weights = _weights("weights", [*sizes, int(num_outputs), x.shape.as_list()[-1]], x,
                           weights_initializer, weights_regularizer, trainable,
                           variables_collections)
        y = core_layers.transposed_convolution(x, weights, sizes, steps, padding.upper(),
                                               int(num_outputs))
        y = finish_layer(y, num_outputs, normalizer_fn, normalizer_params, biases_initializer,
                         biases_regularizer, trainable, variables_collections, activation_fn)
        return collect_named_outputs(outputs_collections, sc.name, y)


@add_arg_scope
def separable_convolution2d(inputs: Any, num_outputs: int | None, kernel_size: Any,
                            depth_multiplier: int = 1, stride: Any = 1, padding: str = "SAME",
                            data_format: Any = "NHWC", rate: Any = 1,
                            activation_fn: Callable[[Any], Any] | None = nn_ops.relu,
                            normalizer_fn: Any = None, normalizer_params: dict | None = None,
                            weights_initializer: Any = xavier_initializer(),
                            pointwise_initializer: Any = None, weights_regularizer: Any = None,
                            biases_initializer: Any = Zeros(), biases_regularizer: Any = None,
                            reuse: Any = None, variables_collections: Any = None,
                            outputs_collections: Any = None, trainable: bool = True,
                            scope: Any = None) -> Any:
    """A depthwise convolution ("depthwise_weights" [k_h, k_w, in, depth_multiplier]) then,
    unless ``num_outputs`` is None, a 1x1 one ("pointwise_weights"
    [1, 1, in * depth_multiplier, num_outputs])."""
    _nhwc(data_format, "separable_conv2d")
    with variable_scope(scope, default_name="SeparableConv2d", reuse=reuse) as sc:
        x = _input4(inputs, "separable_conv2d")
        channels = x.shape.as_list()[-1]
        strides = [1, *_pair(stride, "stride"), 1]
        depthwise = _weights("depthwise_weights", [*_pair(kernel_size, "kernel_size"), channels,
                                                   int(depth_multiplier)],
                             x, weights_initializer, weights_regularizer, trainable,
                             variables_collections)
        if num_outputs is None:
            num_outputs = channels * int(depth_multiplier)
            y = conv_variant_ops.depthwise_conv2d(x, depthwise, strides, padding.upper(),
                                                  rate=_pair(rate, "rate"))
        else:
            pointwise = _weights("pointwise_weights",
                                 [1, 1, channels * int(depth_multiplier), int(num_outputs)], x,
                                 pointwise_initializer or weights_initializer,
                                 weights_regularizer, trainable, variables_collections)
            y = conv_variant_ops.separable_conv2d(x, depthwise, pointwise, strides,
                                                  padding.upper(), rate=_pair(rate, "rate"))
        y = finish_layer(y, num_outputs, normalizer_fn, normalizer_params, biases_initializer,
                         biases_regularizer, trainable, variables_collections, activation_fn)
        return collect_named_outputs(outputs_collections, sc.name, y)


def _pool(pool: Callable[..., Any], default: str, inputs: Any, kernel_size: Any, stride: Any,
          padding: str, data_format: Any, outputs_collections: Any, scope: Any) -> Any:
    _nhwc(data_format, default)
    y = pool(_input4(inputs, default), _pair(kernel_size, "kernel_size"),
             _pair(stride, "stride"), padding, name=scope or default)
    return collect_named_outputs(outputs_collections, y.op.name.rsplit("/", 1)[0], y)


@add_arg_scope
def max_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID",
               data_format: Any = "NHWC", outputs_collections: Any = None,
               scope: Any = None) -> Any:
    """The maximum over each window, under the name scope "MaxPool2D"."""
    return _pool(core_layers.max_pooling2d, "MaxPool2D", inputs, kernel_size, stride, padding,
                 data_format, outputs_collections, scope)


@add_arg_scope
def avg_pool2d(inputs: Any, kernel_size: Any, stride: Any = 2, padding: str = "VALID",
               data_format: Any = "NHWC", outputs_collections: Any = None,
               scope: Any = None) -> Any:
    """The mean over each window (padding not counted), under the name scope "AvgPool2D"."""
    return _pool(core_layers.average_pooling2d, "AvgPool2D", inputs, kernel_size, stride,
                 padding, data_format, outputs_collections, scope)


conv2d = convolution2d
conv2d_transpose = convolution2d_transpose
separable_conv2d = separable_convolution2d

__all__ = ["avg_pool2d", "conv2d", "conv2d_transpose", "convolution2d", "convolution2d_transpose",
           "max_pool2d", "separable_conv2d", "separable_convolution2d"]

"""Keras convolution layers in graph mode (channels_last): Conv1D, Conv2D, Conv2DTranspose,
SeparableConv2D, DepthwiseConv2D. Each makes its kernels then a "bias" [out channels]."""

from __future__ import annotations

from typing import Any

from zmtf.ops import array_ops, conv_ops, conv_variant_ops, nn_ops
from zmtf.keras import activations
from zmtf.keras.base_layer import Layer


def _tuple(value: Any, rank: int, what: str) -> list[int]:
    items = [int(value)] * rank if isinstance(value, int) else [int(v) for v in value]
    if len(items) != rank:
        raise ValueError(f"The `{what}` argument must be a tuple of {rank} integers. "
                         f"Received: {value!r}")
    return items


def _padding(padding: str) -> str:
    if not isinstance(padding, str) or padding.lower() not in ("valid", "same"):
        raise ValueError(f"The `padding` argument must be one of 'valid', 'same'. "
                         f"Received: {padding!r}")
    return padding.upper()


class _Conv(Layer):
    """The frame the convolutions share: arguments, the bias and the activation."""

    rank = 2

    def __init__(self, filters: int, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: Any = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError(f"{type(self).__name__} in zmtf supports data_format='channels_last'"
                             f" only (zmtf's CPU kernels are NHWC), got {data_format!r}")
        self.filters = None if filters is None else int(filters)
        self.kernel_size = _tuple(kernel_size, self.rank, "kernel_size")
        self.strides = _tuple(strides, self.rank, "strides")
        self.dilation_rate = _tuple(dilation_rate, self.rank, "dilation_rate")
        self.padding = _padding(padding)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def _channels(self, input_shape: Any) -> int:
        dims = input_shape.as_list() if input_shape.ndims is not None else None
        if dims is None or len(dims) != self.rank + 2:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim={self.rank + 2}, found shape {input_shape}")
        if dims[-1] is None:
            raise ValueError("The channel dimension of the inputs should be defined. Found `None`.")
        return dims[-1]

    def _kernel(self, shape: list[int], name: str = "kernel", initializer: Any = None,
                regularizer: Any = None) -> Any:
        return self.add_weight(name, shape, initializer=initializer or self.kernel_initializer,
                               regularizer=regularizer or self.kernel_regularizer,
                               constraint=self.kernel_constraint)

    def _bias(self, size: int) -> None:
        self.bias = (self.add_weight("bias", [size], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)

    def build(self, input_shape: Any) -> None:
        channels = self._channels(input_shape)
        self.kernel = self._kernel([*self.kernel_size, channels, self.filters])
        self._bias(self.filters)

    def call(self, inputs: Any) -> Any:
        outputs = self._convolve(inputs)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        return self.activation(outputs)

    def _convolve(self, inputs: Any) -> Any:
        return conv_ops.conv2d(inputs, self.kernel, [1, *self.strides, 1], self.padding,
                               dilations=[1, *self.dilation_rate, 1])


class Conv2D(_Conv):
    """2-D convolution: kernel [k_h, k_w, in_channels, filters]."""


class Conv1D(_Conv):
    """1-D convolution over [batch, width, channels]: kernel [k, in_channels, filters]."""

    rank = 1

    def _convolve(self, inputs: Any) -> Any:
        return conv_variant_ops.conv1d(inputs, self.kernel, self.strides[0], self.padding,
                                       dilations=self.dilation_rate[0])


class Conv2DTranspose(Conv2D):
    """The transpose of Conv2D: kernel [k_h, k_w, filters, in_channels]; each spatial size
    becomes ``size * stride`` ('same') or ``size * stride + max(kernel - stride, 0)``."""

    def build(self, input_shape: Any) -> None:
        if self.dilation_rate != [1, 1]:
            raise NotImplementedError("Conv2DTranspose with dilation_rate is not built in zmtf")
        channels = self._channels(input_shape)
        self.kernel = self._kernel([*self.kernel_size, self.filters, channels])
        self._bias(self.filters)

    def _convolve(self, inputs: Any) -> Any:
        dims = inputs.shape.as_list()
        spatial = [None if d is None else d * s + (max(k - s, 0) if self.padding == "VALID" else 0)
                   for d, k, s in zip(dims[1:3], self.kernel_size, self.strides)]
        if None in spatial:
            raise ValueError(f"Conv2DTranspose in zmtf needs the input's height and width, got "
                             f"{inputs.shape} ({inputs.name})")
        batch = array_ops.shape(inputs)[0] if dims[0] is None else dims[0]
        output_shape = (array_ops.stack([batch, *spatial, self.filters]) if dims[0] is None
                        else [batch, *spatial, self.filters])
        outputs = conv_ops.conv2d_transpose(inputs, self.kernel, output_shape,
                                            [1, *self.strides, 1], self.padding)
        outputs.set_shape([dims[0], *spatial, self.filters])
        return outputs


class SeparableConv2D(Conv2D):
    """A depthwise convolution then a 1x1 one: "depthwise_kernel" [k_h, k_w, in,
    depth_multiplier], "pointwise_kernel" [1, 1, in * depth_multiplier, filters], "bias"."""

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 depth_multiplier: int = 1, depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform", depthwise_regularizer: Any = None,
                 pointwise_regularizer: Any = None, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer, self.pointwise_initializer = depthwise_initializer, pointwise_initializer
        self.depthwise_regularizer, self.pointwise_regularizer = depthwise_regularizer, pointwise_regularizer

    def build(self, input_shape: Any) -> None:
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._kernel([*self.kernel_size, channels, self.depth_multiplier],
                                             "depthwise_kernel", self.depthwise_initializer,
                                             self.depthwise_regularizer)
        self.pointwise_kernel = self._kernel([1, 1, channels * self.depth_multiplier, self.filters],
                                             "pointwise_kernel", self.pointwise_initializer,
                                             self.pointwise_regularizer)
        self._bias(self.filters)

    def _convolve(self, inputs: Any) -> Any:
        return conv_variant_ops.separable_conv2d(inputs, self.depthwise_kernel,
                                                 self.pointwise_kernel, [1, *self.strides, 1],
                                                 self.padding, rate=self.dilation_rate)


class DepthwiseConv2D(Conv2D):
    """Each input channel convolved on its own with ``depth_multiplier`` filters:
    "depthwise_kernel" [k_h, k_w, in, depth_multiplier], "bias" [in * depth_multiplier]."""

    def __init__(self, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 depth_multiplier: int = 1, depthwise_initializer: Any = "glorot_uniform",
                 depthwise_regularizer: Any = None, **kwargs: Any) -> None:
        super().__init__(None, kernel_size, strides, padding=padding, **kwargs)
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = depthwise_initializer
        self.depthwise_regularizer = depthwise_regularizer

    def build(self, input_shape: Any) -> None:
        channels = self._channels(input_shape)
        self.depthwise_kernel = self._kernel([*self.kernel_size, channels, self.depth_multiplier],
                                             "depthwise_kernel", self.depthwise_initializer,
                                             self.depthwise_regularizer)
        self._bias(channels * self.depth_multiplier)

    def _convolve(self, inputs: Any) -> Any:
        return conv_variant_ops.depthwise_conv2d(inputs, self.depthwise_kernel,
                                                 [1, *self.strides, 1], self.padding,
                                                 rate=self.dilation_rate)

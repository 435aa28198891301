"""The convolutions TF1 builds around conv2d: atrous_conv2d, depthwise_conv2d (and its
native op and backprops), separable_conv2d and conv1d, under ``tf.nn``.

DepthwiseConv2dNative is the one new op: every input channel gets its own
``channel_multiplier`` filters, so ``[f_h, f_w, in_c, m]`` maps ``in_c`` channels to
``in_c * m``. The rest are compositions, as in TF: separable_conv2d is a depthwise
convolution then a 1x1 conv2d, conv1d is conv2d over a height of 1. Dilations ("rate")
are an attribute of the ops themselves, where TF's Python wraps the op in
space_to_batch / batch_to_space: the values are the same, the graph is smaller.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.array_ops import _shape_tensor, _shape_value, expand_dims, squeeze
from zmtf.ops.conv_ops import (
    _conv_attrs, _float_input, _rank4, _spatial, conv2d,
)
from zmtf.framework.tensor_shape import TensorShape


@op_def("DepthwiseConv2dNative")
def _depthwise_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, kernel = inputs
    batch, height, width, channels = _rank4(x.shape, "input")
    f_height, f_width, f_in, multiplier = _rank4(kernel.shape, "filter")
    if channels is not None and f_in is not None and channels != f_in:
        raise ValueError(f"Dimensions must be equal, but are {channels} and {f_in}: the "
                         f"depthwise filter {kernel.shape} needs one [f_h, f_w] slice per input "
                         f"channel of {x.shape}")
    out_h, out_w = _spatial([batch, height, width, channels], [f_height, f_width], attrs,
                            attrs["dilations"])
    depth = None if channels is None or multiplier is None else channels * multiplier
    return [(x.dtype, TensorShape([batch, out_h, out_w, depth]))]


@op_def("DepthwiseConv2dNativeBackpropInput")
def _depthwise_backprop_input_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    input_sizes, kernel, _ = inputs
    return [(kernel.dtype, TensorShape(_shape_value(input_sizes) or [None] * 4))]


@op_def("DepthwiseConv2dNativeBackpropFilter")
def _depthwise_backprop_filter_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, filter_sizes, _ = inputs
    return [(x.dtype, TensorShape(_shape_value(filter_sizes) or [None] * 4))]


def _rate_as_dilations(rate: Any, dilations: Any, strides: Any) -> Any:
    """TF1's ``rate`` (or ``dilations``) as a dilations attribute; TF refuses a dilation
    with a stride (its space_to_batch form cannot do both), and so does zmtf."""
    given = rate if rate is not None else dilations
    if given is None:
        return None
    pair = [int(given)] * 2 if isinstance(given, int) else [int(r) for r in given]
    pair = pair[1:3] if len(pair) == 4 else pair
    steps = [int(strides)] * 2 if isinstance(strides, int) else [int(s) for s in strides]
    steps = steps[1:3] if len(steps) == 4 else steps
    if any(r > 1 for r in pair) and any(s > 1 for s in steps):
        raise ValueError(f"strides > 1 not supported in conjunction with dilation_rate > 1: "
                         f"strides {list(strides) if not isinstance(strides, int) else strides}, "
                         f"rate {pair}; downsample with a separate strided op")
    return pair


def depthwise_conv2d_native(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                            data_format: Any = "NHWC", dilations: Any = None,
                            name: str | None = None) -> Tensor:
    """``input`` [batch, h, w, in_c] with ``filter`` [f_h, f_w, in_c, m] ->
    [batch, out_h, out_w, in_c * m]: output channel ``c * m + k`` is input channel ``c``
    under its filter ``k``."""
    attrs = _conv_attrs(strides, padding, "DepthwiseConv2dNative", data_format, dilations)
    x = _float_input(input, "depthwise_conv2d input")
    kernel = _float_input(filter, "depthwise_conv2d filter", dtype=x.dtype)
    return apply_op("DepthwiseConv2dNative", [x, kernel], attrs,
                    name=name or "DepthwiseConv2dNative").outputs[0]


def depthwise_conv2d_native_backprop_input(input_sizes: Any, filter: Any,  # noqa: A002
                                           out_backprop: Any, strides: Any, padding: Any,
                                           data_format: Any = "NHWC", dilations: Any = None,
                                           name: str | None = None) -> Tensor:
    """The gradient of depthwise_conv2d_native with respect to its input."""
    attrs = _conv_attrs(strides, padding, "DepthwiseConv2dNativeBackpropInput", data_format,
                        dilations)
    kernel = _float_input(filter, "filter")
    grad = _float_input(out_backprop, "out_backprop", dtype=kernel.dtype)
    return apply_op("DepthwiseConv2dNativeBackpropInput", [_shape_tensor(input_sizes), kernel,
                                                           grad], attrs, name=name).outputs[0]


def depthwise_conv2d_native_backprop_filter(input: Any, filter_sizes: Any,  # noqa: A002
                                            out_backprop: Any, strides: Any, padding: Any,
                                            data_format: Any = "NHWC", dilations: Any = None,
                                            name: str | None = None) -> Tensor:
    """The gradient of depthwise_conv2d_native with respect to its filter."""
    attrs = _conv_attrs(strides, padding, "DepthwiseConv2dNativeBackpropFilter", data_format,
                        dilations)
    x = _float_input(input, "input")
    grad = _float_input(out_backprop, "out_backprop", dtype=x.dtype)
    return apply_op("DepthwiseConv2dNativeBackpropFilter", [x, _shape_tensor(filter_sizes),
                                                            grad], attrs, name=name).outputs[0]


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                     rate: Any = None, name: str | None = None, data_format: Any = None,
                     dilations: Any = None) -> Tensor:
    """``tf.nn.depthwise_conv2d``: depthwise_conv2d_native with ``rate`` as its dilations
    (the op is named "depthwise", as TF names it)."""
    pair = _rate_as_dilations(rate, dilations, strides)
    return depthwise_conv2d_native(input, filter, strides, padding, data_format=data_format,
                                   dilations=pair, name=name or "depthwise")


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any,  # noqa: A002
                     strides: Any, padding: Any, rate: Any = None, name: str | None = None,
                     data_format: Any = None, dilations: Any = None) -> Tensor:
    """A depthwise convolution (``depthwise_filter`` [f_h, f_w, in_c, m]) mixed across
    channels by a 1x1 conv2d (``pointwise_filter`` [1, 1, in_c * m, out_c])."""
    pointwise = _float_input(pointwise_filter, "separable_conv2d pointwise_filter")
    depthwise_shape = _float_input(depthwise_filter, "depthwise_filter").shape
    dims = pointwise.shape.as_list() if pointwise.shape.ndims == 4 else None
    if dims is not None and (dims[0] not in (1, None) or dims[1] not in (1, None)):
        raise ValueError(f"Dimensions {dims[0]} and 1 are not compatible: the pointwise filter "
                         f"must be [1, 1, in_channels * channel_multiplier, out_channels], got "
                         f"{pointwise.shape}")
    if depthwise_shape.ndims == 4 and dims is not None and None not in (
            depthwise_shape[2], depthwise_shape[3], dims[2]) and \
            depthwise_shape[2] * depthwise_shape[3] != dims[2]:
        raise ValueError(f"Depth of input ({depthwise_shape[2] * depthwise_shape[3]}) is not "
                         f"a multiple of input depth of filter ({dims[2]}): the pointwise "
                         f"filter {pointwise.shape} must take the depthwise filter's "
                         f"{depthwise_shape[2]} x {depthwise_shape[3]} channels")
    with get_default_graph().name_scope(name or "separable_conv2d") as scope:
        depthwise = depthwise_conv2d(input, depthwise_filter, strides, padding, rate=rate,
                                     data_format=data_format, dilations=dilations)
        return conv2d(depthwise, pointwise, [1, 1, 1, 1], "VALID", data_format=data_format,
                      name=scope)


def conv1d(value: Any = None, filters: Any = None, stride: Any = None, padding: Any = None,
           use_cudnn_on_gpu: Any = None, data_format: Any = None, name: str | None = None,
           input: Any = None, dilations: Any = None) -> Tensor:  # noqa: A002
    """``value`` [batch, width, in_c] with ``filters`` [f_w, in_c, out_c] ->
    [batch, out_w, out_c]: conv2d over a height of 1, as TF builds it."""
    x = value if value is not None else input
    if x is None or filters is None or stride is None or padding is None:
        raise TypeError("conv1d needs value (or input=), filters, stride and padding")
    if data_format not in (None, "NWC", "NHWC"):
        raise ValueError(f"conv1d on CPU only supports data_format 'NWC', got {data_format!r}; "
                         f"transpose the input to [batch, width, channels]")
    steps = [int(stride)] if isinstance(stride, int) else [int(s) for s in stride]
    step = steps[1] if len(steps) == 3 else steps[0]
    rates = [1] if dilations is None else (
        [int(dilations)] if isinstance(dilations, int) else [int(d) for d in dilations])
    rate = rates[1] if len(rates) == 3 else rates[0]
    with get_default_graph().name_scope(name or "conv1d"):
        x = _float_input(x, "conv1d value")
        if x.shape.ndims is not None and x.shape.ndims != 3:
            raise ValueError(f"conv1d needs a 3-D value [batch, width, channels], got shape "
                             f"{x.shape} ({x.name})")
        kernel = _float_input(filters, "conv1d filters", dtype=x.dtype)
        if kernel.shape.ndims is not None and kernel.shape.ndims != 3:
            raise ValueError(f"conv1d needs 3-D filters [width, in_channels, out_channels], "
                             f"got shape {kernel.shape} ({kernel.name})")
        y = conv2d(expand_dims(x, 1, name="ExpandDims"),
                   expand_dims(kernel, 0, name="ExpandDims_1"), [1, 1, step, 1], padding,
                   dilations=[1, 1, rate, 1], name="Conv2D")
        return squeeze(y, [1], name="Squeeze")


def atrous_conv2d(value: Any, filters: Any, rate: int, padding: Any,
                  name: str | None = None) -> Tensor:
    """conv2d with the filter's taps ``rate`` apart (a dilated convolution)."""
    if int(rate) < 1:
        raise ValueError(f"rate {rate} cannot be less than one")
    return conv2d(value, filters, [1, 1, 1, 1], padding, dilations=[1, int(rate), int(rate), 1],
                  name=name or "convolution")

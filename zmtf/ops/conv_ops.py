"""Convolution and pooling ops under TF1's ``tf.nn`` names: conv2d, conv2d_transpose,
max_pool, avg_pool, and the backprop ops their gradients are built from.

NHWC only, as TF's CPU kernels: every constructor checks ``data_format``, strides and
padding here, at graph-building time, so a mistake points at the user's line instead of
surfacing later inside ``Session.run``.
"""

from __future__ import annotations

from typing import Any, Sequence

from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.array_ops import _shape_tensor, _shape_value
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape
from zmtf.framework.window_geometry import PADDINGS, span

_FLOATS = ("float16", "float32", "float64")


# ---- argument checks ------------------------------------------------------------------------
def _nhwc_only(data_format: Any, op_type: str) -> None:
    if data_format not in (None, "NHWC", "channels_last"):
        raise InvalidArgumentError(
            f"{op_type} on CPU only supports NHWC (zmtf has no GPU {op_type} kernel), got "
            f"data_format={data_format!r}. Keep activations as [batch, height, width, channels] "
            f"and pass data_format='NHWC', or tf.transpose(x, [0, 2, 3, 1]) an NCHW tensor first.")


def _four(value: Any, what: str) -> list[int]:
    """An int, [h, w] or [1, h, w, 1] as [1, h, w, 1] (TF accepts lengths 1, 2 and 4)."""
    items = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    if len(items) == 1:
        items = items * 2
    if len(items) == 2:
        items = [1, *items, 1]
    if len(items) != 4:
        raise ValueError(f"{what} must be an int or a list of 1, 2 or 4 ints, got {value!r}")
    if items[0] != 1 or items[3] != 1:
        raise UnimplementedError(
            f"Current implementation does not yet support {what} in the batch and depth "
            f"dimensions: got {items}; use [1, {items[1]}, {items[2]}, 1]")
    return items


def _padding(padding: Any) -> str:
    if not isinstance(padding, str) or padding.upper() not in PADDINGS:
        raise ValueError(f"padding must be 'SAME' or 'VALID' (explicit paddings are not "
                         f"supported in zmtf), got {padding!r}")
    return padding.upper()


def _window_attrs(strides: Any, padding: Any, op_type: str, data_format: Any) -> dict[str, Any]:
    _nhwc_only(data_format, op_type)
    return {"strides": _four(strides, "strides"), "padding": _padding(padding),
            "data_format": "NHWC"}


def _conv_attrs(strides: Any, padding: Any, op_type: str, data_format: Any,
                dilations: Any) -> dict[str, Any]:
    attrs = _window_attrs(strides, padding, op_type, data_format)
    attrs["dilations"] = _four(dilations if dilations is not None else 1, "dilations")
    return attrs


def _float_input(value: Any, what: str, dtype: Any = None) -> Tensor:
    tensor = convert_to_tensor(value, dtype=dtype)
    if tensor.dtype.name not in _FLOATS:
        raise TypeError(f"{what} must be float16, float32 or float64, got {tensor.dtype.name} "
                        f"({tensor.name})")
    return tensor


# ---- static shapes --------------------------------------------------------------------------
def _rank4(shape: TensorShape, what: str) -> list[int | None]:
    if shape.ndims is None:
        return [None] * 4
    if shape.ndims != 4:
        raise ValueError(f"{what} must be 4-dimensional, got shape {shape}")
    return shape.as_list()


def _spatial(in_dims: Sequence[int | None], window: Sequence[int | None], attrs: dict[str, Any],
             dilations: Sequence[int] = (1, 1, 1, 1)) -> list[int | None]:
    """Output height and width, None where an input or window size is unknown."""
    sizes: list[int | None] = []
    for axis in (1, 2):
        size, extent = in_dims[axis], window[axis - 1]
        if size is None or extent is None:
            sizes.append(None)
            continue
        sizes.append(span(size, extent, attrs["strides"][axis], dilations[axis],
                          attrs["padding"]).size)
    return sizes


def _conv_output_shape(input_shape: TensorShape, filter_shape: TensorShape,
                       attrs: dict[str, Any]) -> TensorShape:
    batch, height, width, channels = _rank4(input_shape, "input")
    f_height, f_width, f_in, f_out = _rank4(filter_shape, "filter")
    if channels is not None and f_in is not None and channels != f_in:
        raise ValueError(f"Depth of input ({channels}) must match the filter's input depth "
                         f"({f_in}): input {input_shape}, filter {filter_shape}")
    out_h, out_w = _spatial([batch, height, width, channels], [f_height, f_width], attrs,
                            attrs.get("dilations", (1, 1, 1, 1)))
    return TensorShape([batch, out_h, out_w, f_out])


@op_def("Conv2D")
def _conv2d_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, kernel = inputs
    return [(x.dtype, _conv_output_shape(x.shape, kernel.shape, attrs))]


@op_def("Conv2DBackpropInput")
def _conv2d_backprop_input_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    input_sizes, kernel, grad = inputs
    f_out, grad_depth = _rank4(kernel.shape, "filter")[3], _rank4(grad.shape, "out_backprop")[3]
    if f_out is not None and grad_depth is not None and f_out != grad_depth:
        raise ValueError(f"Dimensions must be equal, but are {grad_depth} and {f_out}: the "
                         f"filter {kernel.shape} of a conv2d_transpose / conv2d input gradient "
                         f"is [f_h, f_w, out_channels, in_channels], its last dimension the "
                         f"depth of the value {grad.shape}")
    return [(kernel.dtype, TensorShape(_shape_value(input_sizes) or [None] * 4))]


@op_def("Conv2DBackpropFilter")
def _conv2d_backprop_filter_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, filter_sizes, _ = inputs
    return [(x.dtype, TensorShape(_shape_value(filter_sizes) or [None] * 4))]


@op_def("MaxPool", "AvgPool")
def _pool_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    batch, height, width, channels = _rank4(x.shape, "value")
    out_h, out_w = _spatial([batch, height, width, channels], attrs["ksize"][1:3], attrs)
    return [(x.dtype, TensorShape([batch, out_h, out_w, channels]))]


@op_def("MaxPoolGrad")
def _max_pool_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


@op_def("AvgPoolGrad")
def _avg_pool_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    orig_input_shape, grad = inputs
    return [(grad.dtype, TensorShape(_shape_value(orig_input_shape) or [None] * 4))]


# ---- public constructors --------------------------------------------------------------------
def conv2d(input: Any, filter: Any = None, strides: Any = None, padding: Any = None,  # noqa: A002
           use_cudnn_on_gpu: bool = True, data_format: Any = "NHWC", dilations: Any = None,
           name: str | None = None, filters: Any = None) -> Tensor:
    """2-D convolution (cross-correlation, as TF): ``input`` [batch, in_h, in_w, in_c] with
    ``filter`` [f_h, f_w, in_c, out_c] -> [batch, out_h, out_w, out_c]."""
    kernel = filter if filter is not None else filters
    if kernel is None or strides is None or padding is None:
        raise TypeError("conv2d needs input, filter (or filters=), strides and padding")
    attrs = _conv_attrs(strides, padding, "Conv2D", data_format, dilations)
    x = _float_input(input, "conv2d input")
    kernel = _float_input(kernel, "conv2d filter", dtype=x.dtype)
    return apply_op("Conv2D", [x, kernel], attrs, name=name).outputs[0]


def conv2d_backprop_input(input_sizes: Any, filter: Any,  # noqa: A002
                          out_backprop: Any, strides: Any, padding: Any,
                          use_cudnn_on_gpu: bool = True, data_format: Any = "NHWC",
                          dilations: Any = None, name: str | None = None) -> Tensor:
    """The gradient of conv2d with respect to its input, of shape ``input_sizes``."""
    attrs = _conv_attrs(strides, padding, "Conv2DBackpropInput", data_format, dilations)
    kernel = _float_input(filter, "filter")
    grad = _float_input(out_backprop, "out_backprop", dtype=kernel.dtype)
    return apply_op("Conv2DBackpropInput", [_shape_tensor(input_sizes), kernel, grad], attrs,
                    name=name).outputs[0]


def conv2d_backprop_filter(input: Any, filter_sizes: Any,  # noqa: A002
                           out_backprop: Any, strides: Any, padding: Any,
                           use_cudnn_on_gpu: bool = True, data_format: Any = "NHWC",
                           dilations: Any = None, name: str | None = None) -> Tensor:
    """The gradient of conv2d with respect to its filter, of shape ``filter_sizes``."""
    attrs = _conv_attrs(strides, padding, "Conv2DBackpropFilter", data_format, dilations)
    x = _float_input(input, "input")
    grad = _float_input(out_backprop, "out_backprop", dtype=x.dtype)
    return apply_op("Conv2DBackpropFilter", [x, _shape_tensor(filter_sizes), grad], attrs,
                    name=name).outputs[0]


def conv2d_transpose(value: Any, filter: Any = None, output_shape: Any = None,  # noqa: A002
                     strides: Any = None, padding: Any = "SAME", data_format: Any = "NHWC",
                     name: str | None = None, filters: Any = None, dilations: Any = None) -> Tensor:
    """The transpose of conv2d ("deconvolution"): ``value`` [batch, h, w, in_c] with
    ``filter`` [f_h, f_w, out_c, in_c] -> ``output_shape`` [batch, out_h, out_w, out_c].
    It is conv2d's input gradient, as in TF, hence the filter's channel order."""
    kernel = filter if filter is not None else filters
    if kernel is None or output_shape is None or strides is None:
        raise TypeError("conv2d_transpose needs value, filter, output_shape and strides")
    return conv2d_backprop_input(output_shape, kernel, value, strides, padding,
                                 data_format=data_format, dilations=dilations,
                                 name=name or "conv2d_transpose")


def _pool(op_type: str, value: Any, ksize: Any, strides: Any, padding: Any, data_format: Any,
          name: str | None) -> Tensor:
    attrs = _window_attrs(strides, padding, op_type, data_format)
    attrs["ksize"] = _four(ksize, "ksize")
    x = _float_input(value, f"{op_type} value")
    return apply_op(op_type, [x], attrs, name=name).outputs[0]


def max_pool(value: Any, ksize: Any, strides: Any, padding: Any, data_format: Any = "NHWC",
             name: str | None = None) -> Tensor:
    """The maximum over each ``ksize`` window, moved by ``strides`` (padding never wins)."""
    return _pool("MaxPool", value, ksize, strides, padding, data_format, name)


def avg_pool(value: Any, ksize: Any, strides: Any, padding: Any, data_format: Any = "NHWC",
             name: str | None = None) -> Tensor:
    """The mean over each ``ksize`` window; with SAME, padded positions are not counted."""
    return _pool("AvgPool", value, ksize, strides, padding, data_format, name)


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: Any = "NHWC", name: str | None = None) -> Tensor:
    """``tf.nn.max_pool2d``: max_pool under its TF 1.14+ name."""
    return max_pool(input, ksize, strides, padding, data_format, name)


def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: Any = "NHWC", name: str | None = None) -> Tensor:
    """``tf.nn.avg_pool2d``: avg_pool under its TF 1.14+ name."""
    return avg_pool(input, ksize, strides, padding, data_format, name)

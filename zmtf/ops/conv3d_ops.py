"""3-D convolution and pooling (NDHWC) and 2-D max pooling with argmax, with their gradients:
Conv3D, Conv3DBackpropInputV2 / Conv3DBackpropFilterV2 (conv3d_transpose), MaxPool3D,
AvgPool3D, MaxPoolWithArgmax.

The constructors check strides, ksize, dilations and padding at graph-building time, as
conv_ops.py does for the 2-D ops; the kernels are in kernels/cpu/window_taps.py.
"""

from __future__ import annotations

from typing import Any, Sequence

from zmtf.framework import dtypes
from zmtf.framework.errors import InvalidArgumentError, UnimplementedError
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.array_ops import _shape_tensor, _shape_value
from zmtf.ops.conv_ops import _float_input, _padding
from zmtf.ops.math_grad import shape_of
from zmtf.ops.static_dims import static_dims
from zmtf.framework.tensor_shape import TensorShape
from zmtf.framework.window_geometry import span

Grads = list[Tensor | None]



# ---- argument checks and static shapes -------------------------------------------------------
def full_rank_list(value: Any, spatial: int, what: str) -> list[int]:
    """An int, ``spatial`` ints, or ``spatial + 2`` ints (1 on batch and channels) as the
    full-rank list TF's ops take."""
    items = [int(value)] if isinstance(value, int) else [int(v) for v in value]
    if len(items) == 1:
        items = items * spatial
    if len(items) == spatial:
        items = [1, *items, 1]
    if len(items) != spatial + 2:
        raise ValueError(f"{what} should be of length 1, {spatial} or {spatial + 2}, got {value!r}")
    if items[0] != 1 or items[-1] != 1:
        raise UnimplementedError(f"Current implementation does not yet support {what} in the "
                                 f"batch and depth dimensions: got {items}")
    return items


def _channels_last(data_format: Any, expected: str, op_type: str) -> str:
    if data_format not in (None, expected):
        raise InvalidArgumentError(f"{op_type} on CPU only supports {expected}, got data_format="
                                   f"{data_format!r}; transpose the input to channels-last")
    return expected


def window_output(in_dims: Sequence[int | None], window: Sequence[int | None],
                  attrs: dict[str, Any]) -> list[int | None]:
    """Output sizes of the spatial axes (None where unknown)."""
    strides, dilations = attrs["strides"][1:-1], attrs.get("dilations", [1] * 5)[1:-1]
    sizes: list[int | None] = []
    for size, extent, stride, dilation in zip(in_dims, window, strides, dilations):
        if size is None or extent is None:
            sizes.append(None)
            continue
        try:
            sizes.append(span(size, extent, stride, dilation, attrs["padding"]).size)
        except ValueError as error:
            raise ValueError(str(error)) from None
    return sizes


@op_def("Conv3D")
def _conv3d_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, kernel = inputs
    dims, f_dims = static_dims(x, 5, "Conv3D input"), static_dims(kernel, 5, "Conv3D filter")
    if dims[4] is not None and f_dims[3] is not None and dims[4] != f_dims[3]:
        raise ValueError(f"Dimensions must be equal, but are {dims[4]} and {f_dims[3]}: the "
                         f"input depth of {x.shape} and the filter's in_channels of {kernel.shape}")
    spatial = window_output(dims[1:4], f_dims[:3], attrs)
    return [(x.dtype, TensorShape([dims[0], *spatial, f_dims[4]]))]


@op_def("Conv3DBackpropInputV2")
def _conv3d_backprop_input_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    sizes, kernel, _ = inputs
    return [(kernel.dtype, TensorShape(_shape_value(sizes) or [None] * 5))]


@op_def("Conv3DBackpropFilterV2")
def _conv3d_backprop_filter_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, sizes, _ = inputs
    return [(x.dtype, TensorShape(_shape_value(sizes) or [None] * 5))]


def _pool_shape(x: Tensor, attrs: dict[str, Any], rank: int) -> TensorShape:
    dims = static_dims(x, rank, "pooling input")
    spatial = window_output(dims[1:-1], attrs["ksize"][1:-1], attrs)
    return TensorShape([dims[0], *spatial, dims[-1]])


@op_def("MaxPool3D", "AvgPool3D")
def _pool3d_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, _pool_shape(inputs[0], attrs, 5))]


@op_def("MaxPool3DGrad")
def _max_pool3d_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


@op_def("AvgPool3DGrad")
def _avg_pool3d_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    sizes, grad = inputs
    return [(grad.dtype, TensorShape(_shape_value(sizes) or [None] * 5))]


@op_def("MaxPoolWithArgmax")
def _max_pool_with_argmax_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    shape = _pool_shape(inputs[0], attrs, 4)
    return [(inputs[0].dtype, shape), (dtypes.as_dtype(attrs["Targmax"]), shape)]


@op_def("MaxPoolGradWithArgmax")
def _max_pool_grad_with_argmax_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


# ---- constructors ----------------------------------------------------------------------------
def _conv3d_attrs(strides: Any, padding: Any, data_format: Any, dilations: Any,
                  op_type: str) -> dict[str, Any]:
    return {"strides": full_rank_list(strides, 3, "strides"), "padding": _padding(padding),
            "data_format": _channels_last(data_format, "NDHWC", op_type),
            "dilations": full_rank_list(1 if dilations is None else dilations, 3, "dilations")}


def conv3d(input: Any, filter: Any = None, strides: Any = None, padding: Any = None,  # noqa: A002
           data_format: Any = "NDHWC", dilations: Any = (1, 1, 1, 1, 1), name: str | None = None,
           filters: Any = None) -> Tensor:
    """3-D convolution: ``input`` [batch, d, h, w, in_c] with ``filter`` [f_d, f_h, f_w, in_c,
    out_c] -> [batch, out_d, out_h, out_w, out_c]."""
    kernel = filter if filter is not None else filters
    if kernel is None or strides is None or padding is None:
        raise TypeError("conv3d needs input, filter (or filters=), strides and padding")
    attrs = _conv3d_attrs(strides, padding, data_format, dilations, "Conv3D")
    x = _float_input(input, "conv3d input")
    kernel = _float_input(kernel, "conv3d filter", dtype=x.dtype)
    return apply_op("Conv3D", [x, kernel], attrs, name=name or "Conv3D").outputs[0]


def conv3d_transpose(value: Any, filter: Any = None, output_shape: Any = None,  # noqa: A002
                     strides: Any = None, padding: Any = "SAME", data_format: Any = "NDHWC",
                     name: str | None = None, input: Any = None, filters: Any = None,  # noqa: A002
                     dilations: Any = None) -> Tensor:
    """The transpose of conv3d: ``value`` [batch, d, h, w, in_c] with ``filter`` [f_d, f_h,
    f_w, out_c, in_c] -> ``output_shape``; conv3d's input gradient, as in TF."""
    value = input if input is not None else value
    kernel = filter if filter is not None else filters
    if kernel is None or output_shape is None or strides is None:
        raise TypeError("conv3d_transpose needs value, filter, output_shape and strides")
    attrs = _conv3d_attrs(strides, padding, data_format, dilations, "Conv3DBackpropInputV2")
    with get_default_graph().name_scope(name or "conv3d_transpose") as scope:
        kernel = _float_input(kernel, "conv3d_transpose filter")
        grad = _float_input(value, "conv3d_transpose value", dtype=kernel.dtype)
        return apply_op("Conv3DBackpropInputV2", [_shape_tensor(output_shape), kernel, grad],
                        attrs, name=scope).outputs[0]


def conv3d_backprop_filter_v2(input: Any, filter_sizes: Any, out_backprop: Any,  # noqa: A002
                              strides: Any, padding: Any, data_format: Any = "NDHWC",
                              dilations: Any = (1, 1, 1, 1, 1), name: str | None = None) -> Tensor:
    """The gradient of conv3d with respect to its filter, of shape ``filter_sizes``."""
    attrs = _conv3d_attrs(strides, padding, data_format, dilations, "Conv3DBackpropFilterV2")
    x = _float_input(input, "input")
    grad = _float_input(out_backprop, "out_backprop", dtype=x.dtype)
    return apply_op("Conv3DBackpropFilterV2", [x, _shape_tensor(filter_sizes), grad], attrs,
                    name=name or "Conv3DBackpropFilterV2").outputs[0]


def _pool3d(op_type: str, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
            data_format: Any, name: str | None) -> Tensor:
    attrs = {"ksize": full_rank_list(ksize, 3, "ksize"),
             "strides": full_rank_list(strides, 3, "strides"), "padding": _padding(padding),
             "data_format": _channels_last(data_format, "NDHWC", op_type)}
    x = _float_input(input, f"{op_type} input")
    return apply_op(op_type, [x], attrs, name=name or op_type).outputs[0]


def max_pool3d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: Any = "NDHWC", name: str | None = None) -> Tensor:
    """The maximum over each ``ksize`` window of a 5-D NDHWC input."""
    return _pool3d("MaxPool3D", input, ksize, strides, padding, data_format, name)


def avg_pool3d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: Any = "NDHWC", name: str | None = None) -> Tensor:
    """The mean over each ``ksize`` window (SAME padding not counted) of a 5-D input."""
    return _pool3d("AvgPool3D", input, ksize, strides, padding, data_format, name)


def max_pool_with_argmax(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
                         data_format: Any = "NHWC", Targmax: Any = None,  # noqa: N803
                         name: str | None = None, output_dtype: Any = None,
                         include_batch_in_index: bool = False) -> tuple[Tensor, Tensor]:
    """max_pool plus, per output, the flat index of the input element that won the window:
    ``(y * width + x) * channels + c``, plus ``b * height * width * channels`` with
    ``include_batch_in_index``."""
    if data_format != "NHWC":
        raise ValueError("Data formats other than 'NHWC' are not yet supported")
    if Targmax is not None and output_dtype is not None and Targmax != output_dtype:
        raise ValueError("Cannot specify both 'Targmax' and 'output_dtype'.")
    index_dtype = dtypes.as_dtype(Targmax or output_dtype or dtypes.int64)
    if index_dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"Targmax must be int32 or int64, got {index_dtype.name}")
    attrs = {"ksize": full_rank_list(ksize, 2, "ksize"),
             "strides": full_rank_list(strides, 2, "strides"), "padding": _padding(padding),
             "Targmax": index_dtype.name, "include_batch_in_index": bool(include_batch_in_index)}
    x = _float_input(input, "max_pool_with_argmax input")
    op = apply_op("MaxPoolWithArgmax", [x], attrs, name=name or "MaxPoolWithArgmax")
    return op.outputs[0], op.outputs[1]


# ---- gradients -------------------------------------------------------------------------------
def _attrs(op: Operation, *keys: str) -> dict[str, Any]:
    return {key: op.get_attr(key) for key in keys}


_CONV_KEYS = ("strides", "padding", "data_format", "dilations")
_POOL_KEYS = ("ksize", "strides", "padding", "data_format")


@gradient("Conv3D")
def _conv3d_grad(op: Operation, grad: Tensor) -> Grads:
    x, kernel = op.inputs
    attrs = _attrs(op, *_CONV_KEYS)
    return [apply_op("Conv3DBackpropInputV2", [shape_of(x), kernel, grad], attrs).outputs[0],
            apply_op("Conv3DBackpropFilterV2", [x, shape_of(kernel), grad], attrs).outputs[0]]


@gradient("Conv3DBackpropInputV2")
def _conv3d_backprop_input_grad(op: Operation, grad: Tensor) -> Grads:
    _, kernel, out_backprop = op.inputs
    attrs = _attrs(op, *_CONV_KEYS)
    return [None,
            apply_op("Conv3DBackpropFilterV2", [grad, shape_of(kernel), out_backprop],
                     attrs).outputs[0],
            apply_op("Conv3D", [grad, kernel], attrs).outputs[0]]


@gradient("Conv3DBackpropFilterV2")
def _conv3d_backprop_filter_grad(op: Operation, grad: Tensor) -> Grads:
    x, _, out_backprop = op.inputs
    attrs = _attrs(op, *_CONV_KEYS)
    return [apply_op("Conv3DBackpropInputV2", [shape_of(x), grad, out_backprop],
                     attrs).outputs[0],
            None, apply_op("Conv3D", [x, grad], attrs).outputs[0]]


@gradient("MaxPool3D")
def _max_pool3d_grad(op: Operation, grad: Tensor) -> Grads:
    return [apply_op("MaxPool3DGrad", [op.inputs[0], op.outputs[0], grad],
                     _attrs(op, *_POOL_KEYS)).outputs[0]]


@gradient("AvgPool3D")
def _avg_pool3d_grad(op: Operation, grad: Tensor) -> Grads:
    return [apply_op("AvgPool3DGrad", [shape_of(op.inputs[0]), grad],
                     _attrs(op, *_POOL_KEYS)).outputs[0]]


@gradient("AvgPool3DGrad")
def _avg_pool3d_grad_grad(op: Operation, grad: Tensor) -> Grads:
    # AvgPool3DGrad is linear in its gradient input, and its adjoint is AvgPool3D itself
    return [None, apply_op("AvgPool3D", [grad], _attrs(op, *_POOL_KEYS)).outputs[0]]


@gradient("MaxPoolWithArgmax")
def _max_pool_with_argmax_grad(op: Operation, grad: Tensor, unused_argmax_grad: Any) -> Grads:
    attrs = _attrs(op, "ksize", "strides", "padding", "include_batch_in_index")
    return [apply_op("MaxPoolGradWithArgmax", [op.inputs[0], grad, op.outputs[1]],
                     attrs).outputs[0]]

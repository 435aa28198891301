"""TF's rank-generic wrappers over the 1-, 2- and 3-D ops: ``tf.nn.convolution`` and
``tf.nn.pool`` (dispatching on the window's rank), ``max_pool1d`` / ``avg_pool1d`` and
``conv1d_transpose`` (the 2-D ops over a height of 1, as TF builds them).

Dilated convolutions use the ops' own ``dilations`` attribute (TF wraps the op in
space_to_batch instead: the values are the same). Dilated pooling is not built.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops
from zmtf.ops.array_ops import _shape_value, expand_dims, squeeze
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.conv3d_ops import avg_pool3d, conv3d, max_pool3d
from zmtf.ops.conv_ops import avg_pool, conv2d, conv2d_backprop_input, max_pool
from zmtf.ops.conv_variant_ops import conv1d

_CHANNELS_LAST = {1: ("NWC", "NHWC"), 2: ("NHWC",), 3: ("NDHWC",)}


def _spatial_list(value: Any, rank: int, what: str) -> list[int]:
    if value is None:
        return [1] * rank
    items = [int(value)] * rank if isinstance(value, int) else [int(v) for v in value]
    if len(items) != rank:
        raise ValueError(f"{what} must have length {rank} (one per spatial dimension), got "
                         f"{value!r}")
    return items


def _check_format(data_format: Any, rank: int, fn: str) -> None:
    if data_format is not None and data_format not in _CHANNELS_LAST[rank]:
        raise ValueError(f"tf.nn.{fn}: zmtf supports channels-last data_format only "
                         f"({' or '.join(_CHANNELS_LAST[rank])} for {rank} spatial dimensions), "
                         f"got {data_format!r}")


def convolution(input: Any, filter: Any = None, padding: Any = None,  # noqa: A002
                strides: Any = None, dilation_rate: Any = None, name: str | None = None,
                data_format: Any = None, filters: Any = None, dilations: Any = None) -> Tensor:
    """N-D convolution (N = 1, 2 or 3, from the filter's rank): conv1d, conv2d or conv3d with
    ``strides`` and ``dilation_rate`` given per spatial dimension."""
    kernel = filter if filter is not None else filters
    if kernel is None or padding is None:
        raise TypeError("convolution needs input, filter (or filters=) and padding")
    kernel = convert_to_tensor(kernel, name="filters")
    rank = kernel.shape.ndims
    if rank is None:
        rank = convert_to_tensor(input, name="input").shape.ndims
    if rank not in (3, 4, 5):
        raise ValueError(f"tf.nn.convolution: zmtf needs the filter's (or input's) rank, 3, 4 or "
                         f"5, known at graph construction; filter {kernel.name} has shape "
                         f"{kernel.shape}")
    spatial = rank - 2
    _check_format(data_format, spatial, "convolution")
    steps = _spatial_list(strides, spatial, "strides")
    rates = _spatial_list(dilation_rate if dilation_rate is not None else dilations, spatial,
                          "dilation_rate")
    if any(r > 1 for r in rates) and any(s > 1 for s in steps):
        raise ValueError(f"strides > 1 not supported in conjunction with dilation_rate > 1 "
                         f"(strides {steps}, dilation_rate {rates})")
    with get_default_graph().name_scope(name or "convolution") as scope:
        if spatial == 1:
            return conv1d(input, kernel, steps[0], padding, dilations=rates[0], name=scope)
        if spatial == 2:
            return conv2d(input, kernel, [1, *steps, 1], padding, dilations=[1, *rates, 1],
                          name=scope)
        return conv3d(input, kernel, [1, *steps, 1], padding, dilations=[1, *rates, 1],
                      name=scope)


def _pool_1d(pool_fn: Any, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
             data_format: Any, name: str | None, default: str) -> Tensor:
    _check_format(data_format, 1, default)
    size = _spatial_list(ksize[1] if not isinstance(ksize, int) and len(ksize) == 3 else ksize,
                         1, "ksize")[0]
    step = _spatial_list(strides[1] if not isinstance(strides, int) and len(strides) == 3
                         else strides, 1, "strides")[0]
    with get_default_graph().name_scope(name or default) as scope:
        x = expand_dims(convert_to_tensor(input, name="input"), 1)
        pooled = pool_fn(x, [1, 1, size, 1], [1, 1, step, 1], padding, name=scope)
        return squeeze(pooled, [1])


def max_pool1d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: Any = "NWC", name: str | None = None) -> Tensor:
    """Max pooling over the width of [batch, width, channels]."""
    return _pool_1d(max_pool, input, ksize, strides, padding, data_format, name, "MaxPool1d")


def avg_pool1d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: Any = "NWC", name: str | None = None) -> Tensor:
    """Average pooling over the width of [batch, width, channels]."""
    return _pool_1d(avg_pool, input, ksize, strides, padding, data_format, name, "AvgPool1D")


def pool(input: Any, window_shape: Any, pooling_type: str, padding: Any,  # noqa: A002
         dilation_rate: Any = None, strides: Any = None, name: str | None = None,
         data_format: Any = None, dilations: Any = None) -> Tensor:
    """N-D pooling (N = len(window_shape): 1, 2 or 3), ``pooling_type`` "MAX" or "AVG"."""
    window = [int(w) for w in window_shape]
    spatial = len(window)
    if spatial not in (1, 2, 3):
        raise ValueError(f"tf.nn.pool: window_shape must have 1, 2 or 3 entries, got "
                         f"{window_shape!r}")
    if pooling_type not in ("MAX", "AVG"):
        raise ValueError(f"Invalid pooling_type: {pooling_type}")
    _check_format(data_format, spatial, "pool")
    rates = _spatial_list(dilation_rate if dilation_rate is not None else dilations, spatial,
                          "dilation_rate")
    steps = _spatial_list(strides, spatial, "strides")
    if any(r > 1 for r in rates):
        if any(s > 1 for s in steps):
            raise ValueError("strides > 1 not supported in conjunction with dilation_rate > 1")
        raise NotImplementedError(f"tf.nn.pool: zmtf does not build dilated pooling "
                                  f"(dilation_rate {rates}); pool undilated, or gather the "
                                  f"dilated grid with tf.space_to_batch_nd first")
    with get_default_graph().name_scope(name or f"{pooling_type.lower()}_pool") as scope:
        if spatial == 1:
            fn = max_pool1d if pooling_type == "MAX" else avg_pool1d
            return fn(input, window[0], steps[0], padding, name=scope)
        if spatial == 2:
            fn2 = max_pool if pooling_type == "MAX" else avg_pool
            return fn2(input, [1, *window, 1], [1, *steps, 1], padding, name=scope)
        fn3 = max_pool3d if pooling_type == "MAX" else avg_pool3d
        return fn3(input, [1, *window, 1], [1, *steps, 1], padding, name=scope)


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: Any = "SAME", data_format: Any = "NWC", dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """The transpose of conv1d: ``input`` [batch, w, in_c] with ``filters`` [f_w, out_c,
    in_c] -> ``output_shape`` [batch, out_w, out_c] (conv2d_transpose over a height of 1)."""
    _check_format(data_format, 1, "conv1d_transpose")
    step = _spatial_list(strides[1] if not isinstance(strides, int) and len(strides) == 3
                         else strides, 1, "strides")[0]
    rate = _spatial_list(dilations if dilations is None or isinstance(dilations, int)
                         else (dilations[1] if len(dilations) == 3 else dilations), 1,
                         "dilations")[0]
    with get_default_graph().name_scope(name or "conv1d_transpose") as scope:
        x = expand_dims(convert_to_tensor(input, name="input"), 1)
        kernel = expand_dims(convert_to_tensor(filters, name="filters"), 0)
        shape = _shape_value(convert_to_tensor(output_shape)) if not isinstance(
            output_shape, (list, tuple)) else [int(v) for v in output_shape]
        if shape is not None and None not in shape:
            full_shape: Any = [shape[0], 1, *shape[1:]]
        else:
            out = convert_to_tensor(output_shape)
            full_shape = array_ops.concat([out[:1], [1], out[1:]], 0)
        y = conv2d_backprop_input(full_shape, kernel, x, [1, 1, step, 1], padding,
                                  dilations=[1, 1, rate, 1], name=scope)
        return squeeze(y, [1])

"""Shape rules shared by the CPU and GPU kernels (pure: shapes in, axes out, no arrays)."""

from __future__ import annotations

from typing import Any, Sequence

from zmtf.framework.errors import InvalidArgumentError


def _shape_str(shape: Sequence[int]) -> str:
    return "[" + ",".join(str(int(d)) for d in shape) + "]"


def bias_channel_axis(value_shape: Sequence[int], bias_shape: Sequence[int], attrs: dict[str, Any]) -> int:
    """BiasAdd's channel axis (last, or 1 for NCHW), checked against the bias length."""
    ndim = len(value_shape)
    channels_first = attrs.get("data_format", "NHWC") == "NCHW"
    axis = 1 if channels_first and ndim >= 3 else ndim - 1
    if len(bias_shape) != 1 or ndim < 2 or value_shape[axis] != bias_shape[0]:
        raise InvalidArgumentError(
            f"Must provide as many biases as the channel dimension of the input tensor: "
            f"{_shape_str(bias_shape)} vs. {_shape_str(value_shape)} (node '{attrs['_node_name']}')")
    return axis


def sum_to_shape_axes(x_shape: Sequence[int], target: Sequence[int], node_name: str) -> tuple[int, ...]:
    """The axes SumToShape sums over so that ``x_shape`` becomes ``target`` (inverse broadcasting)."""
    lead = len(x_shape) - len(target)
    if lead >= 0:
        axes = list(range(lead))
        for i, t in enumerate(target):   # a loop: generators are calls per item (every step)
            d = x_shape[lead + i]
            if t == 1 and d != 1:
                axes.append(lead + i)
            elif t != d:
                break
        else:
            return tuple(axes)
    raise InvalidArgumentError(
        f"SumToShape (node '{node_name}'): cannot reduce shape {_shape_str(x_shape)} to "
        f"{_shape_str(target)}; the target must broadcast to it")


def mean_grad_geometry(target: Sequence[int], axis: Any, grad_size: int,
                       node_name: str) -> tuple[tuple[int, ...], int]:
    """MeanGrad's kept shape (``target`` with the reduced axes set to 1, which the gradient
    is reshaped to) and the count it is divided by: TF's size_in // max(size_out, 1)."""
    ndim = len(target)
    if axis is None:
        axes = set(range(ndim))
    else:
        if any(not -max(ndim, 1) <= int(a) < max(ndim, 1) for a in axis):
            raise InvalidArgumentError(
                f"MeanGrad (node '{node_name}'): reduction axes {list(axis)} do not fit an input "
                f"of shape {_shape_str(target)}")
        axes = {int(a) % ndim for a in axis} if ndim else set()
    kept = tuple(1 if i in axes else int(d) for i, d in enumerate(target))
    size_out = 1
    for d in kept:
        size_out *= d
    if size_out != grad_size:
        raise InvalidArgumentError(
            f"MeanGrad (node '{node_name}'): a gradient of {grad_size} elements does not fit the "
            f"reduced shape {_shape_str(kept)} of an input of shape {_shape_str(target)}")
    size_in = 1
    for d in target:
        size_in *= int(d)
    return kept, size_in // max(size_out, 1)

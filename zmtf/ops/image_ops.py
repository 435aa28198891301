"""The image primitives: ReverseV2 (tf.reverse), ResizeBilinear and ResizeNearestNeighbor with
their gradients, and RandomCrop (tf.random_crop's draw-and-slice in one op).

The resize ops use TF1's legacy coordinate mapping by default (``half_pixel_centers=False``):
output pixel ``i`` reads input coordinate ``i * in/out`` (``i * (in-1)/(out-1)`` with
``align_corners``). The tf.image functions built from these and existing ops are in
image_functions.py.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.array_ops import _shape_value
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


# ---- ReverseV2 ---------------------------------------------------------------------------
def _normalized_axes(axis: Tensor, rank: int | None, what: str) -> list[int] | None:
    """The constant axes, made non-negative when the rank is known; None when fed."""
    axes = _shape_value(axis) if axis.op.type == "Const" else None
    if axes is None or rank is None:
        return axes
    out = []
    for a in axes:
        if not -rank <= a < rank:
            raise ValueError(f"{what}: axis {a} is out of range for a tensor of rank {rank}")
        out.append(a % rank)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: axis {axes} names a dimension twice")
    return out


@op_def("ReverseV2")
def _reverse_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, axis = inputs
    if axis.shape.ndims not in (None, 1):
        raise ValueError(f"tf.reverse: axis must be 1-D, got shape {axis.shape}")
    _normalized_axes(axis, x.shape.ndims, "tf.reverse")
    return [(x.dtype, x.shape)]


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """``tensor`` with the dimensions in ``axis`` (a list of ints, negatives allowed) reversed."""
    x = convert_to_tensor(tensor)
    axis_t = convert_to_tensor(axis if isinstance(axis, Tensor) else list(axis), dtype=dtypes.int32,
                               name="axis")
    return apply_op("ReverseV2", [x, axis_t], name=name or "ReverseV2").outputs[0]


reverse_v2 = reverse


# ---- ResizeBilinear / ResizeNearestNeighbor ------------------------------------------------
def _resize_output_shape(images: Tensor, size: Tensor, what: str) -> TensorShape:
    if images.shape.ndims not in (None, 4):
        raise ValueError(f"{what}: images must be 4-D [batch, height, width, channels], got "
                         f"{images.name} of shape {images.shape}")
    if not size.shape.is_compatible_with(TensorShape([2])):
        raise ValueError(f"{what}: size must be a 1-D Tensor of 2 elements: new_height, new_width; "
                         f"got shape {size.shape}")
    new_size = _shape_value(size) or [None, None]
    if any(d is not None and d <= 0 for d in new_size):
        raise ValueError(f"{what}: size must be positive, got {new_size}")
    dims = images.shape.as_list() if images.shape.ndims is not None else [None] * 4
    return TensorShape([dims[0], new_size[0], new_size[1], dims[3]])


@op_def("ResizeBilinear")
def _resize_bilinear_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.float32, _resize_output_shape(inputs[0], inputs[1], "ResizeBilinear"))]


@op_def("ResizeNearestNeighbor")
def _resize_nearest_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, _resize_output_shape(inputs[0], inputs[1], "ResizeNearestNeighbor"))]


def _resize(op_type: str, images: Any, size: Any, align_corners: bool, half_pixel_centers: bool,
            name: str | None) -> Tensor:
    images_t = convert_to_tensor(images, name="images")
    if not (images_t.dtype.is_floating or images_t.dtype.is_integer):
        raise TypeError(f"tf.image: {op_type} needs a real-valued image, got {images_t.dtype.name}")
    if align_corners and half_pixel_centers:
        raise ValueError("If half_pixel_centers is True, align_corners must be False.")
    size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
    attrs = {"align_corners": bool(align_corners)}
    if op_type != "ResizeArea":   # the one resize op without the attribute
        attrs["half_pixel_centers"] = bool(half_pixel_centers)
    return apply_op(op_type, [images_t, size_t], attrs, name=name or op_type).outputs[0]


def resize_bilinear(images: Any, size: Any, align_corners: bool = False, name: str | None = None,
                    half_pixel_centers: bool = False) -> Tensor:
    """Bilinear resize of 4-D ``images`` to ``size`` = [new_height, new_width]; float32 out."""
    return _resize("ResizeBilinear", images, size, align_corners, half_pixel_centers, name)


def resize_nearest_neighbor(images: Any, size: Any, align_corners: bool = False,
                            name: str | None = None, half_pixel_centers: bool = False) -> Tensor:
    """Nearest-neighbour resize of 4-D ``images`` to ``size``; keeps the dtype."""
    return _resize("ResizeNearestNeighbor", images, size, align_corners, half_pixel_centers, name)


@op_def("ResizeBilinearGrad")
def _resize_bilinear_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    grads, original = inputs
    return [(original.dtype, original.shape)]


@op_def("ResizeNearestNeighborGrad")
def _resize_nearest_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    grads, size = inputs
    new_size = _shape_value(size) or [None, None]
    dims = grads.shape.as_list() if grads.shape.ndims is not None else [None] * 4
    return [(grads.dtype, TensorShape([dims[0], new_size[0], new_size[1], dims[3]]))]


# ---- RandomCrop ----------------------------------------------------------------------------
@op_def("RandomCrop", stateful=True)
def _random_crop_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    value, size = inputs
    target = _shape_value(size)
    if value.shape.ndims is not None and target is not None:
        if len(target) != value.shape.ndims:
            raise ValueError(f"tf.random_crop: size {target} must have one entry per dimension of "
                             f"{value.name} {value.shape}")
        for want, have in zip(target, value.shape.as_list()):
            if want is not None and (want < 0 or (have is not None and want > have)):
                raise ValueError(f"tf.random_crop: Need value.shape >= size, got shape "
                                 f"{value.shape} and size {target}")
    return [(value.dtype, TensorShape(target) if target is not None else TensorShape(None))]


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A ``size``-shaped slice of ``value`` at a uniformly random offset (new each run)."""
    value_t = convert_to_tensor(value, name="value")
    size_t = convert_to_tensor(size if isinstance(size, Tensor) else list(size), dtype=dtypes.int32,
                               name="size")
    graph_seed, op_seed = get_default_graph().seeds_for_op(seed)
    attrs = {"seed": graph_seed, "seed2": op_seed}
    return apply_op("RandomCrop", [value_t, size_t], attrs, name=name or "random_crop").outputs[0]

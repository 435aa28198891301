"""Image kernels on CPU (numpy): ReverseV2, ResizeBilinear / ResizeNearestNeighbor and their
gradients, RandomCrop.

The resizes follow TF's CPU kernels in float32, step for step, so results match TF's to the
last bit or so: ``scale = in / out`` (``(in-1) / (out-1)`` with align_corners), output pixel
``i`` reads ``in = i * scale`` (legacy) or ``(i + 0.5) * scale - 0.5`` (half-pixel centers);
bilinear blends ``floor(in)`` and ``min(ceil(in), in_size - 1)``, nearest takes
``min(floor(in), in_size - 1)`` (``round`` with align_corners). A bilinear resize is a
matrix on each spatial axis, so its gradient is those matrices transposed.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, FLOATS, NUMERIC, check_output_size, int_list, shape_str
from zmtf.kernels.registry import register


@register("ReverseV2", dtypes=ALL)
def reverse_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    x, axis = inputs
    node = attrs["_node_name"]
    axes = int_list(axis, "axis", node)
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise InvalidArgumentError(f"ReverseV2 (node '{node}'): axis {a} is out of valid range "
                                       f"[{-x.ndim}, {x.ndim}) for input of shape {shape_str(x.shape)}")
    normalized = [a % x.ndim for a in axes]
    if len(set(normalized)) != len(normalized):
        raise InvalidArgumentError(f"ReverseV2 (node '{node}'): axis {axes} specified more than once")
    return [np.ascontiguousarray(np.flip(x, axis=tuple(normalized)))]


# ---- resize --------------------------------------------------------------------------------
def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def _source_coords(in_size: int, out_size: int, attrs: dict) -> np.ndarray:
    """float32 input coordinate read by each output index."""
    scale = _scale(in_size, out_size, attrs.get("align_corners", False))
    i = np.arange(out_size, dtype=np.float32)
    if attrs.get("half_pixel_centers", False):
        return (i + np.float32(0.5)) * scale - np.float32(0.5)
    return i * scale


def _bilinear_weights(in_size: int, out_size: int, attrs: dict) -> tuple:
    """(lower, upper, lerp) per output index, as TF's compute_interpolation_weights."""
    coords = _source_coords(in_size, out_size, attrs)
    floor = np.floor(coords)
    lower = np.maximum(floor, 0).astype(np.intp)
    upper = np.minimum(np.ceil(coords), in_size - 1).astype(np.intp)
    return lower, upper, (coords - floor).astype(np.float32)


def _nearest_index(in_size: int, out_size: int, attrs: dict) -> np.ndarray:
    scale = _scale(in_size, out_size, attrs.get("align_corners", False))
    i = np.arange(out_size, dtype=np.float32)
    if attrs.get("half_pixel_centers", False):
        coords = (i + np.float32(0.5)) * scale
    else:
        coords = i * scale
    # roundf rounds halves away from zero; the coordinates are >= 0
    picked = np.floor(coords + np.float32(0.5)) if attrs.get("align_corners", False) else np.floor(coords)
    return np.clip(picked, 0, in_size - 1).astype(np.intp)


def _checked_size(images: np.ndarray, size: np.ndarray, op: str, node: str) -> tuple[int, int]:
    if images.ndim != 4:
        raise InvalidArgumentError(f"{op} (node '{node}'): input must be 4-dimensional, got shape "
                                   f"{shape_str(images.shape)}")
    new = int_list(size, "size", node)
    if len(new) != 2 or new[0] <= 0 or new[1] <= 0:
        raise InvalidArgumentError(f"{op} (node '{node}'): output dimensions must be positive, got "
                                   f"size {new}")
    if images.shape[1] == 0 or images.shape[2] == 0:
        raise InvalidArgumentError(f"{op} (node '{node}'): input image must be of non-zero size, got "
                                   f"shape {shape_str(images.shape)}")
    check_output_size((images.shape[0], new[0], new[1], images.shape[3]), np.float32, node)
    return new[0], new[1]


@register("ResizeBilinear", dtypes=NUMERIC)
def resize_bilinear(ctx: Any, inputs: list, attrs: dict) -> list:
    images, size = inputs
    out_h, out_w = _checked_size(images, size, "ResizeBilinear", attrs["_node_name"])
    in_h, in_w = images.shape[1:3]
    y0, y1, ylerp = _bilinear_weights(in_h, out_h, attrs)
    x0, x1, xlerp = _bilinear_weights(in_w, out_w, attrs)
    image = images.astype(np.float32, copy=False)
    top_rows, bottom_rows = image[:, y0], image[:, y1]
    xlerp = xlerp[None, None, :, None]
    top_left, top_right = top_rows[:, :, x0], top_rows[:, :, x1]
    bottom_left, bottom_right = bottom_rows[:, :, x0], bottom_rows[:, :, x1]
    top = top_left + (top_right - top_left) * xlerp
    bottom = bottom_left + (bottom_right - bottom_left) * xlerp
    return [top + (bottom - top) * ylerp[None, :, None, None]]


@register("ResizeNearestNeighbor", dtypes=NUMERIC)
def resize_nearest_neighbor(ctx: Any, inputs: list, attrs: dict) -> list:
    images, size = inputs
    out_h, out_w = _checked_size(images, size, "ResizeNearestNeighbor", attrs["_node_name"])
    rows = _nearest_index(images.shape[1], out_h, attrs)
    cols = _nearest_index(images.shape[2], out_w, attrs)
    return [np.ascontiguousarray(images[:, rows][:, :, cols])]


def _bilinear_matrix(in_size: int, out_size: int, attrs: dict) -> np.ndarray:
    """[out_size, in_size]: row i holds the weights output i gives its two input pixels."""
    lower, upper, lerp = _bilinear_weights(in_size, out_size, attrs)
    matrix = np.zeros((out_size, in_size), np.float64)
    rows = np.arange(out_size)
    np.add.at(matrix, (rows, lower), 1.0 - lerp.astype(np.float64))
    np.add.at(matrix, (rows, upper), lerp.astype(np.float64))
    return matrix


def _nearest_matrix(in_size: int, out_size: int, attrs: dict) -> np.ndarray:
    matrix = np.zeros((out_size, in_size), np.float64)
    matrix[np.arange(out_size), _nearest_index(in_size, out_size, attrs)] = 1.0
    return matrix


def _scatter_back(grads: np.ndarray, rows: np.ndarray, cols: np.ndarray, dtype: Any) -> np.ndarray:
    """dx[b, h, w, c] = sum over (y, x) of rows[y, h] * grads[b, y, x, c] * cols[x, w]."""
    out = np.einsum("yh,byxc,xw->bhwc", rows, grads.astype(np.float64, copy=False), cols,
                    optimize=True)
    return out.astype(dtype)


def separable_resize_grad(op: str, inputs: list, attrs: dict, matrix: Callable) -> list:
    """The gradient of a resize given by ``matrix(in_size, out_size, attrs)`` on each axis:
    (grads, original_image) -> the gradient in the original image's shape and dtype."""
    grads, original = inputs
    if grads.ndim != 4 or original.ndim != 4:
        raise InvalidArgumentError(f"{op} (node '{attrs['_node_name']}'): grads and "
                                   f"original_image must be 4-D, got {shape_str(grads.shape)} and "
                                   f"{shape_str(original.shape)}")
    (in_h, in_w), (out_h, out_w) = original.shape[1:3], grads.shape[1:3]
    rows, cols = matrix(in_h, out_h, attrs), matrix(in_w, out_w, attrs)
    return [_scatter_back(grads, rows, cols, original.dtype)]


@register("ResizeBilinearGrad", dtypes=FLOATS)
def resize_bilinear_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    return separable_resize_grad("ResizeBilinearGrad", inputs, attrs, _bilinear_matrix)


@register("ResizeNearestNeighborGrad", dtypes=FLOATS)
def resize_nearest_neighbor_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    grads, size = inputs
    node = attrs["_node_name"]
    if grads.ndim != 4:
        raise InvalidArgumentError(f"ResizeNearestNeighborGrad (node '{node}'): grads must be 4-D, "
                                   f"got {shape_str(grads.shape)}")
    in_h, in_w = int_list(size, "size", node)
    rows = _nearest_matrix(in_h, grads.shape[1], attrs)
    cols = _nearest_matrix(in_w, grads.shape[2], attrs)
    return [_scatter_back(grads, rows, cols, grads.dtype)]


# ---- RandomCrop ----------------------------------------------------------------------------
@register("RandomCrop", dtypes=ALL)
def random_crop(ctx: Any, inputs: list, attrs: dict) -> list:
    """A ``size`` slice of ``value`` at an offset drawn uniformly per dimension."""
    value, size = inputs
    node = attrs["_node_name"]
    target = int_list(size, "size", node)
    if len(target) != value.ndim or any(t < 0 or t > d for t, d in zip(target, value.shape)):
        raise InvalidArgumentError(f"RandomCrop (node '{node}'): Need value.shape >= size, got "
                                   f"shape {shape_str(value.shape)} and size {shape_str(target)}")
    rng = ctx.random_generator(node, int(attrs.get("seed") or 0), int(attrs.get("seed2") or 0))
    offsets = [int(rng.integers(0, d - t + 1)) for t, d in zip(target, value.shape)]
    window = tuple(slice(o, o + t) for o, t in zip(offsets, target))
    return [np.ascontiguousarray(value[window])]

"""tf.image functions built from existing ops (so gradients come with them): total_variation,
image_gradients, sobel_edges, psnr, ssim, transpose, resize_with_crop_or_pad and
resize_image_with_pad, following TF's definitions step for step.

ssim's Gaussian window and resize_image_with_pad's target size are computed at graph
construction, so both need static image heights and widths here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.conv_variant_ops import depthwise_conv2d
from zmtf.ops.image_functions import (
    ResizeMethod, _height_width, _image_rank, _static_int, convert_image_dtype,
    pad_to_bounding_box, resize_image_with_crop_or_pad, resize_images, transpose_image,
)
from zmtf.ops.selection_ops import getitem, pad

_SOBEL = [[[-1, -2, -1], [0, 0, 0], [1, 2, 1]], [[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]]]


def total_variation(images: Any, name: str | None = None) -> Tensor:
    """Sum of absolute differences between neighbouring pixels, per image for a batch."""
    with get_default_graph().name_scope(name or "total_variation"):
        x = convert_to_tensor(images, name="images")
        rank = x.shape.ndims
        if rank not in (3, 4):
            raise ValueError("'images' must be either 3 or 4-dimensional.")
        lead = (slice(None),) * (rank - 3)
        rows = getitem(x, lead + (slice(1, None),)) - getitem(x, lead + (slice(None, -1),))
        cols = (getitem(x, lead + (slice(None), slice(1, None))) -
                getitem(x, lead + (slice(None), slice(None, -1))))
        axes = None if rank == 3 else [1, 2, 3]
        return (math_ops.reduce_sum(math_ops.abs(rows), axis=axes) +
                math_ops.reduce_sum(math_ops.abs(cols), axis=axes))


def image_gradients(image: Any) -> tuple[Tensor, Tensor]:
    """(dy, dx): forward differences of a 4-D image, zero in the last row / column."""
    x = convert_to_tensor(image, name="image")
    if x.shape.ndims != 4:
        raise ValueError(f"image_gradients expects a 4D tensor [batch_size, h, w, d], not "
                         f"{x.shape}.")
    dy = getitem(x, (slice(None), slice(1, None))) - getitem(x, (slice(None), slice(None, -1)))
    dx = (getitem(x, (slice(None), slice(None), slice(1, None))) -
          getitem(x, (slice(None), slice(None), slice(None, -1))))
    return (pad(dy, [[0, 0], [0, 1], [0, 0], [0, 0]]), pad(dx, [[0, 0], [0, 0], [0, 1], [0, 0]]))


def sobel_edges(image: Any) -> Tensor:
    """[batch, h, w, d, 2]: the vertical and horizontal Sobel responses of each channel
    (the image reflected at its borders)."""
    x = convert_to_tensor(image, name="image")
    dims = x.shape.as_list() if x.shape.ndims == 4 else None
    if dims is None or dims[3] is None:
        raise ValueError(f"tf.image.sobel_edges: zmtf needs a 4-D image with a static depth, got "
                         f"shape {x.shape}")
    kernels = np.expand_dims(np.transpose(np.asarray(_SOBEL), (1, 2, 0)), -2)
    filters = constant(np.tile(kernels, [1, 1, dims[3], 1]).astype(x.dtype.np),
                       name="sobel_filters")
    padded = pad(x, [[0, 0], [1, 1], [1, 1], [0, 0]], mode="REFLECT")
    edges = depthwise_conv2d(padded, filters, [1, 1, 1, 1], "VALID")
    if None in dims:
        return array_ops.reshape(edges, array_ops.concat([array_ops.shape(x), [2]], 0))
    return array_ops.reshape(edges, dims + [2])


def _as_float_images(a: Any, b: Any, max_val: Any) -> tuple[Tensor, Tensor, Tensor]:
    a_t, b_t = convert_to_tensor(a, name="img1"), convert_to_tensor(b, name="img2")
    if a_t.dtype != b_t.dtype:
        raise TypeError(f"both images must have the same dtype, got {a_t.dtype.name} and "
                        f"{b_t.dtype.name}")
    if not a_t.shape.is_compatible_with(b_t.shape):
        raise ValueError(f"images have incompatible shapes {a_t.shape} and {b_t.shape}")
    peak = convert_image_dtype(math_ops.cast(max_val, a_t.dtype), dtypes.float32)
    return (convert_image_dtype(a_t, dtypes.float32), convert_image_dtype(b_t, dtypes.float32),
            peak)


def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Tensor:
    """Peak signal-to-noise ratio in dB between images, over the last three axes."""
    with get_default_graph().name_scope(name or "PSNR"):
        a_f, b_f, peak = _as_float_images(a, b, max_val)
        mse = math_ops.reduce_mean(math_ops.squared_difference(a_f, b_f), [-3, -2, -1])
        return math_ops.subtract(20 * math_ops.log(peak) / np.log(10.0).astype(np.float32),
                                 np.float32(10 / np.log(10)) * math_ops.log(mse), name="psnr")


def _gaussian_window(size: int, sigma: float) -> np.ndarray:
    """TF's _fspecial_gauss: a normalized [size, size] Gaussian (softmax of -r^2 / 2s^2)."""
    coords = np.arange(size, dtype=np.float32) - np.float32(size - 1) / 2
    g = coords ** 2 * np.float32(-0.5 / np.float32(sigma) ** 2)
    logits = (g[None, :] + g[:, None]).reshape(-1)
    weights = np.exp(logits - logits.max())
    return (weights / weights.sum()).astype(np.float32).reshape(size, size, 1, 1)


def ssim(img1: Any, img2: Any, max_val: Any, filter_size: int = 11, filter_sigma: float = 1.5,
         k1: float = 0.01, k2: float = 0.03, return_index_map: bool = False) -> Tensor:
    """Structural similarity of two [..., h, w, c] images with a Gaussian window (TF's
    settings: VALID windows, compensation 1.0), averaged over height, width and channels."""
    with get_default_graph().name_scope("SSIM"):
        x, y, peak = _as_float_images(img1, img2, max_val)
        rank = _image_rank(x, "ssim")
        height, width = _height_width(x, "ssim")
        depth = x.shape.as_list()[-1]
        if height < filter_size or width < filter_size or depth is None:
            raise ValueError(f"tf.image.ssim: images {x.shape} must be at least filter_size "
                             f"({filter_size}) high and wide, with a static depth")
        window = np.tile(_gaussian_window(filter_size, filter_sigma), [1, 1, depth, 1])
        kernel = constant(window, name="gaussian_window")

        def reducer(t: Tensor) -> Tensor:
            batch = t if rank == 4 else array_ops.expand_dims(t, 0)
            out = depthwise_conv2d(batch, kernel, [1, 1, 1, 1], "VALID")
            return out if rank == 4 else array_ops.squeeze(out, [0])
        c1 = (k1 * peak) ** 2
        c2 = (k2 * peak) ** 2
        mean_x, mean_y = reducer(x), reducer(y)
        num0 = mean_x * mean_y * 2.0
        den0 = math_ops.square(mean_x) + math_ops.square(mean_y)
        luminance = (num0 + c1) / (den0 + c1)
        num1 = reducer(x * y) * 2.0
        den1 = reducer(math_ops.square(x) + math_ops.square(y))
        contrast = (num1 - num0 + c2) / (den1 - den0 + c2)
        if return_index_map:
            per_channel = luminance * contrast
        else:
            per_channel = math_ops.reduce_mean(luminance * contrast, [-3, -2])
        return math_ops.reduce_mean(per_channel, [-1])


def transpose(image: Any, name: str | None = None) -> Tensor:
    """``tf.image.transpose``: swap height and width (transpose_image)."""
    with get_default_graph().name_scope(name or "transpose"):
        return transpose_image(image)


resize_with_crop_or_pad = resize_image_with_crop_or_pad


def resize_image_with_pad(image: Any, target_height: Any, target_width: Any,
                          method: int = ResizeMethod.BILINEAR,
                          align_corners: bool = False) -> Tensor:
    """Resize keeping the aspect ratio so the image fits [target_height, target_width],
    then zero-pad it (centered) to exactly that size."""
    with get_default_graph().name_scope("resize_image_with_pad"):
        image_t = convert_to_tensor(image, name="image")
        is_batch = _image_rank(image_t, "resize_image_with_pad") == 4
        images = image_t if is_batch else array_ops.expand_dims(image_t, 0)
        th = _static_int(target_height, "resize_image_with_pad", "target_height")
        tw = _static_int(target_width, "resize_image_with_pad", "target_width")
        if th <= 0 or tw <= 0:
            raise ValueError(f"target_{'width' if tw <= 0 else 'height'} must be > 0.")
        height, width = _height_width(images, "resize_image_with_pad")
        f32 = np.float32
        ratio = max(f32(width) / f32(tw), f32(height) / f32(th))
        new_h, new_w = f32(height) / ratio, f32(width) / ratio
        pad_h = max(0, int(np.floor((f32(th) - new_h) / 2)))
        pad_w = max(0, int(np.floor((f32(tw) - new_w) / 2)))
        resized = resize_images(images, [int(np.floor(new_h)), int(np.floor(new_w))], method,
                                align_corners=align_corners)
        padded = pad_to_bounding_box(resized, pad_h, pad_w, th, tw)
        return padded if is_batch else array_ops.squeeze(padded, axis=[0])

"""tf.image functions for [height, width, channels] or [batch, height, width, channels] images,
as compositions of existing ops (so their gradients come with them): flips, transposes and
rotations (ReverseV2, Transpose), crops and pads (Slice, Pad), brightness, contrast and
standardization (arithmetic and means), dtype conversion (Cast and a scale), resizing.

Heights, widths, offsets and targets must be static (Python ints or known dimensions) for
crops and pads, as zmtf's Slice and Pad take static attrs; a clear error says so otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.dtypes import DType, as_dtype
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops, random_ops, selection_ops
from zmtf.ops.array_ops import _shape_value
from zmtf.ops.constant_op import constant, convert_to_tensor
from zmtf.ops.image_ops import resize_bilinear, resize_nearest_neighbor, reverse
from zmtf.ops.image_resize_ops import resize_area, resize_bicubic


class ResizeMethod:
    """TF1's resize methods (tf.image.ResizeMethod)."""
    BILINEAR = 0
    NEAREST_NEIGHBOR = 1
    BICUBIC = 2
    AREA = 3


def _scope(name: str | None, default: str) -> Any:
    return get_default_graph().name_scope(name or default)


def _image_rank(image: Tensor, what: str) -> int:
    rank = image.shape.ndims
    if rank not in (3, 4):
        raise ValueError(f"tf.image.{what}: 'image' (shape {image.shape}) must have either 3 or 4 "
                         f"dimensions, [height, width, channels] or [batch, height, width, channels]")
    return rank


def _height_width(image: Tensor, what: str) -> tuple[int, int]:
    dims = image.shape.as_list()[-3:-1]
    if dims[0] is None or dims[1] is None:
        raise ValueError(f"tf.image.{what}: zmtf needs the image's height and width known at graph "
                         f"construction, got shape {image.shape}; set them with a placeholder shape "
                         f"or tf.reshape")
    return dims[0], dims[1]


def _dtype_limits(dtype: DType) -> tuple[Any, Any]:
    if dtype.is_integer:
        return int(np.iinfo(dtype.np).min), int(np.iinfo(dtype.np).max)
    return float(np.finfo(dtype.np).min), float(np.finfo(dtype.np).max)


# ---- flips, transposes, rotations ----------------------------------------------------------
def _flip(image: Any, axis_in_3d: int, what: str) -> Tensor:
    with _scope(None, what):
        image_t = convert_to_tensor(image, name="image")
        rank = _image_rank(image_t, what)
        return reverse(image_t, [axis_in_3d + rank - 3])


def flip_left_right(image: Any) -> Tensor:
    """Mirror the image horizontally (reverse the width axis)."""
    return _flip(image, 1, "flip_left_right")


def flip_up_down(image: Any) -> Tensor:
    """Mirror the image vertically (reverse the height axis)."""
    return _flip(image, 0, "flip_up_down")


def _random_flip(image: Any, axis_in_3d: int, seed: int | None, what: str) -> Tensor:
    """Flip each image with probability 1/2 (one draw per image of a batch), as TF1.15."""
    with _scope(None, what):
        image_t = convert_to_tensor(image, name="image")
        rank = _image_rank(image_t, what)
        flipped = reverse(image_t, [axis_in_3d + rank - 3])
        if rank == 3:
            draw_shape: Any = []
            flip_shape = [1, 1, 1]
        else:
            batch = image_t.shape.as_list()[0]
            draw_shape = [batch] if batch is not None else \
                selection_ops.getitem(array_ops.shape(image_t), slice(0, 1))
            flip_shape = [-1, 1, 1, 1]
        uniform = random_ops.random_uniform(draw_shape, 0, 1.0, seed=seed)
        flips = math_ops.cast(math_ops.round(array_ops.reshape(uniform, flip_shape)), image_t.dtype)
        keeps = math_ops.subtract(constant(1, dtype=image_t.dtype), flips)
        return math_ops.add(math_ops.multiply(flips, flipped), math_ops.multiply(keeps, image_t))


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """flip_left_right with probability 1/2, drawn per image."""
    return _random_flip(image, 1, seed, "random_flip_left_right")


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """flip_up_down with probability 1/2, drawn per image."""
    return _random_flip(image, 0, seed, "random_flip_up_down")


def _swap_height_width(rank: int) -> list[int]:
    return [1, 0, 2] if rank == 3 else [0, 2, 1, 3]


def transpose_image(image: Any) -> Tensor:
    """Swap the height and width axes."""
    with _scope(None, "transpose_image"):
        image_t = convert_to_tensor(image, name="image")
        return array_ops.transpose(image_t, _swap_height_width(_image_rank(image_t, "transpose_image")))


def _static_k(k: Any) -> int:
    if isinstance(k, Tensor):
        if k.op.type != "Const":
            raise TypeError(f"tf.image.rot90: zmtf needs k as a Python int or a constant, got the "
                            f"computed tensor {k.name}")
        k = np.asarray(k.op.get_attr("value"))
    return int(k) % 4


def rot90(image: Any, k: Any = 1, name: str | None = None) -> Tensor:
    """Rotate by 90 degrees counter-clockwise ``k`` times (a static int)."""
    with _scope(name, "rot90"):
        image_t = convert_to_tensor(image, name="image")
        rank = _image_rank(image_t, "rot90")
        turns = _static_k(k)
        height_axis, width_axis = rank - 3, rank - 2
        swap = _swap_height_width(rank)
        if turns == 0:
            return image_t
        if turns == 1:
            return array_ops.transpose(reverse(image_t, [width_axis]), swap)
        if turns == 2:
            return reverse(image_t, [height_axis, width_axis])
        return reverse(array_ops.transpose(image_t, swap), [width_axis])


# ---- dtype conversion, brightness, contrast, standardization -------------------------------
def _saturate_cast(x: Tensor, dtype: DType) -> Tensor:
    if x.dtype.is_integer or x.dtype.is_floating:
        low, high = _dtype_limits(dtype)
        in_low, in_high = _dtype_limits(x.dtype)
        if low > in_low:
            x = math_ops.maximum(x, constant(low, dtype=x.dtype))
        if high < in_high:
            x = math_ops.minimum(x, constant(high, dtype=x.dtype))
    return math_ops.cast(x, dtype)


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> Tensor:
    """Cast, rescaling: floats live in [0, 1), integers in [0, dtype.max] (TF's rules)."""
    target = as_dtype(dtype)
    if not (target.is_floating or target.is_integer):
        raise AttributeError("dtype must be either floating point or integer")
    with _scope(name, "convert_image"):
        image_t = convert_to_tensor(image, name="image")
        source = image_t.dtype
        if source == target:
            return array_ops.identity(image_t)
        if source.is_integer and target.is_integer:
            scale_in, scale_out = _dtype_limits(source)[1], _dtype_limits(target)[1]
            if scale_in > scale_out:
                scale = (scale_in + 1) // (scale_out + 1)
                scaled = math_ops.floordiv(image_t, constant(scale, dtype=source))
                return _saturate_cast(scaled, target) if saturate else math_ops.cast(scaled, target)
            cast = _saturate_cast(image_t, target) if saturate else math_ops.cast(image_t, target)
            return math_ops.multiply(cast, constant((scale_out + 1) // (scale_in + 1), dtype=target))
        if source.is_floating and target.is_floating:
            return math_ops.cast(image_t, target)
        if source.is_integer:
            return math_ops.multiply(math_ops.cast(image_t, target), 1.0 / _dtype_limits(source)[1])
        scaled = math_ops.multiply(image_t, _dtype_limits(target)[1] + 0.5)  # +0.5: cast truncates
        return _saturate_cast(scaled, target) if saturate else math_ops.cast(scaled, target)


def _as_float(image: Tensor) -> Tensor:
    """float16/float32 images as they are, others through convert_image_dtype (TF's rule)."""
    if image.dtype in (dtypes.float16, dtypes.float32):
        return image
    return convert_image_dtype(image, dtypes.float32)


def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """``image + delta`` in float, converted back to the image's dtype (saturating)."""
    with _scope(None, "adjust_brightness"):
        image_t = convert_to_tensor(image, name="image")
        float_image = _as_float(image_t)
        adjusted = math_ops.add(float_image, math_ops.cast(delta, float_image.dtype))
        return convert_image_dtype(adjusted, image_t.dtype, saturate=True)


def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """``(x - mean) * contrast_factor + mean``, the mean per image and channel over height and
    width (TF's AdjustContrastv2); back to the image's dtype, saturating."""
    with _scope(None, "adjust_contrast"):
        image_t = convert_to_tensor(images, name="images")
        if image_t.shape.ndims is not None and image_t.shape.ndims < 3:
            raise ValueError(f"tf.image.adjust_contrast: images must be at least 3-D, got shape "
                             f"{image_t.shape}")
        float_image = _as_float(image_t)
        mean = math_ops.reduce_mean(float_image, axis=[-3, -2], keepdims=True)
        factor = math_ops.cast(contrast_factor, float_image.dtype)
        adjusted = math_ops.add(math_ops.multiply(math_ops.subtract(float_image, mean), factor), mean)
        return convert_image_dtype(adjusted, image_t.dtype, saturate=True)


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_brightness by a delta drawn from [-max_delta, max_delta) each run."""
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    delta = random_ops.random_uniform([], -max_delta, max_delta, seed=seed)
    return adjust_brightness(image, delta)


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_contrast by a factor drawn from [lower, upper) each run."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    factor = random_ops.random_uniform([], lower, upper, seed=seed)
    return adjust_contrast(image, factor)


def per_image_standardization(image: Any) -> Tensor:
    """float32 ``(x - mean) / max(stddev, 1 / sqrt(num_elements))`` over each image's
    height, width and channels."""
    with _scope(None, "per_image_standardization"):
        image_t = convert_to_tensor(image, name="image")
        if image_t.shape.ndims is None or image_t.shape.ndims < 3:
            raise ValueError(f"tf.image.per_image_standardization: 'image' (shape {image_t.shape}) "
                             f"must be at least three-dimensional.")
        x = math_ops.cast(image_t, dtypes.float32)
        axes = [-1, -2, -3]
        dims = image_t.shape.as_list()[-3:]
        if None not in dims:
            num_elements: Any = float(np.prod(dims))
            min_stddev: Any = 1.0 / np.sqrt(num_elements)
        else:
            pixel_dims = selection_ops.getitem(array_ops.shape(image_t), slice(-3, None))
            num_elements = math_ops.cast(math_ops.reduce_prod(pixel_dims), dtypes.float32)
            min_stddev = math_ops.rsqrt(num_elements)
        mean = math_ops.reduce_mean(x, axis=axes, keepdims=True)
        centered = math_ops.subtract(x, mean)
        stddev = math_ops.sqrt(math_ops.reduce_mean(math_ops.square(centered), axis=axes,
                                                    keepdims=True))
        return math_ops.divide(centered, math_ops.maximum(stddev, min_stddev))


# ---- crops and pads ------------------------------------------------------------------------
def _batched(image: Any, what: str) -> tuple[Tensor, bool]:
    """The image as 4-D, and whether it came in 4-D."""
    image_t = convert_to_tensor(image, name="image")
    if _image_rank(image_t, what) == 4:
        return image_t, True
    return array_ops.expand_dims(image_t, 0), False


def _unbatched(images: Tensor, is_batch: bool) -> Tensor:
    return images if is_batch else array_ops.squeeze(images, axis=[0])


def _static_int(value: Any, what: str, arg: str) -> int:
    if isinstance(value, Tensor):
        if value.op.type == "Const":
            return int(np.asarray(value.op.get_attr("value")))
        raise TypeError(f"tf.image.{what}: zmtf needs {arg} as a Python int or a constant, got the "
                        f"computed tensor {value.name}")
    return int(value)


def crop_to_bounding_box(image: Any, offset_height: Any, offset_width: Any, target_height: Any,
                         target_width: Any) -> Tensor:
    """``image[offset_height : offset_height + target_height, offset_width : ... ]``."""
    what = "crop_to_bounding_box"
    with _scope(None, what):
        images, is_batch = _batched(image, what)
        oh, ow, th, tw = (_static_int(v, what, a) for v, a in [
            (offset_height, "offset_height"), (offset_width, "offset_width"),
            (target_height, "target_height"), (target_width, "target_width")])
        height, width = images.shape.as_list()[1:3]
        checks = [(oh >= 0, "offset_height must be >= 0."), (ow >= 0, "offset_width must be >= 0."),
                  (th > 0, "target_height must be > 0."), (tw > 0, "target_width must be > 0."),
                  (width is None or width >= tw + ow, "width must be >= target + offset."),
                  (height is None or height >= th + oh, "height must be >= target + offset.")]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"tf.image.{what}: {message} (image shape {images.shape}, offsets "
                                 f"[{oh}, {ow}], target [{th}, {tw}])")
        cropped = selection_ops.slice(images, [0, oh, ow, 0], [-1, th, tw, -1])
        return _unbatched(cropped, is_batch)


def pad_to_bounding_box(image: Any, offset_height: Any, offset_width: Any, target_height: Any,
                        target_width: Any) -> Tensor:
    """Zero-pad to [target_height, target_width], the image's top-left at the offsets."""
    what = "pad_to_bounding_box"
    with _scope(None, what):
        images, is_batch = _batched(image, what)
        oh, ow, th, tw = (_static_int(v, what, a) for v, a in [
            (offset_height, "offset_height"), (offset_width, "offset_width"),
            (target_height, "target_height"), (target_width, "target_width")])
        height, width = _height_width(images, what)
        after_h, after_w = th - oh - height, tw - ow - width
        checks = [(oh >= 0, "offset_height must be >= 0"), (ow >= 0, "offset_width must be >= 0"),
                  (after_w >= 0, "width must be <= target - offset"),
                  (after_h >= 0, "height must be <= target - offset")]
        for ok, message in checks:
            if not ok:
                raise ValueError(f"tf.image.{what}: {message} (image shape {images.shape}, offsets "
                                 f"[{oh}, {ow}], target [{th}, {tw}])")
        padded = selection_ops.pad(images, [[0, 0], [oh, after_h], [ow, after_w], [0, 0]])
        return _unbatched(padded, is_batch)


def resize_image_with_crop_or_pad(image: Any, target_height: Any, target_width: Any) -> Tensor:
    """Centrally crop and/or zero-pad to [target_height, target_width]."""
    what = "resize_image_with_crop_or_pad"
    with _scope(None, what):
        image_t = convert_to_tensor(image, name="image")
        _image_rank(image_t, what)
        th = _static_int(target_height, what, "target_height")
        tw = _static_int(target_width, what, "target_width")
        if th <= 0 or tw <= 0:
            raise ValueError(f"tf.image.{what}: target_height and target_width must be > 0, got "
                             f"[{th}, {tw}]")
        height, width = _height_width(image_t, what)
        width_diff, height_diff = tw - width, th - height
        cropped = crop_to_bounding_box(image_t, max(-height_diff // 2, 0), max(-width_diff // 2, 0),
                                       min(th, height), min(tw, width))
        return pad_to_bounding_box(cropped, max(height_diff // 2, 0), max(width_diff // 2, 0), th, tw)


def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The central ``central_fraction`` of the height and width (TF's offset rounding)."""
    if central_fraction <= 0.0 or central_fraction > 1.0:
        raise ValueError("central_fraction must be within (0, 1]")
    with _scope(None, "central_crop"):
        image_t = convert_to_tensor(image, name="image")
        _image_rank(image_t, "central_crop")
        if central_fraction == 1.0:
            return image_t
        height, width = _height_width(image_t, "central_crop")
        start_h = int((float(height) - float(height) * central_fraction) / 2)
        start_w = int((float(width) - float(width) * central_fraction) / 2)
        return crop_to_bounding_box(image_t, start_h, start_w, height - 2 * start_h,
                                    width - 2 * start_w)


# ---- resize_images -------------------------------------------------------------------------
def _preserved_aspect_size(height: int, width: int, new_size: list[int]) -> list[int]:
    scale = min(np.float32(new_size[0]) / np.float32(height), np.float32(new_size[1]) / np.float32(width))
    return [int(np.round(scale * np.float32(height))), int(np.round(scale * np.float32(width)))]


def resize_images(images: Any, size: Any, method: int = ResizeMethod.BILINEAR,
                  align_corners: bool = False, preserve_aspect_ratio: bool = False,
                  name: str | None = None) -> Tensor:
    """Resize 3-D or 4-D ``images`` to ``size`` = [new_height, new_width] with TF1's legacy
    mapping; NEAREST_NEIGHBOR keeps the dtype, the other methods give float32. An unchanged static
    size returns the images as they are (TF1 skips the resize then, dtype included)."""
    with _scope(name, "resize_images"):
        batch, is_batch = _batched(images, "resize_images")
        size_t = convert_to_tensor(size, dtype=dtypes.int32, name="size")
        if not size_t.shape.is_compatible_with([2]):
            raise ValueError("'size' must be a 1-D Tensor of 2 elements: new_height, new_width")
        height, width = batch.shape.as_list()[1:3]
        new_size = _shape_value(size_t) if size_t.op.type == "Const" else None
        if preserve_aspect_ratio:
            if new_size is None or height is None or width is None:
                raise ValueError("tf.image.resize_images: preserve_aspect_ratio needs a constant "
                                 "size and a static height and width in zmtf")
            new_size = _preserved_aspect_size(height, width, new_size)
            size_t = constant(np.asarray(new_size, np.int32), name="size")
        if new_size is not None and [height, width] == new_size:
            return _unbatched(batch, is_batch)
        if method == ResizeMethod.BILINEAR:
            resized = resize_bilinear(batch, size_t, align_corners=align_corners)
        elif method == ResizeMethod.NEAREST_NEIGHBOR:
            resized = resize_nearest_neighbor(batch, size_t, align_corners=align_corners)
        elif method == ResizeMethod.BICUBIC:
            resized = resize_bicubic(batch, size_t, align_corners=align_corners)
        elif method == ResizeMethod.AREA:
            resized = resize_area(batch, size_t, align_corners=align_corners)
        else:
            raise ValueError("Resize method is not implemented.")
        return _unbatched(resized, is_batch)

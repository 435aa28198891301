"""tf.image's color functions: grayscale, HSV (the RGBToHSV / HSVToRGB ops), YIQ and YUV
(3x3 matrices over the channel axis), and the hue, saturation and gamma adjustments with
their random variants.

AdjustHue and AdjustSaturation are ops of their own, as in TF (neither has a gradient in
TF); the integer-image functions convert to float32 and back, saturating, as TF's do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops, math_ops, random_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.image_functions import _as_float, convert_image_dtype
from zmtf.ops.linalg_ops import tensordot
from zmtf.ops.selection_ops import tile

not_differentiable("HSVToRGB")   # as TF; RGBToHSV's gradient is not built (LookupError)

#: TF's ITU-R 601 luma weights for rgb_to_grayscale
_GRAY_WEIGHTS = [0.2989, 0.5870, 0.1140]
_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _three_channels(image: Tensor, op_type: str) -> None:
    if image.shape.ndims is not None:
        if image.shape.ndims < 1 or image.shape.as_list()[-1] not in (None, 3):
            raise ValueError(f"{op_type}: the last dimension of {image.name} (shape "
                             f"{image.shape}) must be 3 (red, green, blue)")


@op_def("RGBToHSV", "HSVToRGB")
def _hsv_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    image = inputs[0]
    if not image.dtype.is_floating:
        raise TypeError(f"Value passed to parameter 'images' has DataType {image.dtype.name} not "
                        f"in list of allowed values: float16, bfloat16, float32, float64")
    _three_channels(image, "RGBToHSV / HSVToRGB")
    return [(image.dtype, image.shape)]


@op_def("AdjustHue", "AdjustSaturation")
def _adjust_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    image, amount = inputs
    if image.dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"AdjustHue / AdjustSaturation: images must be float16 or float32, got "
                        f"{image.dtype.name}")
    if amount.shape.ndims not in (None, 0):
        raise ValueError(f"delta / scale must be a scalar, got shape {amount.shape}")
    _three_channels(image, "AdjustHue / AdjustSaturation")
    return [(image.dtype, image.shape)]


def rgb_to_hsv(images: Any, name: str | None = None) -> Tensor:
    """RGB in [0, 1] to hue, saturation, value in [0, 1] (last axis of 3)."""
    return apply_op("RGBToHSV", [convert_to_tensor(images, name="images")],
                    name=name or "RGBToHSV").outputs[0]


def hsv_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """The inverse of rgb_to_hsv."""
    return apply_op("HSVToRGB", [convert_to_tensor(images, name="images")],
                    name=name or "HSVToRGB").outputs[0]


def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """The luma of each pixel (TF's weights), keeping a last axis of 1 and the dtype."""
    with get_default_graph().name_scope(name or "rgb_to_grayscale") as scope:
        images_t = convert_to_tensor(images, name="images")
        as_float = convert_image_dtype(images_t, dtypes.float32)
        gray = tensordot(as_float, convert_to_tensor(np.asarray(_GRAY_WEIGHTS, np.float32)),
                         [[-1 % max(as_float.shape.ndims or 1, 1)], [0]])
        gray = array_ops.expand_dims(gray, -1)
        return convert_image_dtype(gray, images_t.dtype, name=scope)


def grayscale_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """The single channel repeated three times."""
    with get_default_graph().name_scope(name or "grayscale_to_rgb"):
        images_t = convert_to_tensor(images, name="images")
        rank = images_t.shape.ndims
        if rank is None or rank < 2 or images_t.shape.as_list()[-1] not in (None, 1):
            raise ValueError(f"A grayscale image (shape {images_t.shape}) must be at least "
                             f"two-dimensional with a last dimension of size 1")
        return tile(images_t, [1] * (rank - 1) + [3])


def _color_matrix(images: Any, matrix: list, what: str) -> Tensor:
    images_t = convert_to_tensor(images, name="images")
    _three_channels(images_t, what)
    rank = images_t.shape.ndims
    if rank is None:
        raise ValueError(f"tf.image.{what}: zmtf needs the images' rank known at graph "
                         f"construction")
    kernel = convert_to_tensor(np.asarray(matrix, images_t.dtype.np), name="kernel")
    return tensordot(images_t, kernel, [[rank - 1], [0]])


def rgb_to_yiq(images: Any) -> Tensor:
    """RGB in [0, 1] to YIQ (float images)."""
    return _color_matrix(images, _RGB_TO_YIQ, "rgb_to_yiq")


def yiq_to_rgb(images: Any) -> Tensor:
    """YIQ to RGB (float images)."""
    return _color_matrix(images, _YIQ_TO_RGB, "yiq_to_rgb")


def rgb_to_yuv(images: Any) -> Tensor:
    """RGB in [0, 1] to YUV (float images)."""
    return _color_matrix(images, _RGB_TO_YUV, "rgb_to_yuv")


def yuv_to_rgb(images: Any) -> Tensor:
    """YUV to RGB (float images)."""
    return _color_matrix(images, _YUV_TO_RGB, "yuv_to_rgb")


def _adjust(op_type: str, image: Any, amount: Any, name: str | None, default: str) -> Tensor:
    with get_default_graph().name_scope(name or default) as scope:
        image_t = convert_to_tensor(image, name="image")
        as_float = _as_float(image_t)
        amount_t = convert_to_tensor(amount, dtype=dtypes.float32)
        adjusted = apply_op(op_type, [as_float, amount_t], name=op_type).outputs[0]
        if image_t.dtype == as_float.dtype:
            return adjusted
        return convert_image_dtype(adjusted, image_t.dtype, saturate=True, name=scope)


def adjust_hue(image: Any, delta: Any, name: str | None = None) -> Tensor:
    """Rotate the hue by ``delta`` (a fraction of the color wheel, in [-1, 1])."""
    return _adjust("AdjustHue", image, delta, name, "adjust_hue")


def adjust_saturation(image: Any, saturation_factor: Any, name: str | None = None) -> Tensor:
    """Scale the saturation by ``saturation_factor``, clipped to [0, 1]."""
    return _adjust("AdjustSaturation", image, saturation_factor, name, "adjust_saturation")


def adjust_gamma(image: Any, gamma: Any = 1, gain: Any = 1) -> Tensor:
    """``gain * image ** gamma`` on the image as float in [0, 1], back to its dtype."""
    if isinstance(gamma, (int, float)) and gamma < 0:
        raise ValueError("Gamma should be a non-negative real number.")
    with get_default_graph().name_scope("adjust_gamma") as scope:
        image_t = convert_to_tensor(image, name="image")
        as_float = _as_float(image_t)
        gamma_t = convert_to_tensor(gamma, dtype=as_float.dtype)
        adjusted = math_ops.multiply(convert_to_tensor(gain, dtype=as_float.dtype),
                                     math_ops.pow(as_float, gamma_t))
        return convert_image_dtype(adjusted, image_t.dtype, saturate=True, name=scope)


def random_hue(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_hue by a delta drawn from [-max_delta, max_delta) each run."""
    if max_delta > 0.5:
        raise ValueError("max_delta must be <= 0.5.")
    if max_delta < 0:
        raise ValueError("max_delta must be non-negative.")
    return adjust_hue(image, random_ops.random_uniform([], -max_delta, max_delta, seed=seed))


def random_saturation(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_saturation by a factor drawn from [lower, upper) each run."""
    if upper <= lower:
        raise ValueError("upper must be > lower.")
    if lower < 0:
        raise ValueError("lower must be non-negative.")
    return adjust_saturation(image, random_ops.random_uniform([], lower, upper, seed=seed))

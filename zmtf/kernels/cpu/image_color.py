"""RGBToHSV, HSVToRGB, AdjustHue and AdjustSaturation on CPU (numpy, TF's formulas: hue in
[0, 1), the sector chosen by which channel is the maximum)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import FLOATS, quiet_fp, shape_str
from zmtf.kernels.registry import register


def _rgb(images: np.ndarray, op: str, node: str) -> np.ndarray:
    if images.ndim < 1 or images.shape[-1] != 3:
        raise InvalidArgumentError(f"{op} (node '{node}'): input must have 3 channels but input "
                                   f"only has {images.shape[-1] if images.ndim else 0} channels "
                                   f"(shape {shape_str(images.shape)})")
    return images


def to_hsv(rgb: np.ndarray) -> np.ndarray:
    """[..., 3] RGB -> HSV, as TF's RGBToHSV."""
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    value = rgb.max(axis=-1)
    spread = value - rgb.min(axis=-1)
    with quiet_fp():
        saturation = np.where(value > 0, spread / value, 0)
        norm = 1 / (6 * spread)
        hue = np.where(r == value, norm * (g - b),
                       np.where(g == value, norm * (b - r) + 2 / 6, norm * (r - g) + 4 / 6))
    hue = np.where(spread > 0, hue, 0)
    hue = np.where(hue < 0, hue + 1, hue)
    return np.stack([hue, saturation, value], axis=-1).astype(rgb.dtype)


def to_rgb(hsv: np.ndarray) -> np.ndarray:
    """[..., 3] HSV -> RGB, as TF's HSVToRGB."""
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    dh = h * 6
    red = np.clip(np.abs(dh - 3) - 1, 0, 1)
    green = np.clip(2 - np.abs(dh - 2), 0, 1)
    blue = np.clip(2 - np.abs(dh - 4), 0, 1)
    rest = 1 - s
    return np.stack([(rest + s * c) * v for c in (red, green, blue)], axis=-1).astype(hsv.dtype)


@register("RGBToHSV", dtypes=FLOATS)
def rgb_to_hsv(ctx: Any, inputs: list, attrs: dict) -> list:
    return [to_hsv(_rgb(inputs[0], "RGBToHSV", attrs["_node_name"]))]


@register("HSVToRGB", dtypes=FLOATS)
def hsv_to_rgb(ctx: Any, inputs: list, attrs: dict) -> list:
    return [to_rgb(_rgb(inputs[0], "HSVToRGB", attrs["_node_name"]))]


def _scalar(value: np.ndarray, what: str, op: str, node: str) -> np.float32:
    if np.ndim(value) != 0:
        raise InvalidArgumentError(f"{op} (node '{node}'): {what} must be scalar: "
                                   f"{shape_str(np.shape(value))}")
    return np.float32(value)


@register("AdjustHue", dtypes=("float16", "float32"))
def adjust_hue(ctx: Any, inputs: list, attrs: dict) -> list:
    images, delta = inputs
    node = attrs["_node_name"]
    rgb = _rgb(images, "AdjustHue", node).astype(np.float32)
    hsv = to_hsv(rgb)
    hue = np.fmod(hsv[..., 0] + _scalar(delta, "delta", "AdjustHue", node), np.float32(1))
    hsv[..., 0] = np.where(hue < 0, hue + 1, hue)
    return [to_rgb(hsv).astype(images.dtype)]


@register("AdjustSaturation", dtypes=("float16", "float32"))
def adjust_saturation(ctx: Any, inputs: list, attrs: dict) -> list:
    images, scale = inputs
    node = attrs["_node_name"]
    hsv = to_hsv(_rgb(images, "AdjustSaturation", node).astype(np.float32))
    factor = _scalar(scale, "scale", "AdjustSaturation", node)
    hsv[..., 1] = np.clip(hsv[..., 1] * factor, 0, 1)
    return [to_rgb(hsv).astype(images.dtype)]

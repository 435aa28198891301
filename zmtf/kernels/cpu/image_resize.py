"""ResizeBicubic, ResizeBicubicGrad and ResizeArea on CPU.

Both resizes are separable: one [out, in] weight matrix per spatial axis, built with TF's
rules, applied to rows then columns (and transposed for the gradient, as the bilinear one
in image.py). Bicubic weights come from TF's 1025-entry coefficient table (the fraction is
rounded to 1/1024, as TF's kernel does); with half-pixel centers, taps outside the image
get weight 0 and the rest are renormalized, otherwise edge pixels are repeated. Area
weights are the overlap of each output cell with each input pixel over the cell's area.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.kernels.cpu.common import FLOATS, NUMERIC
from zmtf.kernels.cpu.image import _checked_size, _scale, separable_resize_grad
from zmtf.kernels.registry import register

_TABLE_SIZE = 1024


def _coefficients(a: float) -> np.ndarray:
    """TF's [1025, 2] table: the Keys cubic at x and at x + 1, x = i / 1024."""
    x = np.arange(_TABLE_SIZE + 1, dtype=np.float32) / np.float32(_TABLE_SIZE)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far_x = x + 1
    far = ((a * far_x - 5 * a) * far_x + 8 * a) * far_x - 4 * a
    return np.stack([near, far], axis=1).astype(np.float32)


def bicubic_matrix(in_size: int, out_size: int, attrs: dict) -> np.ndarray:
    """[out_size, in_size] bicubic weights along one axis."""
    half_pixel = bool(attrs.get("half_pixel_centers", False))
    table = _coefficients(-0.5 if half_pixel else -0.75)
    scale = _scale(in_size, out_size, bool(attrs.get("align_corners", False)))
    i = np.arange(out_size, dtype=np.float32)
    coords = (i + np.float32(0.5)) * scale - np.float32(0.5) if half_pixel else i * scale
    base = np.floor(coords)
    offset = np.rint((coords - base) * _TABLE_SIZE).astype(np.int64)
    weights = np.stack([table[offset, 1], table[offset, 0], table[_TABLE_SIZE - offset, 0],
                        table[_TABLE_SIZE - offset, 1]], axis=1).astype(np.float64)
    taps = base.astype(np.int64)[:, None] + np.arange(-1, 3)[None, :]
    clamped = np.clip(taps, 0, in_size - 1)
    if half_pixel:
        weights = np.where(clamped == taps, weights, 0.0)
        sums = weights.sum(axis=1, keepdims=True)
        weights = np.where(np.abs(sums) > 0, weights / np.where(sums == 0, 1, sums), weights)
    matrix = np.zeros((out_size, in_size))
    np.add.at(matrix, (np.repeat(np.arange(out_size), 4), clamped.reshape(-1)),
              weights.reshape(-1))
    return matrix


def area_matrix(in_size: int, out_size: int, align_corners: bool) -> np.ndarray:
    """[out_size, in_size]: the share of each input pixel in each output cell."""
    scale = float(_scale(in_size, out_size, align_corners))
    matrix = np.zeros((out_size, in_size))
    for out in range(out_size):
        start, end = out * scale, (out + 1) * scale
        for pixel in range(int(np.floor(start)), int(np.ceil(end))):
            if pixel < start:
                overlap = scale if pixel + 1 > end else pixel + 1 - start
            else:
                overlap = end - pixel if pixel + 1 > end else 1.0
            matrix[out, min(max(pixel, 0), in_size - 1)] += overlap / scale
    return matrix


def _resized(images: np.ndarray, size: np.ndarray, op: str, attrs: dict,
             matrix: Callable) -> list:
    """images [b, h, w, c] -> float32 [b, *size, c] through one weight matrix per axis."""
    out_h, out_w = _checked_size(images, size, op, attrs["_node_name"])
    rows = matrix(images.shape[1], out_h, attrs)
    cols = matrix(images.shape[2], out_w, attrs)
    out = np.einsum("yh,bhwc,xw->byxc", rows, images.astype(np.float64, copy=False), cols,
                    optimize=True)
    return [out.astype(np.float32)]


def _area(in_size: int, out_size: int, attrs: dict) -> np.ndarray:
    return area_matrix(in_size, out_size, bool(attrs.get("align_corners", False)))


@register("ResizeBicubic", dtypes=NUMERIC)
def resize_bicubic(ctx: Any, inputs: list, attrs: dict) -> list:
    return _resized(inputs[0], inputs[1], "ResizeBicubic", attrs, bicubic_matrix)


@register("ResizeArea", dtypes=NUMERIC)
def resize_area(ctx: Any, inputs: list, attrs: dict) -> list:
    return _resized(inputs[0], inputs[1], "ResizeArea", attrs, _area)


@register("ResizeBicubicGrad", dtypes=FLOATS)
def resize_bicubic_grad(ctx: Any, inputs: list, attrs: dict) -> list:
    return separable_resize_grad("ResizeBicubicGrad", inputs, attrs, bicubic_matrix)

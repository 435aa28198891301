"""Summary kernels: each returns a serialized ``Summary`` protobuf as a 1-D uint8 array (zmtf
has no string tensors); merging concatenates them, which protobuf reads as one Summary with
every value. Histograms and images follow TF's kernels (histogram.cc, summary_image_op.cc)."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.formats.images import encode_png
from zmtf.formats.summary_proto import (histogram_summary, image_summary, scalar_summary,
                                          text_summary)
from zmtf.kernels.registry import register


def _as_output(encoded: bytes) -> list:
    return [np.frombuffer(encoded, np.uint8).copy()]


@register("ScalarSummary")
def scalar(ctx: Any, inputs: list, attrs: dict) -> list:
    value = np.asarray(inputs[0])
    if value.size != 1:
        raise InvalidArgumentError(f"tf.summary.scalar '{attrs['tag']}' needs a scalar, got shape "
                                   f"{list(value.shape)} (node '{attrs['_node_name']}')")
    return _as_output(scalar_summary(attrs["tag"], float(value.reshape(()))))


def _default_bucket_limits() -> np.ndarray:
    """TF's default histogram limits: -DBL_MAX, negatives, 0, positives from 1e-12 growing by
    10% while below 1e20, DBL_MAX. Bucket i counts the values in [limit[i-1], limit[i])."""
    positive, limit = [], 1.0e-12
    while limit < 1.0e20:
        positive.append(limit)
        limit *= 1.1
    positive.append(sys.float_info.max)
    return np.array([-x for x in reversed(positive)] + [0.0] + positive)


_BUCKET_LIMITS = _default_bucket_limits()   # read-only after import


@register("HistogramSummary")
def histogram(ctx: Any, inputs: list, attrs: dict) -> list:
    values = np.asarray(inputs[0]).astype(np.float64).reshape(-1)
    bad = values[~np.isfinite(values)]
    if bad.size:
        kind = "Nan" if np.isnan(bad[0]) else "Infinity"
        raise InvalidArgumentError(f"{kind} in summary histogram for: {attrs['_node_name']}")
    # upper_bound as TF's Histogram::Add; DBL_MAX itself goes in the last bucket
    index = np.minimum(np.searchsorted(_BUCKET_LIMITS, values, side="right"), _BUCKET_LIMITS.size - 1)
    counts = np.bincount(index, minlength=_BUCKET_LIMITS.size).astype(np.float64)
    # as TF's EncodeToProto: a run of empty buckets becomes one, at the run's last limit
    run_end = np.append(counts[1:] > 0, True)
    keep = (counts > 0) | run_end
    return _as_output(histogram_summary(
        attrs["tag"],
        values.min() if values.size else sys.float_info.max,   # TF's Clear() values when empty
        values.max() if values.size else -sys.float_info.max,
        float(values.size),
        np.cumsum(values)[-1] if values.size else 0.0,          # summed in order, as TF does
        np.cumsum(values * values)[-1] if values.size else 0.0,
        _BUCKET_LIMITS[keep].tolist(), counts[keep].tolist()))


_BAD_COLOR = np.array([255, 0, 0, 255], np.uint8)   # TF's default bad_color: opaque red


def _normalize_float_image(image: np.ndarray) -> np.ndarray:
    """TF's NormalizeFloatImage: with no negative value, scale so the max is 255; otherwise
    scale by 127 / max |value| and add 128. Arithmetic in the image's dtype, truncated to
    uint8; a pixel with any non-finite channel becomes ``_BAD_COLOR``."""
    dtype = image.dtype.type
    finite = np.isfinite(image).all(axis=-1)
    good = image[finite].astype(np.float32)
    low = good.min() if good.size else np.float32(np.inf)
    high = good.max() if good.size else np.float32(-np.inf)
    zero = np.float32(1e-6)
    if low < 0:
        max_abs = max(abs(low), abs(high))
        scale, offset = (np.float32(0) if max_abs < zero else np.float32(127) / max_abs), 128
    else:
        scale, offset = (np.float32(0) if high < zero else np.float32(255) / high), 0
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = image * dtype(scale) + dtype(offset)
        pixels = np.clip(np.where(finite[..., None], scaled, 0), 0, 255).astype(np.uint8)
    pixels[~finite] = _BAD_COLOR[:image.shape[-1]]
    return pixels


@register("ImageSummary")
def image(ctx: Any, inputs: list, attrs: dict) -> list:
    tensor, tag, max_images = np.asarray(inputs[0]), attrs["tag"], attrs["max_images"]
    where = f"tf.summary.image '{tag}' (node '{attrs['_node_name']}')"
    if tensor.ndim != 4 or tensor.shape[3] not in (1, 3, 4):
        raise InvalidArgumentError(f"{where}: tensor must be 4-D with last dim 1, 3, or 4, not "
                                   f"{list(tensor.shape)}")
    batch, height, width, depth = tensor.shape
    if tensor.dtype != np.uint8 and tensor.dtype.kind != "f":
        raise InvalidArgumentError(f"{where}: images are uint8, float16, float32 or float64, "
                                   f"not {tensor.dtype}")
    if batch and not height * width:
        raise InvalidArgumentError(f"{where}: a {height}x{width} image has no pixels to encode")
    encoded = []
    for i in range(min(max_images, batch)):
        # the tag depends on the number of images asked for, not on the number written
        value_tag = f"{tag}/image/{i}" if max_images > 1 else f"{tag}/image"
        pixels = tensor[i] if tensor.dtype == np.uint8 else _normalize_float_image(tensor[i])
        encoded.append(image_summary(value_tag, height, width, depth, encode_png(pixels)))
    return _as_output(b"".join(encoded))


@register("TextSummary")
def text(ctx: Any, inputs: list, attrs: dict) -> list:
    strings = [s.encode() for s in attrs["strings"]]
    return _as_output(text_summary(attrs["tag"], strings, attrs["shape"]))


@register("MergeSummary")
def merge(ctx: Any, inputs: list, attrs: dict) -> list:
    return [np.concatenate([np.asarray(x, np.uint8).reshape(-1) for x in inputs])]

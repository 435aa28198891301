"""Bounding-box kernels on CPU: CropAndResize and its two gradients, the non-max
suppressions, DrawBoundingBoxes(V2) and SampleDistortedBoundingBoxV2, following TF's
kernels rule for rule (coordinates in float32, C++ truncations and roundings kept)."""

from __future__ import annotations

import heapq
from typing import Any, Callable

import numpy as np

from zmtf.framework.errors import InvalidArgumentError, OutOfRangeError
from zmtf.kernels.cpu.common import FLOATS, NUMERIC, check_output_size, dtype_attr, int_list, shape_str
from zmtf.kernels.registry import register

_F = np.float32


# ---- CropAndResize ---------------------------------------------------------------------------
def _check_crop_args(image_shape: tuple, boxes: np.ndarray, box_ind: np.ndarray,
                     node: str) -> None:
    if len(image_shape) != 4:
        raise InvalidArgumentError(f"input image must be 4-D, got shape {shape_str(image_shape)} "
                                   f"(node '{node}')")
    if boxes.ndim != 2 or boxes.shape[1] != 4 or box_ind.shape != (boxes.shape[0],):
        raise InvalidArgumentError(f"boxes must be [num_boxes, 4] and box_index [num_boxes], got "
                                   f"{shape_str(boxes.shape)} and {shape_str(box_ind.shape)} "
                                   f"(node '{node}')")
    if box_ind.size and (box_ind.min() < 0 or box_ind.max() >= image_shape[0]):
        raise OutOfRangeError(f"box_index has values outside [0, batch_size = "
                                   f"{image_shape[0]}) (node '{node}')")


def _axis_coords(start: float, end: float, in_size: int, out_size: int) -> np.ndarray:
    """float32 source coordinate of each crop row (or column), as TF computes it."""
    start, end = _F(start), _F(end)
    if out_size > 1:
        scale = (end - start) * _F(in_size - 1) / _F(out_size - 1)
        return start * _F(in_size - 1) + np.arange(out_size, dtype=_F) * scale
    return np.full(1, _F(0.5) * (start + end) * _F(in_size - 1), _F)


def _crop_geometry(box: np.ndarray, height: int, width: int, size: tuple) -> tuple:
    """(ys, xs, inside_y, inside_x): source coordinates and which lie in the image."""
    ys = _axis_coords(box[0], box[2], height, size[0])
    xs = _axis_coords(box[1], box[3], width, size[1])
    return ys, xs, (ys >= 0) & (ys <= height - 1), (xs >= 0) & (xs <= width - 1)


def _lerp_parts(coords: np.ndarray, limit: int) -> tuple:
    low = np.clip(np.floor(coords), 0, limit - 1).astype(np.intp)
    high = np.clip(np.ceil(coords), 0, limit - 1).astype(np.intp)
    return low, high, (coords - np.floor(coords)).astype(_F)


def _nearest(coords: np.ndarray, limit: int) -> np.ndarray:
    """roundf (halves away from zero) of in-range coordinates, clamped for the ones outside."""
    return np.clip(np.floor(coords + _F(0.5)), 0, limit - 1).astype(np.intp)


def _crop_size(value: np.ndarray, node: str) -> tuple[int, int]:
    size = int_list(value, "crop_size", node)
    if len(size) != 2 or size[0] <= 0 or size[1] <= 0:
        raise InvalidArgumentError(f"crop dimensions must be positive, got {size} (node '{node}')")
    return size[0], size[1]


@register("CropAndResize", dtypes=NUMERIC)
def crop_and_resize(ctx: Any, inputs: list, attrs: dict) -> list:
    image, boxes, box_ind, crop_size = inputs
    node = attrs["_node_name"]
    _check_crop_args(image.shape, boxes, box_ind, node)
    size = _crop_size(crop_size, node)
    _, height, width, depth = image.shape
    fill = _F(attrs.get("extrapolation_value", 0.0))
    check_output_size((boxes.shape[0], *size, depth), _F, node)
    out = np.empty((boxes.shape[0], *size, depth), _F)
    for n, (box, b) in enumerate(zip(boxes, box_ind)):
        ys, xs, in_y, in_x = _crop_geometry(box, height, width, size)
        picture = image[b].astype(_F)
        if attrs.get("method", "bilinear") == "nearest":
            rows, cols = _nearest(ys, height), _nearest(xs, width)
            crop = picture[rows][:, cols]
        else:
            top, bottom, y_lerp = _lerp_parts(ys, height)
            left, right, x_lerp = _lerp_parts(xs, width)
            x_lerp = x_lerp[None, :, None]
            upper = picture[top][:, left] + (picture[top][:, right] - picture[top][:, left]) * x_lerp
            lower = (picture[bottom][:, left] +
                     (picture[bottom][:, right] - picture[bottom][:, left]) * x_lerp)
            crop = upper + (lower - upper) * y_lerp[:, None, None]
        out[n] = np.where((in_y[:, None] & in_x[None, :])[:, :, None], crop, fill)
    return [out]


@register("CropAndResizeGradImage", dtypes=FLOATS)
def crop_and_resize_grad_image(ctx: Any, inputs: list, attrs: dict) -> list:
    grads, boxes, box_ind, image_size = inputs
    node = attrs["_node_name"]
    shape = tuple(int_list(image_size, "image_size", node))
    _check_crop_args(shape, boxes, box_ind, node)
    _, height, width, _ = shape
    size = grads.shape[1:3]
    dx = np.zeros(shape, np.float64)
    for n, (box, b) in enumerate(zip(boxes, box_ind)):
        ys, xs, in_y, in_x = _crop_geometry(box, height, width, size)
        g = np.where((in_y[:, None] & in_x[None, :])[:, :, None], grads[n], 0).astype(np.float64)
        if attrs.get("method", "bilinear") == "nearest":
            rows, cols = _nearest(ys, height), _nearest(xs, width)
            np.add.at(dx[b], (rows[:, None], cols[None, :]), g)
            continue
        top, bottom, y_lerp = _lerp_parts(ys, height)
        left, right, x_lerp = _lerp_parts(xs, width)
        wy = [(top, 1 - y_lerp.astype(np.float64)), (bottom, y_lerp.astype(np.float64))]
        wx = [(left, 1 - x_lerp.astype(np.float64)), (right, x_lerp.astype(np.float64))]
        for rows, row_w in wy:
            for cols, col_w in wx:
                weight = (row_w[:, None] * col_w[None, :])[:, :, None]
                np.add.at(dx[b], (rows[:, None], cols[None, :]), g * weight)
    return [dx.astype(dtype_attr(attrs, "T", attrs["_node_name"], FLOATS))]


@register("CropAndResizeGradBoxes", dtypes=FLOATS)
def crop_and_resize_grad_boxes(ctx: Any, inputs: list, attrs: dict) -> list:
    grads, image, boxes, box_ind = inputs
    node = attrs["_node_name"]
    _check_crop_args(image.shape, boxes, box_ind, node)
    _, height, width, _ = image.shape
    crop_h, crop_w = grads.shape[1:3]
    out = np.zeros((boxes.shape[0], 4), np.float64)
    h_ratio = (height - 1) / (crop_h - 1) if crop_h > 1 else 0.0
    w_ratio = (width - 1) / (crop_w - 1) if crop_w > 1 else 0.0
    for n, (box, b) in enumerate(zip(boxes, box_ind)):
        ys, xs, in_y, in_x = _crop_geometry(box, height, width, (crop_h, crop_w))
        picture = image[b].astype(np.float64)
        top, bottom, y_lerp = _lerp_parts(ys, height)
        left, right, x_lerp = _lerp_parts(xs, width)
        y_l, x_l = y_lerp.astype(np.float64)[:, None, None], x_lerp.astype(np.float64)[None, :, None]
        tl, tr = picture[top][:, left], picture[top][:, right]
        bl, br = picture[bottom][:, left], picture[bottom][:, right]
        g = np.where((in_y[:, None] & in_x[None, :])[:, :, None], grads[n], 0).astype(np.float64)
        grad_y = ((1 - x_l) * (bl - tl) + x_l * (br - tr)) * g
        grad_x = ((1 - y_l) * (tr - tl) + y_l * (br - bl)) * g
        row_pos = np.arange(crop_h, dtype=np.float64)[:, None, None] * h_ratio
        col_pos = np.arange(crop_w, dtype=np.float64)[None, :, None] * w_ratio
        if crop_h > 1:
            out[n, 0] = (grad_y * (height - 1 - row_pos)).sum()
            out[n, 2] = (grad_y * row_pos).sum()
        else:
            out[n, 0] = out[n, 2] = grad_y.sum() * 0.5 * (height - 1)
        if crop_w > 1:
            out[n, 1] = (grad_x * (width - 1 - col_pos)).sum()
            out[n, 3] = (grad_x * col_pos).sum()
        else:
            out[n, 1] = out[n, 3] = grad_x.sum() * 0.5 * (width - 1)
    return [out.astype(np.float32)]


# ---- non-max suppression ---------------------------------------------------------------------
def _iou_function(boxes: np.ndarray) -> Callable[[int, int], float]:
    lo_y, hi_y = np.minimum(boxes[:, 0], boxes[:, 2]), np.maximum(boxes[:, 0], boxes[:, 2])
    lo_x, hi_x = np.minimum(boxes[:, 1], boxes[:, 3]), np.maximum(boxes[:, 1], boxes[:, 3])
    areas = (hi_y - lo_y) * (hi_x - lo_x)

    def iou(i: int, j: int) -> float:
        if areas[i] <= 0 or areas[j] <= 0:
            return 0.0
        inter = (max(min(hi_y[i], hi_y[j]) - max(lo_y[i], lo_y[j]), 0) *
                 max(min(hi_x[i], hi_x[j]) - max(lo_x[i], lo_x[j]), 0))
        return float(inter / (areas[i] + areas[j] - inter))
    return iou


def _greedy_nms(similarity: Callable[[int, int], float], scores: np.ndarray, max_output: int,
                threshold: float, score_threshold: float,
                soft_sigma: float = 0.0) -> tuple[list[int], list[float]]:
    """TF's DoNonMaxSuppressionOp: best score first (lower index on ties); with Soft-NMS a
    decayed candidate goes back in the queue."""
    soft = soft_sigma > 0
    scale = -0.5 / soft_sigma if soft else 0.0
    queue = [(-float(s), i, 0) for i, s in enumerate(scores.tolist()) if s > score_threshold]
    heapq.heapify(queue)
    selected: list[int] = []
    kept_scores: list[float] = []
    while len(selected) < max_output and queue:
        negative, index, begin = heapq.heappop(queue)
        score = original = -negative
        hard = False
        for j in range(len(selected) - 1, begin - 1, -1):
            sim = similarity(index, selected[j])
            weight = np.exp(scale * sim * sim) if (soft or sim <= threshold) else 0.0
            score *= float(np.float32(weight))
            if not soft and sim > threshold:
                hard = True
                break
            if score <= score_threshold:
                break
        if hard:
            continue
        if score == original:
            selected.append(index)
            kept_scores.append(score)
        elif score > score_threshold:
            heapq.heappush(queue, (-score, index, len(selected)))
    return selected, kept_scores


def _nms_args(inputs: list, node: str, square: bool) -> tuple:
    boxes, scores, max_output = inputs[0], inputs[1], inputs[2]
    if square:
        if boxes.ndim != 2 or boxes.shape[0] != boxes.shape[1]:
            raise InvalidArgumentError(f"overlaps must be a square matrix, got shape "
                                       f"{shape_str(boxes.shape)} (node '{node}')")
    elif boxes.ndim != 2 or boxes.shape[1] != 4:
        raise InvalidArgumentError(f"boxes must be [num_boxes, 4], got shape "
                                   f"{shape_str(boxes.shape)} (node '{node}')")
    if scores.shape != (boxes.shape[0],):
        raise InvalidArgumentError(f"scores has incompatible shape: {shape_str(scores.shape)} for "
                                   f"{boxes.shape[0]} boxes (node '{node}')")
    if np.ndim(max_output) != 0:
        raise InvalidArgumentError(f"max_output_size must be 0-D, got shape "
                                   f"{shape_str(np.shape(max_output))} (node '{node}')")
    threshold = float(inputs[3])
    if not square and not 0 <= threshold <= 1:
        raise InvalidArgumentError(f"iou_threshold must be in [0, 1], got {threshold} "
                                   f"(node '{node}')")
    if int(max_output) < 0:
        raise InvalidArgumentError(f"max_output_size must be non-negative, got {int(max_output)} "
                                   f"(node '{node}')")
    return boxes, scores, int(max_output), threshold, float(inputs[4])


@register("NonMaxSuppressionV3")
def non_max_suppression_v3(ctx: Any, inputs: list, attrs: dict) -> list:
    boxes, scores, size, threshold, floor = _nms_args(inputs, attrs["_node_name"], False)
    picked, _ = _greedy_nms(_iou_function(boxes), scores, size, threshold, floor)
    return [np.asarray(picked, np.int32)]


@register("NonMaxSuppressionWithOverlaps")
def non_max_suppression_overlaps(ctx: Any, inputs: list, attrs: dict) -> list:
    overlaps, scores, size, threshold, floor = _nms_args(inputs, attrs["_node_name"], True)
    picked, _ = _greedy_nms(lambda i, j: float(overlaps[i, j]), scores, size, threshold, floor)
    return [np.asarray(picked, np.int32)]


def _padded(picked: list, size: int, pad: bool) -> np.ndarray:
    out = np.asarray(picked, np.int32)
    return np.concatenate([out, np.zeros(size - out.size, np.int32)]) if pad else out


@register("NonMaxSuppressionV4")
def non_max_suppression_v4(ctx: Any, inputs: list, attrs: dict) -> list:
    boxes, scores, size, threshold, floor = _nms_args(inputs, attrs["_node_name"], False)
    picked, _ = _greedy_nms(_iou_function(boxes), scores, size, threshold, floor)
    pad = bool(attrs.get("pad_to_max_output_size", False))
    return [_padded(picked, size, pad), np.int32(len(picked))]


@register("NonMaxSuppressionV5")
def non_max_suppression_v5(ctx: Any, inputs: list, attrs: dict) -> list:
    node = attrs["_node_name"]
    boxes, scores, size, threshold, floor = _nms_args(inputs, node, False)
    sigma = float(inputs[5])
    if sigma < 0:
        raise InvalidArgumentError(f"soft_nms_sigma must be non-negative, got {sigma} (node "
                                   f"'{node}')")
    picked, kept = _greedy_nms(_iou_function(boxes), scores, size, threshold, floor, sigma)
    pad = bool(attrs.get("pad_to_max_output_size", False))
    kept_arr = np.asarray(kept, scores.dtype)
    if pad:
        kept_arr = np.concatenate([kept_arr, np.zeros(size - kept_arr.size, scores.dtype)])
    return [_padded(picked, size, pad), kept_arr, np.int32(len(picked))]


# ---- DrawBoundingBoxes -----------------------------------------------------------------------
_COLOR_TABLE = [[1, 1, 0, 1], [0, 0, 1, 1], [1, 0, 0, 1], [0, 1, 0, 1], [0.5, 0, 0.5, 1],
                [0.5, 0.5, 0, 1], [0.5, 0, 0, 1], [0, 0, 0.5, 1], [0, 1, 1, 1], [1, 0, 1, 1]]


def _draw(images: np.ndarray, boxes: np.ndarray, colors: np.ndarray, node: str) -> np.ndarray:
    if images.ndim != 4 or images.shape[3] not in (1, 3, 4):
        raise InvalidArgumentError(f"images must be 4-D with a channel depth of 1 (GRY), 3 (RGB) "
                                   f"or 4 (RGBA), got shape {shape_str(images.shape)} (node "
                                   f"'{node}')")
    if boxes.ndim != 3 or boxes.shape[2] != 4 or boxes.shape[0] != images.shape[0]:
        raise InvalidArgumentError(f"boxes must be [batch, num_boxes, 4] with the images' batch, "
                                   f"got {shape_str(boxes.shape)} (node '{node}')")
    batch, height, width, depth = images.shape
    if colors.shape[1] < depth:
        raise InvalidArgumentError(f"colors must have at least {depth} channels, got shape "
                                   f"{shape_str(colors.shape)} (node '{node}')")
    colors = colors.copy()
    if depth == 1:
        colors[:, 0] = 1
    canvas = images.copy()
    for b in range(batch):
        for k, box in enumerate(boxes[b]):
            color = colors[k % len(colors), :depth].astype(images.dtype)
            top, left = int(_F(box[0]) * (height - 1)), int(_F(box[1]) * (width - 1))
            bottom, right = int(_F(box[2]) * (height - 1)), int(_F(box[3]) * (width - 1))
            if top > bottom or left > right:
                continue
            if top >= height or bottom < 0 or left >= width or right < 0:
                continue
            rows = slice(max(top, 0), min(bottom, height - 1) + 1)
            cols = slice(max(left, 0), min(right, width - 1) + 1)
            if top >= 0:
                canvas[b, top, cols] = color
            if bottom < height:
                canvas[b, bottom, cols] = color
            if left >= 0:
                canvas[b, rows, left] = color
            if right < width:
                canvas[b, rows, right] = color
    return canvas


@register("DrawBoundingBoxes", dtypes=("float16", "float32"))
def draw_bounding_boxes(ctx: Any, inputs: list, attrs: dict) -> list:
    images, boxes = inputs
    return [_draw(images, boxes, np.asarray(_COLOR_TABLE, np.float32), attrs["_node_name"])]


@register("DrawBoundingBoxesV2", dtypes=("float16", "float32"))
def draw_bounding_boxes_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    images, boxes, colors = inputs
    node = attrs["_node_name"]
    if colors.ndim != 2 or colors.size == 0:
        colors = np.asarray(_COLOR_TABLE, np.float32) if colors.size == 0 else colors
        if colors.ndim != 2:
            raise InvalidArgumentError(f"colors must be a 2-D matrix, got shape "
                                       f"{shape_str(colors.shape)} (node '{node}')")
    return [_draw(images, boxes, colors, node)]


# ---- SampleDistortedBoundingBoxV2 ------------------------------------------------------------
def _area(rect: tuple) -> int:
    return (rect[2] - rect[0]) * (rect[3] - rect[1])


def _intersection_area(a: tuple, b: tuple) -> int:
    lo_x, lo_y, hi_x, hi_y = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    return 0 if lo_x > hi_x or lo_y > hi_y else (hi_x - lo_x) * (hi_y - lo_y)


def _random_crop(rng: np.random.Generator, width: int, height: int, min_area_frac: float,
                 max_area_frac: float, aspect: float) -> tuple | None:
    """TF's GenerateRandomCrop: a crop of area in range and the given aspect ratio, or None."""
    if max_area_frac <= 0 or aspect <= 0 or width <= 0 or height <= 0 or \
            min_area_frac > max_area_frac:
        return None
    min_area = _F(min_area_frac) * width * height
    max_area = _F(max_area_frac) * width * height
    crop_h = int(np.rint(np.sqrt(min_area / _F(aspect))))
    max_h = int(np.rint(np.sqrt(max_area / _F(aspect))))
    if np.rint(max_h * _F(aspect)) > width:
        max_h = int((width + 0.5 - 1e-7) / aspect)
    max_h = min(max_h, height)
    crop_h = min(crop_h, max_h)
    if crop_h < max_h:
        crop_h += int(rng.integers(0, max_h - crop_h + 1))
    crop_w = int(np.rint(crop_h * _F(aspect)))
    area = crop_w * crop_h
    if area < min_area:
        crop_h += 1
        crop_w = int(np.rint(crop_h * _F(aspect)))
        area = crop_w * crop_h
    if area > max_area:
        crop_h -= 1
        crop_w = int(np.rint(crop_h * _F(aspect)))
        area = crop_w * crop_h
    if (area < min_area or area > max_area or crop_w > width or crop_h > height or crop_w <= 0
            or crop_h <= 0):
        return None
    y = int(rng.integers(0, height - crop_h)) if crop_h < height else 0
    x = int(rng.integers(0, width - crop_w)) if crop_w < width else 0
    return (x, y, x + crop_w, y + crop_h)


def _covers_an_object(crop: tuple, boxes: list, min_covered: float) -> bool:
    if _area(crop) < 1:
        return False
    return any(_area(box) >= 1 and _intersection_area(crop, box) / _area(box) >= min_covered
               for box in boxes)


@register("SampleDistortedBoundingBoxV2")
def sample_distorted_bounding_box(ctx: Any, inputs: list, attrs: dict) -> list:
    image_size, boxes_in, min_covered = inputs
    node = attrs["_node_name"]
    size = int_list(image_size, "image_size", node)
    if len(size) != 3 or size[0] <= 0 or size[1] <= 0:
        raise InvalidArgumentError(f"image_size must contain 3 elements with positive height and "
                                   f"width, got {size} (node '{node}')")
    height, width = size[0], size[1]
    flat = boxes_in.reshape(-1, 4) if boxes_in.size else np.zeros((0, 4), np.float32)
    if flat.size and (flat.min() < 0 or flat.max() > 1):
        raise InvalidArgumentError(f"All bounding box coordinates must be in [0.0, 1.0] (node "
                                   f"'{node}')")
    boxes = [(int(_F(b[1]) * width), int(_F(b[0]) * height), int(_F(b[3]) * width),
              int(_F(b[2]) * height)) for b in flat]
    if not boxes:
        if not attrs.get("use_image_if_no_bounding_boxes", False):
            raise InvalidArgumentError("No bounding boxes provided as input. One must enable "
                                       "use_image_if_no_bounding_boxes if you wish to not provide "
                                       f"any bounding boxes. (node '{node}')")
        boxes = [(0, 0, width, height)]
    rng = ctx.random_generator(node, int(attrs.get("seed") or 0), int(attrs.get("seed2") or 0))
    low_aspect, high_aspect = (float(v) for v in attrs["aspect_ratio_range"])
    low_area, high_area = (float(v) for v in attrs["area_range"])
    crop = (0, 0, width, height)
    for _ in range(int(attrs["max_attempts"])):
        aspect = float(_F(rng.random()) * _F(high_aspect - low_aspect) + _F(low_aspect))
        found = _random_crop(rng, width, height, low_area, high_area, aspect)
        if found is not None and _covers_an_object(found, boxes, float(min_covered)):
            crop = found
            break
    x0, y0, x1, y1 = crop
    dtype = image_size.dtype
    begin = np.asarray([y0, x0, 0], dtype)
    extent = np.asarray([y1 - y0, x1 - x0, -1], dtype)
    box = np.asarray([[[y0 / height, x0 / width, y1 / height, x1 / width]]], np.float32)
    return [begin, extent, box]

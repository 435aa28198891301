"""tf.image's bounding-box ops: crop_and_resize (CropAndResize, with TF's gradients for the
image and the boxes), the non-max suppressions (NonMaxSuppressionV3 / V4 / V5 and
WithOverlaps), draw_bounding_boxes and sample_distorted_bounding_box
(SampleDistortedBoundingBoxV2: TF's sampling rules, zmtf's random stream).

Boxes are [y_min, x_min, y_max, x_max] in coordinates normalized to [0, 1], as in TF.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.array_ops import _shape_value
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.math_grad import shape_of
from zmtf.ops.static_dims import static_dims
from zmtf.framework.tensor_shape import TensorShape

# as in TF; the other ops here have no gradient at all (tf.gradients raises LookupError)
not_differentiable("NonMaxSuppressionWithOverlaps", "SampleDistortedBoundingBoxV2",
                   "DrawBoundingBoxes")

_CROP_DTYPES = (dtypes.uint8, dtypes.uint16, dtypes.int8, dtypes.int16, dtypes.int32,
                dtypes.int64, dtypes.float16, dtypes.float32, dtypes.float64)


# ---- CropAndResize ---------------------------------------------------------------------------
@op_def("CropAndResize")
def _crop_and_resize_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    image, boxes, box_ind, crop_size = inputs
    if image.dtype not in _CROP_DTYPES:
        raise TypeError(f"CropAndResize: image dtype {image.dtype.name} is not supported")
    depth = static_dims(image, 4, "image")[3]
    num_boxes = static_dims(boxes, 2, "boxes")[0]
    size = _shape_value(crop_size) or [None, None]
    return [(dtypes.float32, TensorShape([num_boxes, size[0], size[1], depth]))]


@op_def("CropAndResizeGradImage")
def _crop_grad_image_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.as_dtype(attrs["T"]), TensorShape(_shape_value(inputs[3]) or [None] * 4))]


@op_def("CropAndResizeGradBoxes")
def _crop_grad_boxes_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.float32, inputs[2].shape)]


def crop_and_resize(image: Any, boxes: Any, box_ind: Any = None, crop_size: Any = None,
                    method: str = "bilinear", extrapolation_value: float = 0,
                    name: str | None = None, box_indices: Any = None) -> Tensor:
    """Crops of ``image`` [batch, h, w, d] at ``boxes`` [n, 4] (from image ``box_ind[i]``),
    each resized to ``crop_size`` = [crop_h, crop_w]; points outside the image get
    ``extrapolation_value``. float32 [n, crop_h, crop_w, d]."""
    indices = box_ind if box_ind is not None else box_indices
    if indices is None or crop_size is None:
        raise TypeError("crop_and_resize needs image, boxes, box_ind (box_indices=) and "
                        "crop_size")
    if method not in ("bilinear", "nearest"):
        raise ValueError(f"method must be 'bilinear' or 'nearest', got {method!r}")
    with get_default_graph().name_scope(name or "CropAndResize") as scope:
        image_t = convert_to_tensor(image, name="image")
        boxes_t = convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")
        index_t = convert_to_tensor(indices, dtype=dtypes.int32, name="box_ind")
        size_t = convert_to_tensor(crop_size, dtype=dtypes.int32, name="crop_size")
        attrs = {"method": method, "extrapolation_value": float(extrapolation_value)}
        return apply_op("CropAndResize", [image_t, boxes_t, index_t, size_t], attrs,
                        name=scope).outputs[0]


@gradient("CropAndResize")
def _crop_and_resize_grad(op: Operation, grad: Tensor) -> list:
    image, boxes, box_ind, _ = op.inputs
    grad_image = None
    if image.dtype.is_floating:
        grad_image = apply_op("CropAndResizeGradImage", [grad, boxes, box_ind, shape_of(image)],
                              {"T": image.dtype.name, "method": op.get_attr("method")}).outputs[0]
    # boxes get the bilinear gradient even for "nearest", as in TF (an approximation there)
    grad_boxes = apply_op("CropAndResizeGradBoxes", [grad, image, boxes, box_ind],
                          {"method": "bilinear"}).outputs[0]
    return [grad_image, grad_boxes, None, None]


# ---- non-max suppression ---------------------------------------------------------------------
@op_def("NonMaxSuppressionV3", "NonMaxSuppressionWithOverlaps")
def _nms_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int32, TensorShape([None]))]


@op_def("NonMaxSuppressionV4")
def _nms_padded_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    size = _shape_value(inputs[2]) if inputs[2].op.type == "Const" else None
    length = size[0] if size and attrs.get("pad_to_max_output_size") else None
    return [(dtypes.int32, TensorShape([length])), (dtypes.int32, TensorShape([]))]


@op_def("NonMaxSuppressionV5")
def _nms_scores_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.int32, TensorShape([None])), (inputs[1].dtype, TensorShape([None])),
            (dtypes.int32, TensorShape([]))]


def _nms_inputs(boxes: Any, scores: Any, max_output_size: Any, thresholds: list) -> list:
    boxes_t = convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")
    scores_t = convert_to_tensor(scores, dtype=dtypes.float32, name="scores")
    static_dims(scores_t, 1, "scores")
    size_t = convert_to_tensor(max_output_size, dtype=dtypes.int32, name="max_output_size")
    extra = [convert_to_tensor(value, dtype=dtypes.float32, name=name)
             for name, value in thresholds]
    return [boxes_t, scores_t, size_t, *extra]


def non_max_suppression(boxes: Any, scores: Any, max_output_size: Any,
                        iou_threshold: float = 0.5, score_threshold: float = float("-inf"),
                        name: str | None = None) -> Tensor:
    """Indices (int32) of at most ``max_output_size`` boxes, by decreasing score, each
    overlapping every earlier pick by IoU <= ``iou_threshold``; scores must exceed
    ``score_threshold``."""
    with get_default_graph().name_scope(name or "non_max_suppression"):
        inputs = _nms_inputs(boxes, scores, max_output_size,
                             [("iou_threshold", iou_threshold),
                              ("score_threshold", score_threshold)])
        static_dims(inputs[0], 2, "boxes")
        return apply_op("NonMaxSuppressionV3", inputs).outputs[0]


def non_max_suppression_with_scores(boxes: Any, scores: Any, max_output_size: Any,
                                    iou_threshold: float = 0.5,
                                    score_threshold: float = float("-inf"),
                                    soft_nms_sigma: float = 0.0,
                                    name: str | None = None) -> tuple[Tensor, Tensor]:
    """non_max_suppression returning ``(indices, scores)``; with ``soft_nms_sigma`` > 0,
    overlapping boxes have their scores decayed by ``exp(-iou**2 / (2 sigma))`` (Soft-NMS)
    instead of being removed."""
    with get_default_graph().name_scope(name or "non_max_suppression_with_scores"):
        inputs = _nms_inputs(boxes, scores, max_output_size,
                             [("iou_threshold", iou_threshold),
                              ("score_threshold", score_threshold),
                              ("soft_nms_sigma", soft_nms_sigma)])
        static_dims(inputs[0], 2, "boxes")
        op = apply_op("NonMaxSuppressionV5", inputs, {"pad_to_max_output_size": False})
        return op.outputs[0], op.outputs[1]


def non_max_suppression_padded(boxes: Any, scores: Any, max_output_size: Any,
                               iou_threshold: float = 0.5,
                               score_threshold: float = float("-inf"),
                               pad_to_max_output_size: bool = False, name: str | None = None,
                               sorted_input: bool = False, canonicalized_coordinates: bool = False,
                               tile_size: int = 512) -> tuple[Tensor, Tensor]:
    """non_max_suppression returning ``(indices, num_valid)``, the indices zero-padded to
    ``max_output_size`` with ``pad_to_max_output_size`` (one image: boxes [n, 4])."""
    with get_default_graph().name_scope(name or "non_max_suppression_padded"):
        inputs = _nms_inputs(boxes, scores, max_output_size,
                             [("iou_threshold", iou_threshold),
                              ("score_threshold", score_threshold)])
        if inputs[0].shape.ndims is not None and inputs[0].shape.ndims > 2:
            raise NotImplementedError("tf.image.non_max_suppression_padded: zmtf handles one "
                                      "image (boxes [num_boxes, 4]); map_fn over a batch")
        op = apply_op("NonMaxSuppressionV4", inputs,
                      {"pad_to_max_output_size": bool(pad_to_max_output_size)})
        return op.outputs[0], op.outputs[1]


def non_max_suppression_overlaps(overlaps: Any, scores: Any, max_output_size: Any,
                                 overlap_threshold: float = 0.5,
                                 score_threshold: float = float("-inf"),
                                 name: str | None = None) -> Tensor:
    """non_max_suppression with a given [n, n] ``overlaps`` matrix in place of IoU."""
    with get_default_graph().name_scope(name or "non_max_suppression_overlaps"):
        inputs = _nms_inputs(overlaps, scores, max_output_size,
                             [("overlap_threshold", overlap_threshold),
                              ("score_threshold", score_threshold)])
        static_dims(inputs[0], 2, "overlaps")
        return apply_op("NonMaxSuppressionWithOverlaps", inputs).outputs[0]


# ---- drawing and sampling --------------------------------------------------------------------
@op_def("DrawBoundingBoxes", "DrawBoundingBoxesV2")
def _draw_boxes_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    images = inputs[0]
    if images.dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"DrawBoundingBoxes: images must be float32 or float16, got "
                        f"{images.dtype.name}")
    static_dims(images, 4, "images")
    static_dims(inputs[1], 3, "boxes")
    return [(images.dtype, images.shape)]


def draw_bounding_boxes(images: Any, boxes: Any, name: str | None = None,
                        colors: Any = None) -> Tensor:
    """``images`` [batch, h, w, d] with the outline of each box of ``boxes`` [batch, n, 4]
    drawn, cycling through TF's color table (or ``colors`` [k, 4] RGBA)."""
    images_t = convert_to_tensor(images, name="images")
    boxes_t = convert_to_tensor(boxes, dtype=dtypes.float32, name="boxes")
    if colors is None:
        return apply_op("DrawBoundingBoxes", [images_t, boxes_t],
                        name=name or "DrawBoundingBoxes").outputs[0]
    colors_t = convert_to_tensor(colors, dtype=dtypes.float32, name="colors")
    return apply_op("DrawBoundingBoxesV2", [images_t, boxes_t, colors_t],
                    name=name or "DrawBoundingBoxesV2").outputs[0]


@op_def("SampleDistortedBoundingBoxV2", stateful=True)
def _sample_box_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    image_size, boxes = inputs[0], inputs[1]
    if image_size.dtype not in (dtypes.uint8, dtypes.int8, dtypes.int16, dtypes.int32,
                                dtypes.int64):
        raise TypeError(f"SampleDistortedBoundingBoxV2: image_size must be an integer tensor, "
                        f"got {image_size.dtype.name}")
    if not image_size.shape.is_compatible_with(TensorShape([3])):
        raise ValueError(f"image_size must be 1-D with 3 elements [height, width, channels], "
                         f"got shape {image_size.shape}")
    dims = static_dims(boxes, 3, "bounding_boxes")
    if dims[2] not in (None, 4):
        raise ValueError(f"bounding_boxes must have shape [batch, N, 4], got {boxes.shape}")
    vector = (image_size.dtype, TensorShape([3]))
    return [vector, vector, (dtypes.float32, TensorShape([1, 1, 4]))]


def _float_pair(value: Any, default: tuple[float, float], what: str) -> list[float]:
    pair = [float(v) for v in (value if value is not None else default)]
    if len(pair) != 2:
        raise ValueError(f"{what} must have 2 elements, got {value!r}")
    return pair


def sample_distorted_bounding_box(image_size: Any, bounding_boxes: Any, seed: int | None = None,
                                  seed2: int | None = None, min_object_covered: Any = 0.1,
                                  aspect_ratio_range: Any = None, area_range: Any = None,
                                  max_attempts: int | None = None,
                                  use_image_if_no_bounding_boxes: bool | None = None,
                                  name: str | None = None) -> tuple[Tensor, Tensor, Tensor]:
    """A random crop (``begin``, ``size`` for tf.slice, and the crop as a box [1, 1, 4]) whose
    area and aspect ratio lie in the given ranges and that covers at least
    ``min_object_covered`` of one of ``bounding_boxes`` (inception's preprocessing)."""
    graph = get_default_graph()
    graph_seed, op_seed = graph.seeds_for_op(seed)
    if seed2 is not None:
        op_seed = int(seed2)
    attrs = {"seed": graph_seed, "seed2": op_seed,
             "aspect_ratio_range": _float_pair(aspect_ratio_range, (0.75, 1.33),
                                               "aspect_ratio_range"),
             "area_range": _float_pair(area_range, (0.05, 1.0), "area_range"),
             "max_attempts": 100 if max_attempts is None else int(max_attempts),
             "use_image_if_no_bounding_boxes": bool(use_image_if_no_bounding_boxes)}
    with graph.name_scope(name or "sample_distorted_bounding_box"):
        size_t = convert_to_tensor(image_size, name="image_size")
        boxes_t = convert_to_tensor(bounding_boxes, dtype=dtypes.float32, name="bounding_boxes")
        covered = convert_to_tensor(min_object_covered, dtype=dtypes.float32,
                                    name="min_object_covered")
        op = apply_op("SampleDistortedBoundingBoxV2", [size_t, boxes_t, covered], attrs)
        return op.outputs[0], op.outputs[1], op.outputs[2]

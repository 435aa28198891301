"""``tf.image``: TF1's image functions for float and integer images, the box ops, and PNG and
JPEG decoding and encoding through Pillow (GIF and BMP are not built: decode_gif says what to
do)."""

from zmtf.ops import image_grad  # noqa: F401 (registers the image gradients)
from zmtf.ops.image_box_ops import (
    crop_and_resize, draw_bounding_boxes, non_max_suppression, non_max_suppression_overlaps,
    non_max_suppression_padded, non_max_suppression_with_scores, sample_distorted_bounding_box,
)
from zmtf.ops.image_codec_ops import (
    decode_bmp, decode_gif, decode_image, decode_jpeg, decode_png, encode_jpeg, encode_png,
    is_jpeg,
)
from zmtf.ops.image_color_ops import (
    adjust_gamma, adjust_hue, adjust_saturation, grayscale_to_rgb, hsv_to_rgb, random_hue,
    random_saturation, rgb_to_grayscale, rgb_to_hsv, rgb_to_yiq, rgb_to_yuv, yiq_to_rgb, yuv_to_rgb,
)
from zmtf.ops.image_functions import (
    ResizeMethod, adjust_brightness, adjust_contrast, central_crop, convert_image_dtype,
    crop_to_bounding_box, flip_left_right, flip_up_down, pad_to_bounding_box,
    per_image_standardization, random_brightness, random_contrast, random_flip_left_right,
    random_flip_up_down, resize_image_with_crop_or_pad, resize_images, rot90, transpose_image,
)
from zmtf.ops.image_ops import random_crop, resize_bilinear, resize_nearest_neighbor
from zmtf.ops.image_ops import reverse  # for zmtf/__init__.py's tf.reverse; not in __all__
from zmtf.ops.image_quality_ops import (
    image_gradients, psnr, resize_image_with_pad, resize_with_crop_or_pad, sobel_edges, ssim,
    total_variation, transpose,
)
from zmtf.ops.image_resize_ops import resize_area, resize_bicubic
from zmtf.ops.patches_ops import extract_patches

resize = resize_images  # tf.compat.v1.image.resize is resize_images (the v1 signature)

__all__ = [
    "ResizeMethod", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue",
    "adjust_saturation", "central_crop", "convert_image_dtype", "crop_and_resize",
    "crop_to_bounding_box", "decode_bmp", "decode_gif", "decode_image", "decode_jpeg",
    "decode_png", "draw_bounding_boxes", "encode_jpeg", "encode_png", "extract_patches",
    "flip_left_right", "flip_up_down", "grayscale_to_rgb", "hsv_to_rgb", "image_gradients",
    "is_jpeg", "non_max_suppression", "non_max_suppression_overlaps", "non_max_suppression_padded",
    "non_max_suppression_with_scores", "pad_to_bounding_box", "per_image_standardization", "psnr",
    "random_brightness", "random_contrast", "random_crop", "random_flip_left_right",
    "random_flip_up_down", "random_hue", "random_saturation", "resize", "resize_area",
    "resize_bicubic", "resize_bilinear", "resize_image_with_crop_or_pad", "resize_image_with_pad",
    "resize_images", "resize_nearest_neighbor", "resize_with_crop_or_pad", "rgb_to_grayscale",
    "rgb_to_hsv", "rgb_to_yiq", "rgb_to_yuv", "rot90", "sample_distorted_bounding_box",
    "sobel_edges", "ssim", "total_variation", "transpose", "transpose_image", "yiq_to_rgb",
    "yuv_to_rgb",
]

"""tf.image.decode_jpeg / encode_jpeg (over Pillow's libjpeg): round trips within JPEG's loss,
TF's channel, ratio and quality attrs, decode_image and decode_png sniffing a JPEG, and
typed errors for damaged bytes and bad arguments."""

import io

import numpy as np
import pytest
from PIL import Image

import zmtf as tf
from zmtf.tf1.errors import InvalidArgumentError
from zmtf.testing import run_fetches as run


def _photo(height=48, width=64):
    """A smooth image (JPEG's good case) with a little noise."""
    y, x = np.mgrid[0:height, 0:width]
    noise = np.random.default_rng(5).integers(0, 8, (height, width, 3))
    return (np.stack([x * 3, y * 4, (x + y) * 2], axis=-1) + noise).clip(0, 255).astype(np.uint8)


def test_rgb_and_grey_round_trip_within_jpeg_loss():
    image = _photo()
    data = run(tf.image.encode_jpeg(image, quality=95))
    assert data.startswith(b"\xff\xd8\xff") and Image.open(io.BytesIO(data)).mode == "RGB"
    decoded = tf.image.decode_jpeg(data)
    assert decoded.dtype == tf.uint8 and decoded.shape.as_list() == [None, None, None]
    pixels = run(decoded)
    assert pixels.shape == image.shape
    assert np.abs(pixels.astype(int) - image).mean() < 3
    grey = image[..., :1]
    grey_data = run(tf.image.encode_jpeg(grey))
    assert Image.open(io.BytesIO(grey_data)).mode == "L"
    assert np.abs(run(tf.image.decode_jpeg(grey_data)).astype(int) - grey).mean() < 3


def test_the_pixels_are_libjpegs_with_the_dct_asked_for():
    data = run(tf.image.encode_jpeg(_photo(), chroma_downsampling=False))
    accurate = np.asarray(Image.open(io.BytesIO(data)))   # Pillow's default: accurate DCT
    fast, exact = run([tf.image.decode_jpeg(data),
                       tf.image.decode_jpeg(data, dct_method="INTEGER_ACCURATE")])
    np.testing.assert_array_equal(exact, accurate)
    assert np.abs(fast.astype(int) - accurate).max() <= 4 and (fast != accurate).any()
    with pytest.raises(ValueError, match="dct_method"):
        tf.image.decode_jpeg(data, dct_method="FLOAT")


def test_channels_ratio_and_quality():
    image = _photo()
    data = run(tf.image.encode_jpeg(image, quality=90))
    grey, rgb_of_grey, half = run([tf.image.decode_jpeg(data, channels=1),
                                   tf.image.decode_jpeg(run(tf.image.encode_jpeg(image[..., :1])),
                                                        channels=3),
                                   tf.image.decode_jpeg(data, ratio=2)])
    assert grey.shape == (48, 64, 1) and rgb_of_grey.shape == (48, 64, 3)
    assert (rgb_of_grey[..., 0] == rgb_of_grey[..., 2]).all()
    assert half.shape == (24, 32, 3)
    small = run(tf.image.encode_jpeg(image, quality=10))
    assert len(small) < len(data)
    full_chroma = run(tf.image.encode_jpeg(image, quality=90, chroma_downsampling=False))
    assert full_chroma != data


def test_decode_image_and_decode_png_sniff_a_jpeg():
    image = _photo()
    data = run(tf.image.encode_jpeg(image))
    pixels = run(tf.image.decode_jpeg(data))
    floats, fixed, via_png = run([tf.image.decode_image(data, dtype=tf.float32),
                                  tf.image.decode_image(data, channels=3,
                                                        expand_animations=False),
                                  tf.image.decode_png(data)])
    np.testing.assert_allclose(floats, pixels / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(fixed, pixels)
    np.testing.assert_array_equal(via_png, pixels)


@pytest.mark.parametrize("mangle", [lambda d: d[:len(d) // 2], lambda d: d[:20],
                                    lambda d: b"\xff\xd8\xff" + bytes(100)])
def test_damaged_jpeg_is_invalid_argument(mangle):
    data = run(tf.image.encode_jpeg(_photo()))
    contents = tf.placeholder(tf.string, [])
    with pytest.raises(InvalidArgumentError, match="JPEG"):
        run(tf.image.decode_jpeg(contents), {contents: mangle(data)})


def test_encode_jpeg_argument_errors():
    with pytest.raises(TypeError, match="uint8"):
        tf.image.encode_jpeg(np.zeros((2, 2, 3), np.uint16))
    with pytest.raises(ValueError, match="quality"):
        tf.image.encode_jpeg(np.zeros((2, 2, 3), np.uint8), quality=101)
    image = tf.placeholder(tf.uint8, [None, None, None])
    with pytest.raises(InvalidArgumentError, match="1, or 3 channels, got 4"):
        run(tf.image.encode_jpeg(image), {image: np.zeros((2, 2, 4), np.uint8)})
    with pytest.raises(ValueError, match="channels must be one of"):
        tf.image.decode_jpeg(b"", channels=4)

"""Files both ways between zmtf and TensorFlow 2.21: TFRecords (plain and GZIP), a V2
checkpoint, PNG (8 and 16 bits) and JPEG written by one load in the other, pixel for pixel.

TensorFlow runs in its own virtualenv (``ZMTF_TF_PYTHON``, default /work/tfvenv/bin/python,
made with ``pip install tensorflow-cpu==2.21.0``) in one subprocess; the test is skipped where
that Python is absent or cannot import tensorflow. The suite itself never imports it.
"""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

import zmtf as tf
from zmtf.testing import run_fetches as run

TF_PYTHON = os.environ.get("ZMTF_TF_PYTHON", "/work/tfvenv/bin/python")
TF_TIMEOUT = 240.0
pytestmark = pytest.mark.skipif(not os.path.exists(TF_PYTHON),
                                reason=f"no TensorFlow virtualenv at {TF_PYTHON}")

RNG = np.random.default_rng(2021)
RECORDS = [RNG.bytes(int(n)) for n in RNG.integers(0, 400, 3000)] + [RNG.bytes(300_000)]
IMAGE8 = RNG.integers(0, 256, (37, 29, 4)).astype(np.uint8)
IMAGE16 = RNG.integers(0, 65536, (19, 23, 3)).astype(np.uint16)
PHOTO = np.clip(np.mgrid[0:40, 0:56][1][..., None] * [4, 2, 1] + RNG.integers(0, 9, (40, 56, 3)),
                0, 255).astype(np.uint8)
VARIABLES = {"dense/kernel": RNG.standard_normal((30, 40)).astype(np.float32),
             "dense/bias": RNG.standard_normal(40).astype(np.float32),
             "step": np.array(12345678901, np.int64),
             "big": RNG.standard_normal(300_000).astype(np.float64)}

# Run by TensorFlow's Python: reads zmtf's files in ``folder``/zmtf, writes its own to
# ``folder``/tf, and saves what it read to ``folder``/tf_read.npz.
TF_SCRIPT = r'''
import json, os, sys
import numpy as np
try:
    import tensorflow as tf
except ImportError as error:
    print("NO-TENSORFLOW", error)
    sys.exit(0)
v1 = tf.compat.v1
folder = sys.argv[1]
zm, mine = os.path.join(folder, "zmtf"), os.path.join(folder, "tf")
os.makedirs(mine)
given = np.load(os.path.join(folder, "given.npz"))
read = {}
for name, kind in (("records.tfrecord", ""), ("records.gz", "GZIP")):
    records = list(v1.io.tf_record_iterator(os.path.join(zm, name), kind or None))
    read[name] = np.array([len(r) for r in records])
    read[name + ".joined"] = np.frombuffer(b"".join(records), np.uint8)
with open(os.path.join(folder, "records.json")) as f:
    lengths = json.load(f)
joined = given["records_joined"].tobytes()
for name, kind in (("records.tfrecord", ""), ("records.gz", "GZIP")):
    with tf.io.TFRecordWriter(os.path.join(mine, name),
                              tf.io.TFRecordOptions(compression_type=kind or None)) as writer:
        at = 0
        for n in lengths:
            writer.write(joined[at:at + n]); at += n
for name in ("image8.png", "image16.png"):
    data = open(os.path.join(zm, name), "rb").read()
    dtype = tf.uint16 if "16" in name else tf.uint8
    read[name] = tf.io.decode_png(data, dtype=dtype).numpy()
zmtf_jpeg = open(os.path.join(zm, "photo.jpg"), "rb").read()
read["photo.jpg"] = tf.io.decode_jpeg(zmtf_jpeg, dct_method="INTEGER_ACCURATE").numpy()
read["photo.jpg:grey"] = tf.io.decode_jpeg(zmtf_jpeg, channels=1).numpy()
read["photo.jpg:half"] = tf.io.decode_jpeg(zmtf_jpeg, ratio=2).numpy()
open(os.path.join(mine, "image8.png"), "wb").write(tf.io.encode_png(given["image8"]).numpy())
open(os.path.join(mine, "image16.png"), "wb").write(tf.io.encode_png(given["image16"]).numpy())
jpeg = tf.io.encode_jpeg(given["photo"], quality=90).numpy()
open(os.path.join(mine, "photo.jpg"), "wb").write(jpeg)
read["tf_photo_decoded"] = tf.io.decode_jpeg(jpeg).numpy()
reader = tf.train.load_checkpoint(os.path.join(zm, "model.ckpt"))
for key in reader.get_variable_to_shape_map():
    read["ckpt:" + key] = reader.get_tensor(key)
with tf.Graph().as_default():
    names = [k[len("var:"):] for k in given.files if k.startswith("var:")]
    for key in names:
        v1.Variable(given["var:" + key], name=key)
    saver = v1.train.Saver()
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        saver.save(sess, os.path.join(mine, "model.ckpt"))
np.savez(os.path.join(folder, "tf_read.npz"), **read)
print("TF-DONE")
'''


def _write_zmtf_files(folder):
    os.makedirs(folder)
    for name, kind in (("records.tfrecord", ""), ("records.gz", "GZIP")):
        with tf.python_io.TFRecordWriter(os.path.join(folder, name), kind) as writer:
            for record in RECORDS:
                writer.write(record)
    images = {"image8.png": tf.image.encode_png(IMAGE8),
              "image16.png": tf.image.encode_png(IMAGE16),
              "photo.jpg": tf.image.encode_jpeg(PHOTO, quality=90)}
    for name, data in zip(images, run(list(images.values()))):
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    with tf.Graph().as_default():
        for key, value in VARIABLES.items():
            tf.Variable(value, name=key)
        saver = tf.train.Saver(write_version=tf.train.SaverDef.V2)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            saver.save(sess, os.path.join(folder, "model.ckpt"))


@pytest.fixture(scope="module")
def exchanged(tmp_path_factory):
    """zmtf's files, TensorFlow's files, and what TensorFlow read from zmtf's."""
    folder = tmp_path_factory.mktemp("interop")
    _write_zmtf_files(str(folder / "zmtf"))
    np.savez(folder / "given.npz", records_joined=np.frombuffer(b"".join(RECORDS), np.uint8),
             image8=IMAGE8, image16=IMAGE16, photo=PHOTO,
             **{"var:" + k: v for k, v in VARIABLES.items()})
    (folder / "records.json").write_text(json.dumps([len(r) for r in RECORDS]))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    done = subprocess.run([TF_PYTHON, "-c", TF_SCRIPT, str(folder)], capture_output=True,
                          text=True, timeout=TF_TIMEOUT, env=env)
    if "NO-TENSORFLOW" in done.stdout:
        pytest.skip(f"{TF_PYTHON} cannot import tensorflow")
    assert "TF-DONE" in done.stdout, done.stdout[-2000:] + done.stderr[-4000:]
    with np.load(folder / "tf_read.npz") as read:
        return folder, dict(read)


def test_tensorflow_reads_zmtfs_records_and_zmtf_reads_tensorflows(exchanged):
    folder, read = exchanged
    lengths = np.array([len(r) for r in RECORDS])
    for name, kind in (("records.tfrecord", ""), ("records.gz", "GZIP")):
        np.testing.assert_array_equal(read[name], lengths)
        assert read[name + ".joined"].tobytes() == b"".join(RECORDS)
        path = str(folder / "tf" / name)
        assert list(tf.python_io.tf_record_iterator(path, kind)) == RECORDS
    assert (folder / "tf" / "records.tfrecord").read_bytes() == \
        (folder / "zmtf" / "records.tfrecord").read_bytes()


def test_tensorflow_decodes_zmtfs_images_and_zmtf_decodes_tensorflows(exchanged):
    folder, read = exchanged
    np.testing.assert_array_equal(read["image8.png"], IMAGE8)
    np.testing.assert_array_equal(read["image16.png"], IMAGE16)
    data8 = (folder / "tf" / "image8.png").read_bytes()
    data16 = (folder / "tf" / "image16.png").read_bytes()
    zmtf_jpeg = (folder / "zmtf" / "photo.jpg").read_bytes()
    tf_jpeg = (folder / "tf" / "photo.jpg").read_bytes()
    png8, png16, accurate, grey, half, theirs = run([
        tf.image.decode_png(data8), tf.image.decode_png(data16, dtype=tf.uint16),
        tf.image.decode_jpeg(zmtf_jpeg, dct_method="INTEGER_ACCURATE"),
        tf.image.decode_jpeg(zmtf_jpeg, channels=1), tf.image.decode_jpeg(zmtf_jpeg, ratio=2),
        tf.image.decode_jpeg(tf_jpeg)])
    np.testing.assert_array_equal(png8, IMAGE8)
    np.testing.assert_array_equal(png16, IMAGE16)
    np.testing.assert_array_equal(accurate, read["photo.jpg"])      # TF's pixels exactly
    np.testing.assert_array_equal(grey, read["photo.jpg:grey"])
    np.testing.assert_array_equal(half, read["photo.jpg:half"])
    # 4:2:0 at full size with the fast DCT: TF's "fancy" chroma upsampling is not Pillow's
    assert np.abs(theirs.astype(int) - read["tf_photo_decoded"]).max() <= 4
    assert np.abs(theirs.astype(int) - PHOTO).mean() < 3


def test_tensorflow_reads_zmtfs_checkpoint_and_zmtf_restores_tensorflows(exchanged):
    folder, read = exchanged
    for key, value in VARIABLES.items():
        np.testing.assert_array_equal(read["ckpt:" + key], value)
        assert read["ckpt:" + key].dtype == value.dtype
    with tf.Graph().as_default():
        variables = {key: tf.Variable(np.zeros_like(value), name=key)
                     for key, value in VARIABLES.items()}
        saver = tf.train.Saver()
        with tf.Session() as sess:
            saver.restore(sess, str(folder / "tf" / "model.ckpt"))
            got = sess.run(variables)
    for key, value in VARIABLES.items():
        np.testing.assert_array_equal(got[key], value)

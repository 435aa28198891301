"""tf.summary: scalar, histogram, image and text summaries written as TFRecord event files
that we read back and check (histograms against numpy, images through a PNG decoder)."""

import io
import struct
import sys

import numpy as np
import pytest
from PIL import Image

import zmtf as tf
from zmtf.formats.summary_proto import crc32c

DBL_MAX = sys.float_info.max


def _masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_records(path):
    """TFRecord frames of a file, every CRC checked."""
    data, out, at = path.read_bytes(), [], 0
    while at < len(data):
        header = data[at:at + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[at + 8:at + 12])[0] == _masked(crc32c(header))
        body = data[at + 12:at + 12 + length]
        assert struct.unpack("<I", data[at + 12 + length:at + 16 + length])[0] == _masked(crc32c(body))
        out.append(body)
        at += 16 + length
    return out


def parse(buf):
    """A protobuf message as {field: [values]} (varint, fixed64, bytes, fixed32)."""
    fields, at = {}, 0
    while at < len(buf):
        key, at = _varint(buf, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(buf, at)
        elif wire == 1:
            value, at = struct.unpack("<d", buf[at:at + 8])[0], at + 8
        elif wire == 2:
            n, at = _varint(buf, at)
            value, at = buf[at:at + n], at + n
        else:
            value, at = struct.unpack("<f", buf[at:at + 4])[0], at + 4
        fields.setdefault(number, []).append(value)
    return fields


def _varint(buf, at):
    shift = result = 0
    while True:
        byte = buf[at]
        at += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, at


def scalars(event):
    summary = parse(event[5][0]) if 5 in event else {}
    return {parse(v)[1][0].decode(): parse(v)[2][0] for v in summary.get(1, []) if 2 in parse(v)}


def test_scalars_merged_and_written_as_event_files(tmp_path):
    tf.summary.scalar("loss", tf.constant(0.25))
    with tf.name_scope("train"):
        tf.summary.scalar("lr", tf.constant(0.5))
    merged = tf.summary.merge_all()
    with tf.summary.FileWriter(str(tmp_path)) as writer, tf.Session() as sess:
        for step in range(3):
            writer.add_summary(sess.run(merged), step)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    events = [parse(r) for r in read_records(path)]
    assert events[0][3] == [b"brain.Event:2"]
    assert [e.get(2, [0])[0] for e in events[1:]] == [0, 1, 2]   # step 0: proto3 leaves it out
    assert scalars(events[1]) == {"loss": 0.25, "train/lr": 0.5}
    with pytest.raises(ValueError, match="needs a scalar"):
        tf.summary.scalar("bad", tf.constant([1.0, 2.0]))


def test_monitored_training_session_writes_summaries(tmp_path):
    w = tf.Variable(1.0)
    loss = tf.square(w)
    tf.summary.scalar("loss", loss)
    tf.summary.histogram("w", w)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_summaries_steps=2,
                                           hooks=[tf.train.StopAtStepHook(last_step=5)]) as sess:
        while not sess.should_stop():
            sess.run(train)
    (path,) = tmp_path.glob("events.out.tfevents.*")   # also the graph and global_step/sec
    written = [e for e in map(parse, read_records(path)) if "loss" in scalars(e)]
    losses = [scalars(e)["loss"] for e in written]
    assert len(written) >= 2 and losses == sorted(losses, reverse=True)   # the loss fell
    assert np.isclose(losses[0], 1.0, atol=0.4)
    weights = [histo(summary_values(e[5][0])["w"]) for e in written]   # the hook's merge_all
    assert [h["num"] for h in weights] == [1.0] * len(written) and weights[0]["max"] <= 1.0


def summary_values(buf):
    """A serialized Summary as {tag: parsed Value}, in order."""
    return {parse(v)[1][0].decode(): parse(v) for v in parse(bytes(buf)).get(1, [])}


def histo(value):
    """A Value's HistogramProto as a dict of numbers and lists (proto3 leaves zeros out)."""
    fields = parse(value[5][0])
    out = {key: fields.get(number, [0.0])[0]
           for number, key in enumerate(["min", "max", "num", "sum", "sum_squares"], 1)}
    for number, key in ((6, "bucket_limit"), (7, "bucket")):
        packed = fields[number][0]
        out[key] = list(struct.unpack(f"<{len(packed) // 8}d", packed))
    return out


def tf_default_limits():
    """TF's histogram.cc: 1e-12 growing by 10% below 1e20, DBL_MAX, mirrored, with 0."""
    positive, limit = [], 1.0e-12
    while limit < 1.0e20:
        positive.append(limit)
        limit *= 1.1
    positive.append(DBL_MAX)
    return np.array([-x for x in reversed(positive)] + [0.0] + positive)


def decode_png(data):
    """Pixels of an 8-bit PNG, read by Pillow (which checks the chunks' CRCs)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    image = Image.open(io.BytesIO(data), formats=["PNG"])
    pixels = np.asarray(image)
    return pixels[..., None] if pixels.ndim == 2 else pixels


def images(buf):
    """{tag: (height, width, colorspace, pixels)} of a serialized Summary's images."""
    out = {}
    for tag, value in summary_values(buf).items():
        if 4 not in value:
            continue
        image = parse(value[4][0])
        out[tag] = (image[1][0], image[2][0], image[3][0], decode_png(image[4][0]))
    return out


def test_histogram_matches_numpy_in_tf_default_buckets():
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(500) * 3, [0.0, 1e-13, -1e-13, 2e19, -5e20, 1.0]])
    hist = tf.summary.histogram("weights", tf.constant(values.reshape(2, -1).astype(np.float32)))
    with tf.Session() as sess:
        got = histo(summary_values(sess.run(hist))["weights"])
    values = values.astype(np.float32).astype(np.float64)
    assert (got["min"], got["max"], got["num"]) == (values.min(), values.max(), values.size)
    assert np.isclose(got["sum"], values.sum()) and np.isclose(got["sum_squares"], (values ** 2).sum())
    # bucket i holds [limit[i-1], limit[i]); bucket 0, below -DBL_MAX, is always empty
    limits = tf_default_limits()
    expected = np.concatenate([[0], np.histogram(values, bins=limits)[0]])
    counts = dict(zip(got["bucket_limit"], got["bucket"]))
    assert set(got["bucket_limit"]) <= set(limits) and got["bucket_limit"] == sorted(counts)
    assert {lim: n for lim, n in counts.items() if n} == {lim: n for lim, n in zip(limits, expected) if n}
    # runs of empty buckets are written as one empty bucket at the run's end, as TF does
    ends = [i for i, n in enumerate(expected) if n or i + 1 == len(expected) or expected[i + 1]]
    assert got["bucket_limit"] == limits[ends].tolist() and got["bucket_limit"][-1] == DBL_MAX


def test_histogram_of_ints_and_nan_error():
    hist = tf.summary.histogram("steps", tf.constant(np.arange(-3, 5, dtype=np.int32)), family="f")
    bad = tf.summary.histogram("bad", tf.constant([1.0, np.nan]))
    with tf.Session() as sess:
        got = histo(summary_values(sess.run(hist))["f/f/steps"])   # TF's family tag
        with pytest.raises(tf.errors.InvalidArgumentError, match="Nan in summary histogram for: bad"):
            sess.run(bad)
    assert (got["min"], got["max"], got["num"], got["sum"], got["sum_squares"]) == (-3, 4, 8, 4, 44)
    assert sum(got["bucket"]) == 8
    with pytest.raises(TypeError, match="not bool"):
        tf.summary.histogram("flags", tf.constant([True]))


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_uint8_images_round_trip_through_png(channels):
    pixels = np.random.default_rng(channels).integers(0, 256, (2, 5, 7, channels)).astype(np.uint8)
    summary = tf.summary.image("input", tf.constant(pixels))
    with tf.Session() as sess:
        got = images(sess.run(summary))
    assert list(got) == ["input/image/0", "input/image/1"]   # the batch has only 2 of 3
    for i, (height, width, colorspace, decoded) in enumerate(got.values()):
        assert (height, width, colorspace) == (5, 7, channels)
        np.testing.assert_array_equal(decoded, pixels[i])


def test_float_images_are_scaled_per_image_as_tf_does():
    rng = np.random.default_rng(1)
    positive = rng.random((4, 3, 1)).astype(np.float32) * 4
    mixed = rng.standard_normal((4, 3, 1)).astype(np.float32)
    mixed[0, 0, 0] = np.nan
    batch = tf.constant(np.stack([positive, mixed]))
    one = tf.summary.image("one", batch, max_outputs=1)
    both = tf.summary.image("both", batch, max_outputs=5)
    with tf.Session() as sess:
        first, got = images(sess.run(one)), images(sess.run(both))
    assert list(first) == ["one/image"]
    # all >= 0: largest -> 255; any negative: 0.0 -> 128, largest magnitude -> 1 or 255
    np.testing.assert_array_equal(got["both/image/0"][3],
                                  (positive * (np.float32(255) / positive.max())).astype(np.uint8))
    finite = mixed[np.isfinite(mixed)]
    scale = np.float32(127) / np.abs(finite).max()
    expected = np.where(np.isnan(mixed), 255, mixed * scale + np.float32(128)).astype(np.uint8)
    np.testing.assert_array_equal(got["both/image/1"][3], expected)   # NaN: bad_color red
    np.testing.assert_array_equal(first["one/image"][3], got["both/image/0"][3])


def test_image_checks_shape_and_dtype():
    with pytest.raises(ValueError, match="4-D"):
        tf.summary.image("flat", tf.constant(np.zeros((2, 3, 3), np.float32)))
    with pytest.raises(ValueError, match="1, 3 or 4 channels"):
        tf.summary.image("two", tf.constant(np.zeros((1, 2, 2, 2), np.float32)))
    with pytest.raises(TypeError, match="tf.cast"):
        tf.summary.image("ints", tf.constant(np.zeros((1, 2, 2, 1), np.int32)))
    fed = tf.placeholder(tf.float32)
    summary = tf.summary.image("fed", fed)
    with tf.Session() as sess, pytest.raises(tf.errors.InvalidArgumentError, match="last dim 1, 3, or 4"):
        sess.run(summary, {fed: np.zeros((1, 2, 2, 2), np.float32)})


def test_text_summary_for_tensorboards_text_plugin():
    summary = tf.summary.text("notes", [["lr=0.1", "b"], ["c", "d\u00e9"]])
    with pytest.raises(TypeError, match="no string tensors"):
        tf.summary.text("bad", tf.constant(1.0))
    with tf.Session() as sess:
        value = summary_values(sess.run(summary))["notes"]
    assert parse(parse(value[9][0])[1][0])[1] == [b"text"]     # metadata.plugin_data.plugin_name
    tensor = parse(value[8][0])
    assert tensor[1] == [7]                                     # DT_STRING
    assert [parse(d)[1][0] for d in parse(tensor[2][0])[2]] == [2, 2]
    assert tensor[8] == [b"lr=0.1", b"b", b"c", "d\u00e9".encode()]


def test_summary_names_are_unique_scopes_and_all_kinds_merge_into_event_files(tmp_path):
    first = tf.summary.scalar("loss", tf.constant(1.0))
    second = tf.summary.scalar("loss", tf.constant(2.0), family="eval")
    third = tf.summary.scalar("loss", tf.constant(3.0))
    assert [t.op.name for t in (first, second, third)] == ["loss", "eval/loss", "loss_1"]
    tf.summary.histogram("w", tf.constant([1.0, 2.0]))
    tf.summary.image("x", tf.constant(np.zeros((1, 2, 2, 3), np.uint8)), max_outputs=1)
    tf.summary.text("t", "hi")
    tf.summary.scalar("private", tf.constant(0.0), collections=[])
    merged = tf.summary.merge_all()
    with tf.summary.FileWriter(str(tmp_path)) as writer, tf.Session() as sess:
        writer.add_summary(sess.run(merged), 3)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    event = parse(read_records(path)[1])
    assert event[2] == [3]
    assert list(summary_values(event[5][0])) == ["loss", "eval/eval/loss", "loss_1", "w",
                                                 "x/image", "t"]


async def test_summaries_run_on_a_cluster_task(zmtf_cluster):
    with tf.device("/job:worker/task:1"):
        values = tf.constant([1.0, 2.0]) * 2.0
        tf.summary.histogram("v", values)
        tf.summary.image("i", tf.reshape(values, [1, 1, 2, 1]))
        tf.summary.text("t", ["a", "b"])
    merged = tf.summary.merge_all()
    async with tf.AsyncSession(zmtf_cluster.target("worker", 0)) as sess:
        got = await sess.run(merged)
    assert histo(summary_values(got)["v"])["sum"] == 6.0
    np.testing.assert_array_equal(images(got)["i/image/0"][3], [[[127], [255]]])
    assert parse(summary_values(got)["t"][8][0])[8] == [b"a", b"b"]


def test_summary_iterator_reads_back_what_file_writer_wrote(tmp_path):
    x = tf.placeholder(tf.float32, [None])
    tf.summary.scalar("loss", tf.reduce_mean(x))
    tf.summary.histogram("values", x)
    merged = tf.summary.merge_all()
    writer = tf.summary.FileWriter(str(tmp_path))
    with tf.Session() as sess:
        for step in range(3):
            writer.add_summary(sess.run(merged, {x: np.arange(5.0) + step}), global_step=step)
    writer.close()
    [path] = tmp_path.glob("events.out.tfevents.*")
    events = list(tf.train.summary_iterator(str(path)))
    assert events[0].file_version == "brain.Event:2"
    written = [(e.step, {v.tag: v for v in e.summary.value}) for e in events[1:]]
    assert [step for step, _ in written] == [0, 1, 2]
    assert [values["loss"].simple_value for _, values in written] == [2.0, 3.0, 4.0]
    histo = written[2][1]["values"].histo
    assert (histo.num, histo.min, histo.max, histo.sum) == (5.0, 2.0, 6.0, 20.0)
    assert written[0][1]["values"].HasField("histo") and not written[0][1]["values"].HasField("image")


def test_summary_iterator_refuses_a_corrupt_file(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.close()
    [path] = tmp_path.glob("events.out.tfevents.*")
    data = bytearray(path.read_bytes())
    data[-6] ^= 0xFF   # inside the first record's payload: its CRC no longer matches
    path.write_bytes(bytes(data))
    with pytest.raises(tf.errors.DataLossError):
        list(tf.train.summary_iterator(str(path)))

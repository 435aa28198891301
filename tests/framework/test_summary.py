"""tf.summary: scalar summaries written as TFRecord event files that we read back and check."""

import struct

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.summary_proto import crc32c


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()


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
    return {parse(v)[1][0].decode(): parse(v)[2][0] for v in summary.get(1, [])}


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
    assert [e[2][0] for e in events[1:]] == [0, 1, 2]
    assert scalars(events[1]) == {"loss": 0.25, "train/lr": 0.5}
    with pytest.raises(ValueError, match="needs a scalar"):
        tf.summary.scalar("bad", tf.constant([1.0, 2.0]))


def test_monitored_training_session_writes_summaries(tmp_path):
    w = tf.Variable(1.0)
    loss = tf.square(w)
    tf.summary.scalar("loss", loss)
    step = tf.train.get_or_create_global_step()
    train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    with tf.train.MonitoredTrainingSession(checkpoint_dir=str(tmp_path), save_summaries_steps=2,
                                           hooks=[tf.train.StopAtStepHook(last_step=5)]) as sess:
        while not sess.should_stop():
            sess.run(train)
    (path,) = tmp_path.glob("events.out.tfevents.*")
    written = [parse(r) for r in read_records(path)][1:]
    losses = [scalars(e)["loss"] for e in written]
    assert len(written) >= 2 and losses == sorted(losses, reverse=True)   # the loss fell
    assert np.isclose(losses[0], 1.0, atol=0.4)

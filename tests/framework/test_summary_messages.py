"""tf.Summary, tf.Event, tf.SessionLog and tf.HistogramProto built in Python, written by
FileWriter and read back by summary_iterator (the bytes match TF 2.21's protobuf output)."""

from __future__ import annotations

import pytest

import zmtf as tf


def _events(writer):
    writer.close()
    return list(tf.train.summary_iterator(writer._path))[1:]  # after the file_version event


def test_custom_scalar_from_an_eval_loop(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.5)]), 3)
    summary = tf.Summary()
    summary.value.add(tag="loss", simple_value=0.0)  # a zero is still written
    writer.add_summary(summary, 4)
    events = _events(writer)
    assert [(e.step, e.summary.value[0].tag, e.summary.value[0].simple_value) for e in events] == [
        (3, "acc", 0.5), (4, "loss", 0.0)]
    assert events[1].summary.value[0].HasField("simple_value")


def test_serialized_bytes_match_protobuf():
    summary = tf.Summary(value=[tf.Summary.Value(tag="acc", simple_value=0.9)])
    # what TF 2.21's tf.compat.v1.Summary(...).SerializeToString() returns
    assert summary.SerializeToString() == b"\n\n\n\x03acc\x15fff?"
    log = tf.SessionLog(status=tf.SessionLog.CHECKPOINT, checkpoint_path="/x/ckpt", msg="m")
    assert log.SerializeToString() == b"\x08\x03\x12\x07/x/ckpt\x1a\x01m"


def test_histogram_round_trips():
    histo = tf.HistogramProto(min=1, max=2, num=3, sum=4, sum_squares=6, bucket_limit=[1.5, 2.5],
                              bucket=[1, 2])
    summary = tf.Summary(value=[tf.Summary.Value(tag="h", histo=histo)])
    parsed = tf.Summary.FromString(summary.SerializeToString())
    assert parsed.value[0].histo == histo
    assert parsed.value[0].WhichOneof("value") == "histo"


def test_add_event_and_session_log(tmp_path):
    writer = tf.summary.FileWriter(str(tmp_path))
    writer.add_session_log(tf.SessionLog(status=tf.SessionLog.START), 6)
    writer.add_event(tf.Event(wall_time=12.5, step=7, summary=tf.Summary(
        value=[tf.Summary.Value(tag="e", simple_value=-1.5)])))
    start, event = _events(writer)
    assert (start.step, start.WhichOneof("what"), start.session_log.status) == (6, "session_log", 1)
    assert (event.wall_time, event.step, event.summary.value[0].simple_value) == (12.5, 7, -1.5)


def test_parse_from_string_fills_the_message():
    event = tf.Event()
    event.ParseFromString(tf.Event(step=9, file_version="brain.Event:2").SerializeToString())
    assert (event.step, event.file_version) == (9, "brain.Event:2")


def test_malformed_bytes_raise_invalid_argument():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not a valid Summary"):
        tf.Summary.FromString(b"\n\x05\n\x03a")

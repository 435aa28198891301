"""MonitoredTrainingSession(checkpoint_dir=...) writes what TensorBoard shows, as TF1 does:
the graph and ``global_step/sec``, read back here by tensorboard's own event reader."""

from __future__ import annotations

import pytest

import zmtf as tf
from zmtf.testing import free_tcp_ports

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _train(master: str, logdir: str, steps: int) -> None:
    step = tf.train.get_or_create_global_step()
    with tf.device("/job:worker/task:0" if master else None):
        w = tf.Variable(1.0)
        loss = tf.square(w - 3.0)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
    with tf.train.MonitoredTrainingSession(
            master=master, checkpoint_dir=logdir, log_step_count_steps=5,
            save_checkpoint_secs=None, save_checkpoint_steps=1000,
            hooks=[tf.train.StopAtStepHook(last_step=steps)]) as sess:
        while not sess.should_stop():
            sess.run(train_op)


def _load(logdir: str):
    events = event_accumulator.EventAccumulator(logdir)
    events.Reload()
    return events


@pytest.fixture
def fresh_graph():
    with tf.Graph().as_default() as graph:
        yield graph
    tf.summary.FileWriterCache.clear()


def test_monitored_training_session_writes_the_graph_and_global_step_per_sec(tmp_path, fresh_graph):
    _train("", str(tmp_path), steps=21)
    events = _load(str(tmp_path))
    tags = events.Tags()
    assert tags["graph"] is True
    assert "global_step/sec" in tags["scalars"]
    rates = events.Scalars("global_step/sec")
    assert [r.step for r in rates] == [6, 11, 16, 21]
    assert all(r.value > 0 for r in rates)
    names = {node.name for node in events.Graph().node}
    assert "global_step" in names
    assert len(list(tmp_path.glob("events.out.tfevents.*"))) == 1   # one shared writer


def test_the_rate_written_is_the_global_steps_through_a_server(tmp_path, fresh_graph):
    port = free_tcp_ports(1)[0]
    server = tf.train.Server({"worker": [f"127.0.0.1:{port}"]}, "worker", 0)
    try:
        _train(server.target, str(tmp_path), steps=11)
    finally:
        server.stop()
    events = _load(str(tmp_path))
    assert [r.step for r in events.Scalars("global_step/sec")] == [6, 11]
    assert events.Tags()["graph"] is True


def test_step_counter_hook_takes_tf1_arguments(tmp_path, fresh_graph):
    tf.train.get_or_create_global_step()
    tf.train.StepCounterHook(every_n_secs=1, output_dir=str(tmp_path))
    tf.train.StepCounterHook(summary_writer=tf.summary.FileWriterCache.get(str(tmp_path)))
    assert tf.summary.FileWriterCache.get(str(tmp_path)) is tf.summary.FileWriterCache.get(str(tmp_path))
    with pytest.raises(ValueError, match="exactly one"):
        tf.train.StepCounterHook(every_n_steps=None)
    with pytest.raises(ValueError, match="exactly one"):
        tf.train.StepCounterHook(every_n_steps=10, every_n_secs=1)

"""RunMetadata step stats from every task of a cluster, the Chrome-trace Timeline and
ProfilerHook."""

import json

import numpy as np
import pytest
from tensorboard.compat.proto import config_pb2

import zmtf as tf
from zmtf.formats.step_stats_proto import node_runs
from zmtf.runtime.step_stats import from_plain
from zmtf.testing import running_servers


@pytest.fixture
def two_tasks():
    """[ps, worker] servers on tcp://127.0.0.1."""
    tf.reset_default_graph()
    with running_servers() as servers:
        yield [servers[("ps", 0)], servers[("worker", 0)]]


def _model():
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones((3, 3), np.float32), name="w")
        doubled = tf.multiply(w, 2.0, name="doubled")
        step = tf.train.get_or_create_global_step()
    with tf.device("/job:worker/task:0"):
        loss = tf.reduce_sum(tf.matmul(doubled, doubled, name="product"), name="loss")
    return w, step, loss


def test_a_traced_remote_run_reports_every_tasks_nodes(two_tasks):
    w, _, loss = _model()
    with tf.Session(two_tasks[1].target) as sess:
        sess.run(w.initializer)
        metadata = tf.RunMetadata()
        assert sess.run(loss, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                        run_metadata=metadata) == pytest.approx(108.0)
        untraced = tf.RunMetadata()
        sess.run(loss, run_metadata=untraced)
    where = {s.node_name: s.device for s in node_runs(metadata.step_stats)}
    assert where["doubled"].startswith("/job:ps/") and where["product"].startswith("/job:worker/")
    assert all(s.end >= s.start for s in node_runs(metadata.step_stats))
    assert not untraced.HasField("step_stats")   # tracing costs nothing unless asked for
    # TF's own classes read the 2-task step: both tasks' devices, the ps's RunGraph span
    # stating its clock correction (already applied to its times), the same bytes back
    theirs = config_pb2.RunMetadata.FromString(metadata.SerializeToString())
    assert theirs.SerializeToString(deterministic=True) == metadata.SerializeToString()
    devices = {d.device.split("/device:")[0] for d in theirs.step_stats.dev_stats}
    assert devices == {"/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0"}
    spans = [n.timeline_label for d in theirs.step_stats.dev_stats for n in d.node_stats
             if n.node_name == "RunGraph" and d.device.startswith("/job:ps/")]
    assert len(spans) == 1 and " (clock offset " in spans[0] and " us, within ±" in spans[0]


def test_step_stats_from_the_network_are_checked():
    good = {"node": "a", "device": "/cpu:0", "thread": "t", "start": 1.0, "end": 2.0}
    assert from_plain([good], "peer")[0].node_name == "a"
    for bad in ([{**good, "end": 0.5}], [{**good, "node": 3}], [{**good, "extra": 1}], {"x": 1},
                [{**good, "start": float("nan")}]):
        with pytest.raises(tf.errors.InvalidArgumentError, match="from peer"):
            from_plain(bad, "peer")


def test_timeline_has_a_row_per_device_and_an_event_per_node(two_tasks):
    w, _, loss = _model()
    with tf.Session(two_tasks[1].target) as sess:
        sess.run(w.initializer)
        metadata = tf.RunMetadata()
        sess.run(loss, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
    from zmtf.training.timeline import Timeline

    events = json.loads(Timeline(metadata.step_stats).generate_chrome_trace_format())["traceEvents"]
    devices = {e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert {d.split("/device:")[0] for d in devices} == {"/job:ps/replica:0/task:0",
                                                         "/job:worker/replica:0/task:0"}
    nodes = [e for e in events if e["ph"] == "X"]
    assert {e["name"] for e in nodes} >= {"doubled", "product"}
    assert min(e["ts"] for e in nodes) == 0 and all(e["dur"] >= 0 for e in nodes)


def test_profiler_hook_writes_a_timeline_every_n_steps(two_tasks, tmp_path):
    w, step, loss = _model()
    with tf.device("/job:worker/task:0"):
        train = tf.train.GradientDescentOptimizer(0.001).minimize(loss, global_step=step)
    hook = tf.train.ProfilerHook(save_steps=3, output_dir=str(tmp_path))
    with tf.train.MonitoredTrainingSession(master=two_tasks[1].target, hooks=[hook]) as sess:
        for _ in range(7):
            sess.run(train)
    assert sorted(p.name for p in tmp_path.glob("timeline-*.json")) == ["timeline-3.json", "timeline-6.json"]
    events = json.loads((tmp_path / "timeline-3.json").read_text())["traceEvents"]
    assert any(e["name"] == "product" for e in events)
    with pytest.raises(ValueError, match="exactly one"):
        tf.train.ProfilerHook(output_dir=str(tmp_path))

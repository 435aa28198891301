"""One merged timeline per distributed step: a 1 ps + 2 worker training step traced with
FULL_TRACE gives every task's node stats on the client's clock (with the stated bound),
send->recv flows for every tensor that crossed tasks, TF1's dev_stats shape, and a Chrome
trace that follows the Trace Event Format; TF1's python.client import paths."""

import json
import time
from collections import defaultdict

import numpy as np

import zmtf as tf
from zmtf.formats.step_stats_proto import node_runs
from zmtf.testing import running_servers
from zmtf.training.timeline import clock_bounds, task_of, transfers

PS, W0, W1 = "/job:ps/replica:0/task:0", "/job:worker/replica:0/task:0", "/job:worker/replica:0/task:1"


def _in_graph_training_step():
    """Variables on the ps, a tower per worker, the gradients averaged and applied on the ps."""
    with tf.device("/job:ps/task:0"):
        w = tf.Variable(np.ones((4, 4), np.float32), name="w")
    losses = []
    for k in range(2):
        with tf.device(f"/job:worker/task:{k}"):
            x = tf.constant(np.full((8, 4), k + 1.0, np.float32), name=f"x{k}")
            losses.append(tf.reduce_sum(tf.square(tf.matmul(x, w)), name=f"loss{k}"))
    with tf.device("/job:ps/task:0"):
        loss = tf.add_n(losses, name="loss")
        train = tf.train.GradientDescentOptimizer(1e-4).minimize(loss)
    return w, loss, train


def _check_trace_event_format(trace, slack_us):
    """Required keys per phase, flow ids paired s->f (the end no earlier than the start, but
    for ``slack_us``: the clocks' bound), timestamps monotone per (pid, tid)."""
    events = trace["traceEvents"]
    named = {(e["pid"]) for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    flows = defaultdict(list)
    last = {}
    for e in events:
        assert {"name", "ph", "pid"} <= e.keys(), e
        if e["ph"] == "M":
            assert isinstance(e["args"], dict)
            continue
        assert {"ts", "tid", "cat"} <= e.keys() and e["pid"] in named and (e["pid"], e["tid"]) in threads, e
        assert e["ts"] >= last.get((e["pid"], e["tid"]), 0.0), e   # monotone per thread row
        last[(e["pid"], e["tid"])] = e["ts"]
        if e["ph"] == "X":
            assert e["dur"] >= 0
        elif e["ph"] in "sf":
            flows[e["id"]].append(e)
        else:
            raise AssertionError(f"unexpected phase {e['ph']}")
    for pair in flows.values():
        pair.sort(key=lambda e: e["ph"] != "s")
        assert [e["ph"] for e in pair] == ["s", "f"] and pair[1]["bp"] == "e"
        assert pair[0]["ts"] <= pair[1]["ts"] + slack_us and pair[0]["pid"] != pair[1]["pid"]
    return flows


def test_a_traced_cluster_step_is_one_timeline_on_the_clients_clock():
    tf.reset_default_graph()
    with running_servers({"ps": 1, "worker": 2}) as servers:
        w, loss, train = _in_graph_training_step()
        with tf.Session(servers[("worker", 0)].target) as sess:
            sess.run(w.initializer)
            sess.run(train)   # warm: the partitions are registered
            metadata = tf.RunMetadata()
            before = time.time()
            sess.run(train, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                     run_metadata=metadata)
            after = time.time()
    stats = node_runs(metadata.step_stats)
    graph = tf.get_default_graph()

    # every task, each within the step's wall window on this clock, give or take its bound
    bounds = clock_bounds(stats)
    assert set(bounds) == {PS, W0, W1} and all(0 <= b < 1.0 for b in bounds.values())
    for t in stats:
        slack = bounds[task_of(t.device)] + 0.002
        assert before - slack <= t.start <= t.end <= after + slack, t

    # every tensor that crossed tasks (an input from a node another task ran) has a flow
    ran = {t.node_name: task_of(t.device) for t in stats if not t.node_name.startswith(("_", "Run"))}
    crossed = set()
    for name, task in ran.items():
        for x in graph.get_operation_by_name(name).inputs:
            if ran.get(x.op.name, task) != task:
                crossed.add((x.name.replace(":", "_"), ran[x.op.name], task))
    pairs = transfers(stats)
    flowed = {(r.node_name[len("_recv/"):r.node_name.rindex("/from")], task_of(s.device), task_of(r.device))
              for s, r in pairs}
    assert crossed and crossed <= flowed, crossed - flowed
    assert {(task_of(s.device), task_of(r.device)) for s, r in pairs} >= {(PS, W1), (W1, PS), (PS, W0), (W0, PS)}
    assert all(r.bytes > 0 for s, r in pairs if not r.node_name.startswith("_recv/^"))

    # TF1's shape
    dev_stats = metadata.step_stats.dev_stats
    assert {task_of(d.device) for d in dev_stats} == {PS, W0, W1}
    for d in dev_stats:
        assert d.node_stats and all(isinstance(n.node_name, str) and n.timeline_label for n in d.node_stats)
        starts = [n.all_start_micros for n in d.node_stats]
        assert starts == sorted(starts)
        assert all(0 <= n.op_start_rel_micros <= n.op_end_rel_micros <= n.all_end_rel_micros
                   for n in d.node_stats)

    # the Chrome trace, through TF1's import path
    from zmtf.python.client import timeline

    trace = json.loads(timeline.Timeline(metadata.step_stats).generate_chrome_trace_format())
    slack_us = 2e6 * max(bounds.values()) + 1.0
    flows = _check_trace_event_format(trace, slack_us)
    assert len(flows) == len(pairs) and all(f[0]["args"]["wire_us"] >= -slack_us for f in flows.values())
    assert sum(f[0]["args"]["bytes"] for f in flows.values()) >= 4 * 4 * 4 * 4   # w twice, 2 grads
    assert set(trace["otherData"]["clock_bound_us"]) == {PS, W0, W1}
    pids = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "process_name"}
    assert {task_of(p) for p in pids} == {PS, W0, W1}


def test_run_metadata_and_device_lib_have_tf1s_shape():
    assert tf.RunMetadata().step_stats.dev_stats == []
    from zmtf.python.client import device_lib

    devices = device_lib.list_local_devices()
    assert devices[-1].name == "/device:CPU:0" and devices[-1].device_type == "CPU"
    assert tf.python.client.timeline.Timeline is not None

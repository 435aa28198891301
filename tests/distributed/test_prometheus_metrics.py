"""Prometheus metrics (--metrics-port): a live server scraped over HTTP, its exposition parsed
with prometheus_client's own parser; counters move with the steps a client runs."""

import json
import subprocess
import sys
import time
import urllib.request

import numpy as np
import pytest
import zmq
from prometheus_client.parser import text_string_to_metric_families

import zmtf as tf
from zmtf.framework.errors import UnavailableError
from zmtf.testing import free_tcp_ports

STEPS = 3


def scrape(port):
    """{(sample name, frozenset of labels): value} of http://127.0.0.1:port/metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain")
        text = reply.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples, name, **labels):
    """A sample's value; 0 when it is not there yet (a counter not touched)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def total(samples, name, **labels):
    """The sum of ``name`` over every sample whose labels include ``labels``."""
    return sum(v for (n, have), v in samples.items()
               if n == name and frozenset(labels.items()) <= have)


def run_steps(target, count):
    with tf.Graph().as_default():
        x = tf.placeholder(tf.float32, [4])
        y = x * 2.0
        with tf.Session(target) as sess:
            for k in range(count):
                np.testing.assert_allclose(sess.run(y, {x: np.full(4, k, np.float32)}), 2.0 * k)


def send_garbage(address):
    """A malformed message (not msgpack) to the server; waits for its error reply."""
    with zmq.Context() as ctx, ctx.socket(zmq.DEALER) as sock:
        sock.setsockopt(zmq.LINGER, 0)
        sock.connect(f"tcp://{address}")
        sock.send_multipart([b"\xc1 this is not a zmtf message"])
        assert sock.poll(10_000), "no error reply to a malformed message"
        sock.recv_multipart()


def test_a_server_process_serves_metrics_that_move_with_its_steps(tmp_path):
    port, metrics_port = free_tcp_ports(2)
    address = f"127.0.0.1:{port}"
    log = open(tmp_path / "server.log", "w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "zmtf.server", "--cluster", json.dumps({"worker": [address]}),
         "--job", "worker", "--task", "0", "--metrics-port", str(metrics_port)],
        stderr=log, stdout=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while "listening on" not in (tmp_path / "server.log").read_text():
            assert proc.poll() is None and time.time() < deadline, \
                (tmp_path / "server.log").read_text()
            time.sleep(0.05)
        assert f"metrics on http://127.0.0.1:{metrics_port}/metrics" in \
            (tmp_path / "server.log").read_text()
        before = scrape(metrics_port)
        assert value(before, "process_resident_memory_bytes") > 0
        run_steps(f"grpc://{address}", STEPS)
        after = scrape(metrics_port)
        labels = {"task": "worker-0", "kind": "local"}
        assert value(after, "zmtf_steps_total", **labels) - \
            value(before, "zmtf_steps_total", **labels) == STEPS
        assert value(after, "zmtf_step_seconds_count", **labels) - \
            value(before, "zmtf_step_seconds_count", **labels) == STEPS
        for name in ("zmtf_peer_received_bytes_total", "zmtf_peer_sent_bytes_total",
                     "zmtf_peer_received_messages_total", "zmtf_peer_sent_messages_total"):
            assert total(after, name) > total(before, name), name
        assert value(after, "zmtf_open_sessions", task="worker-0") == 0   # closed by now

        refused = "zmtf_refused_requests_total"
        assert total(after, refused) == 0
        send_garbage(address)
        garbage = scrape(metrics_port)
        reasons = {dict(labels)["reason"]: v for (n, labels), v in garbage.items() if n == refused}
        assert reasons == {"InvalidArgumentError": 1.0}
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


def test_in_process_servers_each_serve_their_own_task():
    ports = free_tcp_ports(4)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    ps = tf.train.Server(cluster, "ps", 0, metrics_port=ports[2])
    worker = tf.train.Server(cluster, "worker", 0, metrics_port=ports[3])
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                v = tf.Variable(np.ones(1000, np.float32))
            with tf.device("/job:worker/task:0"):
                y = tf.reduce_sum(v * 2.0)
            with tf.Session(worker.target) as sess:
                sess.run(v.initializer)
                start_w, start_ps = scrape(ports[3]), scrape(ports[2])
                assert value(start_w, "zmtf_open_sessions", task="worker-0") == 1
                for _ in range(STEPS):
                    assert sess.run(y) == 2000.0
                end_w, end_ps = scrape(ports[3]), scrape(ports[2])
        kind = {"task": "worker-0", "kind": "distributed"}
        assert value(end_w, "zmtf_steps_total", **kind) - \
            value(start_w, "zmtf_steps_total", **kind) == STEPS
        assert total(end_ps, "zmtf_steps_total") == 0   # the ps ran partitions, no steps
        assert value(end_ps, "zmtf_run_graph_seconds_count", task="ps-0") - \
            value(start_ps, "zmtf_run_graph_seconds_count", task="ps-0") == STEPS
        # the worker called the ps; its 4000-byte variable came back each step
        to_ps = {"task": "worker-0", "peer": "ps-0"}
        grown = value(end_w, "zmtf_peer_received_bytes_total", **to_ps) - \
            value(start_w, "zmtf_peer_received_bytes_total", **to_ps)
        assert grown >= STEPS * 4000
        assert value(end_w, "zmtf_peer_sent_messages_total", **to_ps) > \
            value(start_w, "zmtf_peer_sent_messages_total", **to_ps)
        assert value(end_w, "zmtf_requests_in_flight", task="worker-0") == 0
        assert value(end_w, "zmtf_inflight_limit_bytes", task="worker-0") > 0
        assert value(end_ps, "process_resident_memory_bytes") > 0
    finally:
        worker.stop()
        ps.stop()
    with pytest.raises(OSError):   # stop() closed the endpoint
        urllib.request.urlopen(f"http://127.0.0.1:{ports[3]}/metrics", timeout=2)


def test_metrics_are_off_by_default_and_a_taken_port_is_refused():
    port, metrics_port = free_tcp_ports(2)
    cluster = {"worker": [f"127.0.0.1:{port}"]}
    plain = tf.train.Server(cluster, "worker", 0)
    try:
        assert plain._core.metrics is None
    finally:
        plain.stop()
    first = tf.train.Server(cluster, "worker", 0, metrics_port=metrics_port)
    try:
        other = free_tcp_ports(1)[0]
        with pytest.raises(UnavailableError, match=f"cannot serve metrics on 127.0.0.1:{metrics_port}"):
            tf.train.Server({"worker": [f"127.0.0.1:{other}"]}, "worker", 0,
                            metrics_port=metrics_port)
    finally:
        first.stop()
    with pytest.raises(ValueError, match="metrics_port"):
        tf.train.Server(cluster, "worker", 0, metrics_port=70000, start=False)


def test_the_example_dashboard_names_only_metrics_a_server_serves():
    import re
    from pathlib import Path

    port, metrics_port = free_tcp_ports(2)
    server = tf.train.Server({"worker": [f"127.0.0.1:{port}"]}, "worker", 0,
                             metrics_port=metrics_port)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
            families = {f.name for f in text_string_to_metric_families(r.read().decode())}
    finally:
        server.stop()
    dashboard = Path(__file__).parents[2] / "examples" / "grafana_dashboard.json"
    exprs = [t["expr"] for p in json.loads(dashboard.read_text())["panels"] for t in p["targets"]]
    named = {re.sub(r"_(total|bucket)$", "", n)
             for e in exprs for n in re.findall(r"\b(?:zmtf|process)_\w+", e)}
    assert len(named) >= 10 and named <= families, named - families


def test_a_ping_to_a_peer_busy_with_a_long_step_is_timed(monkeypatch):
    """A call that waits half the liveness bound with nothing heard from its peer sends it a
    Ping (channel.py); its round trip lands in zmtf_peer_ping_rtt_seconds{peer}."""
    import threading

    monkeypatch.setenv("ZMTF_LIVENESS_TIMEOUT", "2")   # a Ping after 1 s of silence
    ports = free_tcp_ports(3)
    cluster = {"ps": [f"127.0.0.1:{ports[0]}"], "worker": [f"127.0.0.1:{ports[1]}"]}
    ps = tf.train.Server(cluster, "ps", 0)
    worker = tf.train.Server(cluster, "worker", 0, metrics_port=ports[2])
    try:
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                queue = tf.FIFOQueue(1, tf.float32)
                enqueue = queue.enqueue(5.0)
                dequeued = queue.dequeue()
            with tf.device("/job:worker/task:0"):
                y = dequeued + 1.0
            with tf.Session(worker.target) as sess:
                got = []
                waiter = threading.Thread(target=lambda: got.append(sess.run(y)))
                waiter.start()
                time.sleep(2.5)   # the ps's partition blocks on the empty queue meanwhile
                sess.run(enqueue)
                waiter.join(30)
                assert got == [6.0]
        samples = scrape(ports[2])
    finally:
        worker.stop()
        ps.stop()
    pings = value(samples, "zmtf_peer_ping_rtt_seconds_count", task="worker-0", peer="ps-0")
    assert pings >= 1
    assert 0 < value(samples, "zmtf_peer_ping_rtt_seconds_sum", task="worker-0", peer="ps-0") \
        < pings * 2.0

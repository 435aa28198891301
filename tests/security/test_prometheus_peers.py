"""Metrics under CURVE: traffic is labelled by the sender's key (a task of the cluster, or
"client" for every client key), never by a client's own name or address; a request a client
key may not send counts as refused under its error class."""

import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

import zmtf as tf
from zmtf.distributed import security
from zmtf.framework.graph_io import graph_to_dict
from zmtf.testing import free_tcp_ports
from zmtf.wire import messages as m

from identity_helpers import RawCaller, ServerProcess, credential_path, make_cluster


def peer_bytes(port):
    """{(metric, peer): value} of the per-peer counters a server serves, and its refusals."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    found = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if "peer" in s.labels and s.name.endswith("_total"):
                found[(s.name, s.labels["peer"])] = s.value
            elif s.name == "zmtf_refused_requests_total":
                found[(s.name, s.labels["reason"])] = s.value
    return found


def test_traffic_is_labelled_by_key_and_a_forbidden_request_is_counted(tmp_path, monkeypatch):
    directory = make_cluster(tmp_path, [("ps", 0), ("worker", 0)], ["alice"])
    ps_port, worker_port, ps_metrics, worker_metrics = free_tcp_ports(4)
    spec = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{worker_port}"]}
    servers = []
    try:
        servers.append(ServerProcess(spec, "ps", 0, directory, "--metrics-port", str(ps_metrics)))
        servers.append(ServerProcess(spec, "worker", 0, directory, "--metrics-port",
                                     str(worker_metrics)))
        monkeypatch.delenv(security.ENV, raising=False)
        monkeypatch.setenv(security.KEY_ENV, str(credential_path(directory, "client", "alice")))
        with tf.Graph().as_default():
            with tf.device("/job:ps/task:0"):
                a = tf.constant(3.0)
            with tf.device("/job:worker/task:0"):
                b = a * 2.0
            with tf.Session(servers[1].target) as sess:
                assert sess.run(b) == 6.0

        on_worker, on_ps = peer_bytes(worker_metrics), peer_bytes(ps_metrics)
        assert on_worker[("zmtf_peer_received_bytes_total", "client")] > 0   # alice's requests
        assert on_worker[("zmtf_peer_sent_bytes_total", "ps-0")] > 0         # its RunGraph
        assert on_ps[("zmtf_peer_received_bytes_total", "worker-0")] > 0     # by the worker's key
        for found in (on_worker, on_ps):
            peers = {label for (name, label) in found if name != "zmtf_refused_requests_total"}
            assert peers <= {"ps-0", "worker-0", "client"}, peers   # never "alice", no address

        graph = tf.Graph()
        with graph.as_default(), tf.device("/job:ps/task:0"):
            tf.constant(1.0, name="c")
        graph_dict, arrays = graph_to_dict(graph)
        caller = RawCaller(servers[0].target, credential_path(directory, "client", "alice"))
        try:
            with pytest.raises(tf.errors.PermissionDeniedError):
                caller.call(m.RegisterGraph(session="s", graph_key="g", graph=graph_dict,
                                            tensors=arrays))
        finally:
            caller.close()
        assert peer_bytes(ps_metrics)[("zmtf_refused_requests_total", "PermissionDeniedError")] == 1
    finally:
        for server in servers:
            server.stop()

"""tf.distribute.cluster_resolver over TF_CONFIG variants (expected values from TF 2.21's
resolvers on the same inputs), master() targets that open sessions on a real local cluster,
ConfigProto.cluster_def checked by the master, and tf.train.Server(ServerDef)."""

import json

import numpy as np
import pytest

import zmtf as tf
from zmtf.framework.errors import InvalidArgumentError
from zmtf.testing import free_tcp_ports

CR = tf.distribute.cluster_resolver
CLUSTER = {"ps": ["h:1"], "worker": ["h:2", "h:3"]}


def set_tf_config(monkeypatch, **config):
    monkeypatch.setenv("TF_CONFIG", json.dumps(config))


def test_contrib_aliases_the_same_classes():
    contrib = tf.contrib.cluster_resolver
    assert contrib.TFConfigClusterResolver is CR.TFConfigClusterResolver
    assert contrib.UnionClusterResolver is CR.UnionResolver
    assert issubclass(CR.SimpleClusterResolver, CR.ClusterResolver)
    with pytest.raises(AttributeError, match="SimpleClusterResolver or TF_CONFIG"):
        contrib.KubernetesClusterResolver  # noqa: B018
    with pytest.raises(TypeError):
        CR.ClusterResolver()


def test_tf_config_unset_means_no_cluster(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    resolver = CR.TFConfigClusterResolver()
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == (None, None, None)
    assert resolver.environment is None and resolver.master() == ""
    assert not resolver.cluster_spec()


def test_tf_config_task_rpc_layer_and_master(monkeypatch):
    set_tf_config(monkeypatch, cluster=CLUSTER, task={"type": "worker", "index": "1"},
                  rpc_layer="grpc", environment="cloud")
    resolver = CR.TFConfigClusterResolver()
    assert (resolver.task_type, resolver.task_id, resolver.rpc_layer) == ("worker", 1, "grpc")
    assert resolver.environment is None   # TF does not read TF_CONFIG's "environment"
    assert resolver.cluster_spec().as_dict() == CLUSTER
    assert resolver.master() == "grpc://h:3"
    assert resolver.master("ps", 0) == "grpc://h:1"
    assert resolver.master("ps", 0, rpc_layer="zz") == "zz://h:1"


def test_tf_config_is_read_again_on_every_query(monkeypatch):
    resolver = CR.TFConfigClusterResolver()
    set_tf_config(monkeypatch, cluster=CLUSTER, task={"type": "ps", "index": 0})
    assert resolver.master() == "h:1"      # no rpc layer: a bare host:port, as TF
    set_tf_config(monkeypatch, cluster=CLUSTER, task={"type": "worker", "index": 0})
    assert (resolver.task_type, resolver.master()) == ("worker", "h:2")


def test_arguments_override_tf_config(monkeypatch):
    set_tf_config(monkeypatch, cluster=CLUSTER, task={"type": "worker", "index": 0},
                  rpc_layer="grpc")
    resolver = CR.TFConfigClusterResolver(task_type="ps", task_id=0, rpc_layer="zmtf",
                                          environment="google")
    assert (resolver.master(), resolver.environment) == ("zmtf://h:1", "google")
    resolver.task_type, resolver.task_id = "worker", 1
    assert resolver.master() == "zmtf://h:3"


@pytest.mark.parametrize("config,master", [
    ({"cluster": {"chief": ["c:1"]}, "task": {"type": "chief", "index": 0}}, ""),
    ({"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "chief", "index": 0}},
     "c:1"),
    ({"cluster": CLUSTER, "task": {"type": "evaluator", "index": 0},
      "session_master": "grpc://e:9"}, "grpc://e:9"),
    ({"task": {"type": "evaluator", "index": 0}}, ""),
])
def test_master_for_chief_and_evaluator(monkeypatch, config, master):
    set_tf_config(monkeypatch, **config)
    assert CR.TFConfigClusterResolver().master() == master


@pytest.mark.parametrize("text,error,match", [
    ("{", ValueError, "TF_CONFIG environment variable is not valid JSON"),
    ("[1]", ValueError, "must be a JSON object"),
    ('{"cluster": {"worker": "h:1"}}', TypeError, "wrap a single address in a list"),
    ('{"cluster": {"worker": [7]}}', TypeError, "/job:worker/task:0: address 7 must be a string"),
])
def test_malformed_tf_config_cluster(monkeypatch, text, error, match):
    monkeypatch.setenv("TF_CONFIG", text)
    with pytest.raises(error, match=match):
        CR.TFConfigClusterResolver().cluster_spec()


@pytest.mark.parametrize("task,match", [
    (3, "'task' must be an object"),
    ({"type": "worker", "index": "x"}, "task index 'x'"),
])
def test_malformed_tf_config_task(monkeypatch, task, match):
    set_tf_config(monkeypatch, task=task)
    with pytest.raises(ValueError, match=match):
        CR.TFConfigClusterResolver().task_id  # noqa: B018


def test_master_of_a_cluster_without_a_task_says_what_to_set(monkeypatch):
    set_tf_config(monkeypatch, cluster=CLUSTER)
    with pytest.raises(ValueError, match='set TF_CONFIG\'s "task"'):
        CR.TFConfigClusterResolver().master()
    set_tf_config(monkeypatch, cluster=CLUSTER, task={"type": "chief", "index": 0})
    with pytest.raises(ValueError, match="No such job"):
        CR.TFConfigClusterResolver().master()


def test_simple_resolver():
    spec = tf.train.ClusterSpec({"worker": ["a:1", "a:2"]})
    resolver = CR.SimpleClusterResolver(spec, master="m:1", task_type="worker", task_id=1,
                                        num_accelerators={"GPU": 2}, rpc_layer="grpc")
    assert resolver.master() == "grpc://m:1"
    # zmtf keeps a target that already has a scheme (TF would write "grpc://inproc://ps0")
    assert CR.SimpleClusterResolver(spec, "inproc://ps0", rpc_layer="grpc").master() == "inproc://ps0"
    assert resolver.master("worker", 0) == "grpc://a:1"
    assert (resolver.task_type, resolver.task_id, resolver.environment) == ("worker", 1, "")
    assert resolver.num_accelerators() == {"GPU": 2} and resolver.cluster_spec() is spec
    assert CR.SimpleClusterResolver(spec).num_accelerators() == {}
    with pytest.raises(TypeError, match="tf.train.ClusterSpec"):
        CR.SimpleClusterResolver({"worker": ["a:1"]})
    with pytest.raises(TypeError, match="master must be a string"):
        CR.SimpleClusterResolver(spec, master=None)


def test_union_resolver_merges_clusters():
    first = CR.SimpleClusterResolver(tf.train.ClusterSpec({"worker": ["w:1"]}), master="w:1",
                                     task_type="worker", task_id=0, rpc_layer="grpc")
    second = CR.SimpleClusterResolver(tf.train.ClusterSpec({"worker": ["w:2"], "ps": ["p:1"]}))
    union = CR.UnionResolver(first, second)
    assert union.cluster_spec().as_dict() == {"ps": ["p:1"], "worker": ["w:1", "w:2"]}
    # as TF: a named task takes the union's own rpc layer (none here), not the first's
    assert (union.master(), union.master("ps", 0)) == ("grpc://w:1", "p:1")
    assert CR.UnionResolver(first, second, rpc_layer="grpc").master("ps", 0) == "grpc://p:1"
    assert (union.task_type, union.task_id, union.rpc_layer) == ("worker", 0, "grpc")
    sparse = CR.SimpleClusterResolver(tf.train.ClusterSpec({"worker": {3: "w:4"}}))
    assert CR.UnionResolver(first, sparse).cluster_spec().as_dict() == {
        "worker": {0: "w:1", 3: "w:4"}}
    clash = CR.SimpleClusterResolver(tf.train.ClusterSpec({"worker": {3: "w:9"}}))
    with pytest.raises(KeyError, match="Duplicate keys"):
        CR.UnionResolver(sparse, clash).cluster_spec()
    with pytest.raises(ValueError, match="At least one"):
        CR.UnionResolver()
    with pytest.raises(TypeError, match="sub-class"):
        CR.UnionResolver(first, "w:1")


@pytest.fixture
def two_tasks():
    """A worker and a ps, tf.train.Servers on free 127.0.0.1 ports."""
    workers, ps = tf.test.create_local_cluster(1, 1)
    spec = tf.train.ClusterSpec(workers[0].server_def.cluster)
    tf.reset_default_graph()
    yield spec, workers[0], ps[0]
    for server in workers + ps:
        server.stop()


def test_master_opens_a_session_on_the_cluster(monkeypatch, two_tasks):
    spec, _, _ = two_tasks
    set_tf_config(monkeypatch, cluster=spec.as_dict(), task={"type": "worker", "index": 0},
                  rpc_layer="grpc")
    resolver = CR.TFConfigClusterResolver()
    assert resolver.master() == "grpc://" + spec.task_address("worker", 0)
    with tf.device("/job:ps/task:0"):
        v = tf.Variable(np.float32(2.0))
    y = v * 3.0
    config = tf.ConfigProto(cluster_def=resolver.cluster_spec().as_cluster_def())
    with tf.Session(resolver.master(), config=config) as sess:
        sess.run(v.initializer)
        assert sess.run(y) == np.float32(6.0)
    counts = resolver.num_accelerators()
    assert "CPU" not in counts   # CPUs are not accelerators: a CPU-only cluster gives {}
    with tf.Session(resolver.master()) as sess:
        devices = sess.list_devices()
    assert counts["GPU"] == len([d for d in devices if d.device_type == "GPU"
                                 and "/job:worker/" in d.name and "/task:0/" in d.name])


def test_session_cluster_def_must_be_the_servers(two_tasks):
    spec, worker, _ = two_tasks
    moved = dict(spec.as_dict(), ps=["127.0.0.1:1"], chief=["127.0.0.1:2"])
    config = tf.ConfigProto(cluster_def=tf.train.ClusterSpec(moved).as_cluster_def())
    with tf.Session(worker.target, config=config) as sess:
        with pytest.raises(InvalidArgumentError) as info:
            sess.run(tf.constant(1.0))
    message = str(info.value)
    assert "job 'chief' is not in the server's cluster" in message
    assert f"/job:ps/task:0 is '127.0.0.1:1' in cluster_def but " \
           f"'{spec.task_address('ps', 0)}'" in message


def test_server_from_a_server_def():
    port = free_tcp_ports(1)[0]
    cluster = tf.train.ClusterSpec({"worker": [f"127.0.0.1:{port}"]})
    server_def = tf.train.ServerDef(cluster=cluster.as_cluster_def(), job_name="worker",
                                    protocol="grpc")
    server = tf.train.Server(server_def)
    try:
        assert server.server_def == server_def
        with tf.Session(server.target) as sess:
            assert sess.run(tf.constant(4.0) + 1.0) == 5.0
    finally:
        server.stop()
    with pytest.raises(ValueError, match="ServerDef.port"):
        tf.train.Server(tf.train.ServerDef(cluster=cluster.as_cluster_def(), port=9), start=False)

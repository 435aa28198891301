"""replica_device_setter: the seed's examples, TF's merge rules, cluster=, and the strategies."""

from __future__ import annotations

import logging

import pytest

import zmtf as tf
from zmtf.distributed.cluster_spec import ClusterSpec
from zmtf.training.device_setter import (
    STANDARD_PS_OPS, GreedyLoadBalancingStrategy, _RoundRobinStrategy, byte_size_load_fn,
    replica_device_setter,
)

CLUSTER = {
    "ps": ["127.0.0.1:2221", "127.0.0.1:2222"],
    "worker": ["127.0.0.1:2223", "127.0.0.1:2224", "127.0.0.1:2225"],
}


@pytest.fixture(autouse=True)
def fresh_graph():
    tf.reset_default_graph()
    yield


def variables_and_devices(count: int, setter) -> list[str]:
    with tf.device(setter):
        return [tf.Variable(float(i)).device for i in range(count)]


# ---- the seed's examples -------------------------------------------------------------------


def test_seed_five_variables_round_robin_over_two_ps_tasks():
    devices = variables_and_devices(5, replica_device_setter(ps_tasks=2))
    assert devices == [f"/job:ps/task:{i}" for i in (0, 1, 0, 1, 0)]


def test_variable_helpers_are_colocated_and_its_initial_value_goes_to_the_worker():
    with tf.device(replica_device_setter(ps_tasks=2)):
        v1 = tf.Variable(1.0)
        v2 = tf.Variable(2.0)
    assert v1.op.type == "Variable" and v1.device == "/job:ps/task:0"
    assert v1.initializer.device == v1.value().device == "/job:ps/task:0"
    assert v2.initializer.device == v2.value().device == "/job:ps/task:1"
    assert v1.initial_value.device == "/job:worker"  # a Const, not a ps op


def test_seed_nested_device_blocks_override_the_worker_device():
    with tf.device(replica_device_setter(ps_tasks=2)):
        v1 = tf.Variable(1.0)
        v2 = tf.Variable(2.0)
        v3 = tf.Variable(3.0)
        s = v1 + v2
        with tf.device("/gpu:1"):
            p1 = 2 * s
            with tf.device("/task:1"):
                p2 = 3 * s
    assert [v1.device, v2.device, v3.device] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert s.device == "/job:worker"
    assert p1.device == "/job:worker/device:GPU:1"
    assert p2.device == "/job:worker/task:1/device:GPU:1"


def test_seed_second_variant_with_explicit_devices_task_then_cpu():
    setter = replica_device_setter(ps_tasks=2, ps_device="/job:ps", worker_device="/job:worker")
    with tf.device(setter):
        v1 = tf.Variable(1.0, name="v1")
        v2 = tf.Variable(2.0, name="v2")
        v3 = tf.Variable(3.0, name="v3")
        s = v1 + v2
        with tf.device("/task:1"):
            p1 = 2 * s
            with tf.device("/cpu:0"):
                p2 = 3 * s
    assert [v1.device, v2.device, v3.device] == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]
    assert s.device == "/job:worker"
    assert p1.device == "/job:worker/task:1"
    assert p2.device == "/job:worker/task:1/device:CPU:0"


# ---- cluster= ------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster", [CLUSTER, ClusterSpec(CLUSTER)], ids=["dict", "ClusterSpec"])
def test_cluster_counts_the_ps_tasks_and_overrides_ps_tasks(cluster):
    devices = variables_and_devices(3, replica_device_setter(ps_tasks=7, cluster=cluster))
    assert devices == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0"]


def test_sparse_ps_job_counts_its_listed_tasks():
    cluster = ClusterSpec({"ps": {0: "a:1", 1: "b:1", 2: "c:1"}, "worker": ["w:1"]})
    devices = variables_and_devices(4, replica_device_setter(cluster=cluster))
    assert devices == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:2", "/job:ps/task:0"]


def test_ps_job_name_comes_from_ps_device():
    cluster = {"params": ["a:1", "b:1"], "worker": ["w:1"]}
    setter = replica_device_setter(cluster=cluster, ps_device="/job:params/cpu:0")
    assert variables_and_devices(2, setter) == [
        "/job:params/task:0/device:CPU:0", "/job:params/task:1/device:CPU:0",
    ]


@pytest.mark.parametrize("kwargs", [
    {},
    {"ps_tasks": 0},
    {"cluster": {"worker": ["w:1"]}},
    {"cluster": ClusterSpec({"worker": ["w:1"]}), "ps_tasks": 2},
    {"cluster": {"ps": [], "worker": ["w:1"]}},
    {"cluster": ClusterSpec(CLUSTER), "ps_device": ""},
    {"cluster": ClusterSpec({})},
])
def test_no_ps_tasks_gives_no_device_function(kwargs):
    assert replica_device_setter(**kwargs) is None


def test_a_none_setter_clears_outer_devices_as_tf_device_none_does():
    with tf.device("/job:worker"):
        with tf.device(replica_device_setter(ps_tasks=0)):
            a = tf.constant(1.0)
    assert a.device == ""


# ---- TF's merge rules ----------------------------------------------------------------------


def test_an_inner_job_wins_and_the_strategy_is_not_consulted():
    with tf.device(replica_device_setter(ps_tasks=2)):
        v1 = tf.Variable(1.0)
        with tf.device("/job:worker/task:2"):
            local = tf.Variable(0.0)
        v2 = tf.Variable(2.0)
    assert local.device == "/job:worker/task:2"
    assert [v1.device, v2.device] == ["/job:ps/task:0", "/job:ps/task:1"]


def test_an_inner_device_merges_into_the_ps_device():
    with tf.device(replica_device_setter(ps_tasks=2)):
        with tf.device("/cpu:0"):
            v1 = tf.Variable(1.0)
            v2 = tf.Variable(1.0)
        with tf.device("/job:ps/task:1"):
            v3 = tf.Variable(1.0)  # same job: the strategy still picks the task, the op's wins
    assert [v1.device, v2.device] == ["/job:ps/task:0/device:CPU:0", "/job:ps/task:1/device:CPU:0"]
    assert v3.device == "/job:ps/task:1"


def test_worker_device_fills_unset_fields_only():
    setter = replica_device_setter(ps_tasks=1, worker_device="/job:worker/task:3/gpu:0")
    with tf.device(setter):
        a = tf.constant(1.0)
        with tf.device("/cpu:0"):
            b = tf.constant(2.0)
    assert a.device == "/job:worker/task:3/device:GPU:0"
    assert b.device == "/job:worker/task:3/device:CPU:0"


def test_without_merge_devices_a_set_device_is_kept_whole(caplog):
    with caplog.at_level(logging.WARNING):
        setter = replica_device_setter(ps_tasks=2, merge_devices=False)
    assert "merge_devices=true" in caplog.text
    with tf.device(setter):
        with tf.device("/cpu:0"):
            v = tf.Variable(1.0)
            a = tf.constant(1.0)
        w = tf.Variable(1.0)
    assert v.device == "/device:CPU:0" and a.device == "/device:CPU:0"
    assert w.device == "/job:ps/task:0"


def test_empty_worker_device_leaves_other_ops_alone():
    with tf.device(replica_device_setter(ps_tasks=1, worker_device="")):
        a = tf.constant(1.0)
        v = tf.Variable(1.0)
    assert a.device == "" and v.device == "/job:ps/task:0"


def test_custom_ps_ops_and_strategy():
    setter = replica_device_setter(ps_tasks=3, ps_ops=["Const"], ps_strategy=lambda op: 2)
    with tf.device(setter):
        a = tf.constant(1.0)
        b = tf.placeholder(tf.float32)
    assert a.device == "/job:ps/task:2" and b.device == "/job:worker"


def test_standard_ps_ops_is_tfs_list():
    assert STANDARD_PS_OPS[:10] == (
        "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable", "MutableHashTableV2",
        "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2", "MutableDenseHashTable",
        "MutableDenseHashTableV2", "VarHandleOp",
    )
    assert "BoostedTreesEnsembleResourceHandleOp" in STANDARD_PS_OPS


def test_round_robin_strategy_ignores_the_op():
    strategy = _RoundRobinStrategy(3)
    assert [strategy(None) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


# ---- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs,error,message", [
    ({"ps_tasks": -1}, ValueError, "ps_tasks must be a non-negative integer, got -1"),
    ({"ps_tasks": 2.0}, ValueError, "ps_tasks must be a non-negative integer, got 2.0"),
    ({"ps_tasks": 2, "ps_strategy": 3}, TypeError, "ps_strategy must be callable"),
    ({"ps_tasks": 2, "ps_ops": "Variable"}, TypeError, "ps_ops must be a list of op types"),
    ({"cluster": ["a:1"]}, TypeError, "cluster must be a ClusterSpec, a ClusterDef or a dict"),
    ({"cluster": {"ps": "a:1"}}, TypeError, "cluster job 'ps' must list its tasks"),
    ({"ps_tasks": 2, "ps_device": "/job:ps/foo:1"}, ValueError, "Unknown attribute: 'foo'"),
])
def test_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        replica_device_setter(**kwargs)


def test_a_strategy_returning_a_bad_index_names_the_op():
    with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=lambda op: "x")):
        with pytest.raises(ValueError, match="ps_strategy returned 'x' for op 'Variable'"):
            tf.Variable(1.0)


# ---- load balancing ------------------------------------------------------------------------

SKEWED_SHAPES = [[1000, 100], [10], [1000, 100], [10], [500, 100], [10], [10], [10]]


def place_skewed(strategy) -> dict[str, int]:
    """Create the skewed variables; return the float32 bytes that land on each ps task."""
    loads: dict[str, int] = {}
    with tf.device(replica_device_setter(ps_tasks=2, ps_strategy=strategy)):
        for shape in SKEWED_SHAPES:
            v = tf.Variable(tf.zeros(shape))
            loads[v.device] = loads.get(v.device, 0) + byte_size_load_fn(v.op)
    return loads


def test_greedy_balances_skewed_sizes_better_than_round_robin():
    round_robin = place_skewed(None)
    greedy = place_skewed(GreedyLoadBalancingStrategy(2, byte_size_load_fn))
    big = 1000 * 100 * 4
    assert round_robin == {"/job:ps/task:0": 2 * big + big // 2 + 40, "/job:ps/task:1": 160}
    assert max(greedy.values()) == big + big // 2 + 40
    assert max(greedy.values()) < max(round_robin.values())
    assert sum(greedy.values()) == sum(round_robin.values())


def test_greedy_with_uniform_load_equals_round_robin():
    strategy = GreedyLoadBalancingStrategy(2, lambda op: 1)
    devices = variables_and_devices(4, replica_device_setter(cluster=CLUSTER, ps_strategy=strategy))
    assert devices == ["/job:ps/task:0", "/job:ps/task:1", "/job:ps/task:0", "/job:ps/task:1"]
    assert strategy.loads == [2.0, 2.0]


def test_byte_size_load_fn():
    v = tf.Variable(tf.zeros([3, 4], dtype=tf.float64))
    assert byte_size_load_fn(v.op) == 3 * 4 * 8
    assert byte_size_load_fn(tf.Variable(1).op) == 4  # a scalar int32


def test_byte_size_load_fn_errors():
    placeholder = tf.placeholder(tf.float32, shape=[None, 3])
    with pytest.raises(ValueError, match="not fully defined"):
        byte_size_load_fn(tf.Variable(placeholder, validate_shape=False).op)
    with pytest.raises(ValueError, match="has 0 outputs; byte_size_load_fn needs"):
        byte_size_load_fn(tf.no_op())


def test_greedy_needs_a_task():
    with pytest.raises(ValueError, match="at least one ps task"):
        GreedyLoadBalancingStrategy(0, byte_size_load_fn)

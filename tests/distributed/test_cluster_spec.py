"""ClusterSpec: TF's API on the seed's clusters, sparse jobs, every error, TF_CONFIG and JSON."""

from __future__ import annotations

import json

import pytest

from zmtf.distributed.cluster_spec import (
    AddressError, ClusterSpec, ClusterSpecTypeError, bind_endpoint, check_addresses, endpoint,
)
from zmtf.framework.errors import InvalidArgumentError

LOCAL = {
    "ps": ["127.0.0.1:2221", "127.0.0.1:2222"],
    "worker": ["127.0.0.1:2223", "127.0.0.1:2224", "127.0.0.1:2225"],
}
MACHINES = {
    "ps": ["machine-a.example.com:2221"],
    "worker": ["machine-a.example.com:2222", "machine-b.example.com:2222"],
}


# ---- the seed's clusters -------------------------------------------------------------------


def test_seed_local_cluster_two_ps_three_workers():
    cluster = ClusterSpec(LOCAL)
    assert cluster.jobs == ["ps", "worker"]
    assert cluster.num_tasks("ps") == 2 and cluster.num_tasks("worker") == 3
    assert cluster.task_indices("worker") == [0, 1, 2]
    assert cluster.task_address("worker", 2) == "127.0.0.1:2225"
    assert cluster.job_tasks("ps") == ["127.0.0.1:2221", "127.0.0.1:2222"]
    assert cluster.as_dict() == LOCAL
    assert cluster.device_name("ps", 1) == "/job:ps/replica:0/task:1"
    assert cluster.all_tasks() == [
        ("ps", 0, "127.0.0.1:2221"), ("ps", 1, "127.0.0.1:2222"),
        ("worker", 0, "127.0.0.1:2223"), ("worker", 1, "127.0.0.1:2224"),
        ("worker", 2, "127.0.0.1:2225"),
    ]


def test_seed_machine_cluster_allows_two_tasks_per_machine():
    cluster = ClusterSpec(MACHINES)
    assert cluster.task_address("ps", 0) == "machine-a.example.com:2221"
    assert cluster.task_address("worker", 1) == "machine-b.example.com:2222"
    assert repr(cluster) == (
        "ClusterSpec({'ps': ['machine-a.example.com:2221'], "
        "'worker': ['machine-a.example.com:2222', 'machine-b.example.com:2222']})"
    )


def test_jobs_are_sorted_whatever_the_dict_order():
    cluster = ClusterSpec({"worker": ["a:1"], "ps": ["b:1"], "chief": ["c:1"]})
    assert cluster.jobs == ["chief", "ps", "worker"]
    assert list(cluster.as_dict()) == ["chief", "ps", "worker"]


# ---- sparse jobs ---------------------------------------------------------------------------


def test_sparse_job_as_in_tf():
    cluster = ClusterSpec({"worker": {1: "worker1:2222"}, "ps": ["ps0:2222", "ps1:2222"]})
    assert cluster.num_tasks("worker") == 1
    assert cluster.task_indices("worker") == [1]
    assert cluster.job_tasks("worker") == [None, "worker1:2222"]
    assert cluster.as_dict() == {"ps": ["ps0:2222", "ps1:2222"], "worker": {1: "worker1:2222"}}
    assert repr(cluster) == "ClusterSpec({'ps': ['ps0:2222', 'ps1:2222'], 'worker': {1: 'worker1:2222'}})"


def test_dense_dict_job_comes_back_as_a_list():
    cluster = ClusterSpec({"worker": {1: "w1:2222", 0: "w0:2222"}})
    assert cluster.as_dict() == {"worker": ["w0:2222", "w1:2222"]}


def test_json_style_string_task_indices_are_integers():
    cluster = ClusterSpec({"worker": {"0": "w0:2222", "3": "w3:2222"}})
    assert cluster.task_indices("worker") == [0, 3]
    assert cluster.task_address("worker", 3) == "w3:2222"


def test_empty_job_and_empty_cluster():
    cluster = ClusterSpec({"ps": []})
    assert cluster.num_tasks("ps") == 0 and cluster.job_tasks("ps") == []
    assert cluster.as_dict() == {"ps": {}}
    for empty in (ClusterSpec({}), ClusterSpec(ClusterSpec({}))):
        assert not empty and empty.jobs == [] and empty.all_tasks() == []
        assert repr(empty) == "ClusterSpec({})"
    assert ClusterSpec(LOCAL)


def test_copy_from_another_cluster_spec_is_independent_and_equal():
    original = ClusterSpec(LOCAL)
    copy = ClusterSpec(original)
    assert copy == original and copy is not original


# ---- zmq endpoints -------------------------------------------------------------------------


@pytest.mark.parametrize("address,url", [
    ("127.0.0.1:2222", "tcp://127.0.0.1:2222"),
    ("machine-a.example.com:2222", "tcp://machine-a.example.com:2222"),
    ("[::1]:2222", "tcp://[::1]:2222"),
    ("tcp://10.0.0.5:2222", "tcp://10.0.0.5:2222"),
    ("ipc:///tmp/zmtf-ps0", "ipc:///tmp/zmtf-ps0"),
    ("inproc://ps0", "inproc://ps0"),
])
def test_endpoint(address, url):
    assert endpoint(address) == url


@pytest.mark.parametrize("address,url", [
    ("127.0.0.1:2222", "tcp://127.0.0.1:2222"),
    ("0.0.0.0:2222", "tcp://0.0.0.0:2222"),
    ("localhost:2222", "tcp://localhost:2222"),
    ("[::1]:2222", "tcp://[::1]:2222"),
    ("machine-a.example.com:2222", "tcp://*:2222"),
    ("tcp://machine-b:2223", "tcp://*:2223"),
    ("ipc:///tmp/zmtf-ps0", "ipc:///tmp/zmtf-ps0"),
    ("inproc://ps0", "inproc://ps0"),
])
def test_bind_endpoint(address, url):
    assert bind_endpoint(address) == url


def test_cluster_accepts_zmq_endpoints_as_given():
    cluster = ClusterSpec({"ps": ["inproc://ps0", "ipc:///tmp/ps1"], "worker": ["tcp://127.0.0.1:2"]})
    assert cluster.task_address("ps", 1) == "ipc:///tmp/ps1"
    assert [endpoint(address) for _, _, address in cluster.all_tasks()] == [
        "inproc://ps0", "ipc:///tmp/ps1", "tcp://127.0.0.1:2",
    ]


# ---- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster,message", [
    ({"": ["a:1"]}, "Job name '' is not valid"),
    ({"1ps": ["a:1"]}, "Job name '1ps' is not valid; it must start with a letter"),
    ({"ps/0": ["a:1"]}, "Job name 'ps/0' is not valid"),
    ({"ps": ["a:1"], "my-job": ["b:1"]}, "Job name 'my-job' is not valid"),
    ({"ps": ["a:1", "a:1"]}, "Address 'a:1' is used by both /job:ps/task:0 and /job:ps/task:1"),
    ({"ps": ["a:1"], "worker": ["tcp://a:1"]},
     "Address 'tcp://a:1' is used by both /job:ps/task:0 and /job:worker/task:0"),
    ({"ps": {0: "a:1", "0": "b:1"}}, "job 'ps': task index 0 is given twice"),
    ({"ps": {-1: "a:1"}}, "job 'ps': task index -1 must be a non-negative integer"),
    ({"ps": {"one": "a:1"}}, "job 'ps': task index 'one' must be a non-negative integer"),
    ({"ps": {True: "a:1"}}, "job 'ps': task index True must be a non-negative integer"),
])
def test_malformed_cluster_is_a_value_error_naming_the_job_and_value(cluster, message):
    with pytest.raises(ValueError) as info:
        ClusterSpec(cluster)
    assert message in str(info.value)


@pytest.mark.parametrize("cluster,message", [
    ({"ps": ["machine-a"]}, "/job:ps/task:0: address 'machine-a' has no port"),
    ({"ps": [":2222"]}, "/job:ps/task:0: address ':2222' has no host"),
    ({"ps": ["a:65536"]}, "port '65536' in address 'a:65536' must be an integer in 1..65535"),
    ({"ps": ["a:1", "b:http"]}, "/job:ps/task:1: port 'http' in address 'b:http'"),
    ({"ps": ["a b:1"]}, "/job:ps/task:0: host 'a b' in address 'a b:1' is not a hostname"),
    ({"ps": ["::1:2222"]}, "write IPv6 hosts in brackets"),
    ({"ps": ["[1::2::3]:2222"]}, "host '[1::2::3]' in address '[1::2::3]:2222' is not a valid IPv6"),
    ({"ps": ["tcp://a"]}, "address 'tcp://a' has no port"),
    ({"ps": ["grpc://a:1"]}, "uses the unsupported scheme 'grpc'"),
    ({"ps": ["ipc://"]}, "address 'ipc://' names no ipc path"),
    ({"ps": ["inproc://"]}, "address 'inproc://' names no inproc path"),
    ({"job": ["host:port"]}, "/job:job/task:0: port 'port' in address 'host:port'"),
])
def test_any_address_string_is_accepted_until_a_server_checks_it(cluster, message):
    """TF's rule: ClusterSpec takes any string; a server starting on the cluster checks every
    address (check_addresses), with an InvalidArgumentError naming the task and address."""
    spec = ClusterSpec(cluster)
    assert spec and spec.as_dict() == cluster
    with pytest.raises(AddressError) as info:
        check_addresses(spec)
    assert isinstance(info.value, InvalidArgumentError) and isinstance(info.value, ValueError)
    assert message in str(info.value)


def test_port_zero_is_an_address_and_never_a_duplicate():
    """Port 0 asks the server for a free port: two tasks may both say so."""
    spec = ClusterSpec({"a": ["localhost:0"], "b": ["localhost:0", "tcp://127.0.0.1:0"]})
    check_addresses(spec)
    assert endpoint("localhost:0") == "tcp://localhost:0"


@pytest.mark.parametrize("cluster,message", [
    (["a:1"], "`cluster` must be a dict mapping job names to lists of addresses"),
    ("ps", "got str"),
    ({1: ["a:1"]}, "Job name 1 must be a string"),
    ({"ps": "a:1"}, "The tasks for job 'ps' must be a list of addresses or a dict"),
    ({"ps": "a:1"}, "wrap a single address in a list"),
    ({"ps": 3}, "got int 3"),
    ({"ps": [2222]}, "/job:ps/task:0: address 2222 must be a string"),
    ({"ps": ["a:1", None]}, "for a sparse job use a dict {task_index: address}"),
])
def test_wrong_types_raise_an_error_that_is_both_value_and_type_error(cluster, message):
    with pytest.raises(ClusterSpecTypeError) as info:
        ClusterSpec(cluster)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TypeError)
    assert message in str(info.value)


def test_missing_job_names_the_jobs_that_exist():
    cluster = ClusterSpec(LOCAL)
    for lookup in (cluster.num_tasks, cluster.task_indices, cluster.job_tasks):
        with pytest.raises(ValueError, match=r"No such job in cluster: 'chief'; the cluster has "
                                             r"jobs \['ps', 'worker'\]"):
            lookup("chief")


def test_missing_task_names_the_tasks_that_exist():
    cluster = ClusterSpec({"worker": {1: "w1:2222", 4: "w4:2222"}})
    with pytest.raises(ValueError, match=r"No task with index 2 in job 'worker'; its tasks are \[1, 4\]"):
        cluster.task_address("worker", 2)
    with pytest.raises(ValueError, match="No task with index 0 in job 'worker'"):
        cluster.device_name("worker", 0)
    with pytest.raises(ValueError, match="No such job in cluster: 'ps'"):
        cluster.device_name("ps", 0)


@pytest.mark.parametrize("address,message", [
    ("nohost", "address 'nohost' has no port"),
    ("a:-1", "port '-1' in address 'a:-1' must be an integer in 1..65535"),
    ("udp://a:1", "unsupported scheme 'udp'"),
])
def test_endpoint_errors_name_the_address(address, message):
    for convert in (endpoint, bind_endpoint):
        with pytest.raises(ValueError, match=message):
            convert(address)


# ---- TF_CONFIG -----------------------------------------------------------------------------

TF_CONFIG = {"cluster": LOCAL, "task": {"type": "worker", "index": 1}}


def test_from_tf_config_reads_the_environment(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", json.dumps(TF_CONFIG))
    cluster, task_type, task_index = ClusterSpec.from_tf_config()
    assert cluster == ClusterSpec(LOCAL)
    assert (task_type, task_index) == ("worker", 1)


def test_from_tf_config_takes_a_dict_or_json_text_or_a_path(tmp_path):
    path = tmp_path / "tf_config.json"
    path.write_text(json.dumps(TF_CONFIG))
    expected = (ClusterSpec(LOCAL), "worker", 1)
    assert ClusterSpec.from_tf_config(TF_CONFIG) == expected
    assert ClusterSpec.from_tf_config(json.dumps(TF_CONFIG)) == expected
    assert ClusterSpec.from_tf_config(str(path)) == expected


def test_from_tf_config_without_task_or_cluster_is_like_tfs_resolver():
    assert ClusterSpec.from_tf_config({"cluster": LOCAL}) == (ClusterSpec(LOCAL), None, None)
    assert ClusterSpec.from_tf_config({}) == (ClusterSpec({}), None, None)
    # An empty cluster cannot be checked against, so any task is taken as given.
    assert ClusterSpec.from_tf_config({"task": {"type": "chief", "index": "0"}}) == (
        ClusterSpec({}), "chief", 0,
    )


def test_from_tf_config_with_sparse_json_job_and_extra_keys():
    config = {
        "cluster": {"ps": ["127.0.0.1:2221"], "worker": {"2": "127.0.0.1:2225"}},
        "task": {"type": "worker", "index": 2}, "environment": "cloud", "rpc_layer": "grpc",
    }
    cluster, task_type, task_index = ClusterSpec.from_tf_config(config)
    assert cluster.as_dict() == {"ps": ["127.0.0.1:2221"], "worker": {2: "127.0.0.1:2225"}}
    assert (task_type, task_index) == ("worker", 2)


def test_evaluator_task_lives_outside_the_cluster():
    config = {"cluster": LOCAL, "task": {"type": "evaluator", "index": 0}}
    assert ClusterSpec.from_tf_config(config)[1:] == ("evaluator", 0)


def test_from_tf_config_unset(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    with pytest.raises(ValueError, match="The TF_CONFIG environment variable is not set; set it "
                                         "to JSON such as"):
        ClusterSpec.from_tf_config()
    monkeypatch.setenv("TF_CONFIG", "  ")
    with pytest.raises(ValueError, match="TF_CONFIG environment variable is not set"):
        ClusterSpec.from_tf_config()


@pytest.mark.parametrize("text,message", [
    ('{"cluster": ', "the TF_CONFIG environment variable is not valid JSON"),
    ("[1, 2]", "the TF_CONFIG environment variable must be a JSON object such as"),
    ('{"cluster": {"ps": "a:1"}}', "The tasks for job 'ps' must be a list"),
    ('{"cluster": {"ps": ["a:1"]}, "task": "ps"}', "TF_CONFIG 'task' must be an object"),
    ('{"cluster": {"ps": ["a:1"]}, "task": {"type": 0}}', "TF_CONFIG task type 0 must be a job"),
    ('{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": -1}}',
     "TF_CONFIG task: task index -1 must be a non-negative integer"),
    ('{"cluster": {"ps": ["a:1"]}, "task": {"type": "wroker", "index": 0}}',
     r"TF_CONFIG task type 'wroker' is not a job of its cluster, which has jobs \['ps'\]"),
    ('{"cluster": {"ps": ["a:1"]}, "task": {"type": "ps", "index": 3}}',
     r"No task with index 3 in job 'ps'; its tasks are \[0\]"),
])
def test_malformed_tf_config(monkeypatch, text, message):
    monkeypatch.setenv("TF_CONFIG", text)
    with pytest.raises(ValueError, match=message):
        ClusterSpec.from_tf_config()


def test_from_tf_config_with_a_missing_file_or_wrong_type():
    with pytest.raises(ValueError, match="'/no/such/tf_config.json' is neither JSON text nor"):
        ClusterSpec.from_tf_config("/no/such/tf_config.json")
    with pytest.raises(ValueError, match="TF_CONFIG must be a JSON object"):
        ClusterSpec.from_tf_config("[]")


# ---- JSON ----------------------------------------------------------------------------------


def test_from_json_text_and_file(tmp_path):
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps(LOCAL))
    assert ClusterSpec.from_json(json.dumps(LOCAL)) == ClusterSpec(LOCAL)
    assert ClusterSpec.from_json(str(path)) == ClusterSpec(LOCAL)
    assert ClusterSpec.from_json(path) == ClusterSpec(LOCAL)


def test_from_json_accepts_a_tf_config_shaped_file(tmp_path):
    path = tmp_path / "tf_config.json"
    path.write_text(json.dumps(TF_CONFIG))
    assert ClusterSpec.from_json(path) == ClusterSpec(LOCAL)
    assert ClusterSpec.from_json(json.dumps({"cluster": MACHINES})) == ClusterSpec(MACHINES)


def test_from_json_keeps_a_sparse_job_named_cluster():
    cluster = ClusterSpec.from_json('{"cluster": {"1": "a:1"}}')
    assert cluster.as_dict() == {"cluster": {1: "a:1"}}


def test_from_json_errors_name_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match=r"ClusterSpec.from_json \(.*broken.json\) is not valid JSON"):
        ClusterSpec.from_json(path)
    with pytest.raises(ValueError, match="is neither JSON text nor the path of an existing file"):
        ClusterSpec.from_json(str(tmp_path / "missing.json"))
    with pytest.raises(ClusterSpecTypeError, match="`cluster` must be a dict"):
        ClusterSpec.from_json("[1]")


# ---- equality ------------------------------------------------------------------------------


def test_equality():
    cluster = ClusterSpec(LOCAL)
    assert cluster == ClusterSpec({"worker": LOCAL["worker"], "ps": LOCAL["ps"]})
    assert cluster == LOCAL
    assert cluster == {"ps": {0: "127.0.0.1:2221", 1: "127.0.0.1:2222"}, "worker": LOCAL["worker"]}
    assert cluster != ClusterSpec(MACHINES)
    assert cluster != {"ps": LOCAL["ps"]}
    assert cluster != {"bad job": ["a:1"]}  # not a valid cluster, so not equal
    assert cluster != "ps" and cluster != None  # noqa: E711
    assert not (cluster != ClusterSpec(LOCAL))
    assert ClusterSpec({"w": {1: "a:1"}}) != ClusterSpec({"w": ["a:1"]})


def test_unhashable_as_in_tf():
    with pytest.raises(TypeError):
        hash(ClusterSpec(LOCAL))

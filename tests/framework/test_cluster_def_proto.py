"""tf.train.ClusterDef / JobDef / ServerDef: bytes as TF 2.21's Python protobuf writes them
(the hex fixtures were made with TF), round trips, text format, and ClusterSpec <-> ClusterDef."""

import pytest

import zmtf as tf
from zmtf.framework.errors import InvalidArgumentError

# tf.train.ClusterSpec({"worker": ["127.0.0.1:2222", "127.0.0.1:2223"], "ps": ["127.0.0.1:2221"]})
#   .as_cluster_def().SerializeToString(deterministic=True), from TF 2.21
TWO_JOBS = bytes.fromhex(
    "0a180a02707312120800120e3132372e302e302e313a323232310a300a06776f726b657212120801120e3132"
    "372e302e302e313a3232323312120800120e3132372e302e302e313a32323232")
# ServerDef(cluster=<the above>, job_name="worker", task_index=1, protocol="grpc", port=7)
SERVER_DEF = bytes.fromhex(
    "0a4c" + TWO_JOBS.hex() + "1206776f726b657218012a04677270633007")
# JobDef(name="w", tasks={0: "h", 1: "h", 2: "h", 3: "h", 10: "h", 200: "h"}): upb writes
# int keys high to low
SIX_TASKS = bytes.fromhex(
    "0a0177120608c8011201681205080a12016812050803120168120508021201681205080112016812050800120168")
EMPTY_JOB = bytes.fromhex("0a0178")  # JobDef(name="x")


def two_jobs_spec():
    return tf.train.ClusterSpec({"worker": ["127.0.0.1:2222", "127.0.0.1:2223"],
                                 "ps": ["127.0.0.1:2221"]})


def test_cluster_def_bytes_match_tf():
    assert two_jobs_spec().as_cluster_def().SerializeToString() == TWO_JOBS


def test_job_def_int_keys_in_tfs_order():
    job = tf.train.JobDef(name="w")
    for index in (3, 0, 200, 2, 10, 1):
        job.tasks[index] = "h"
    assert job.SerializeToString() == SIX_TASKS
    assert tf.train.JobDef(name="x").SerializeToString() == EMPTY_JOB
    assert tf.train.ClusterDef().SerializeToString() == b""


def test_server_def_bytes_match_tf_and_round_trip():
    server_def = tf.train.ServerDef(cluster=two_jobs_spec().as_cluster_def(), job_name="worker",
                                    task_index=1, protocol="grpc", port=7)
    assert server_def.SerializeToString() == SERVER_DEF
    back = tf.train.ServerDef.FromString(SERVER_DEF)
    assert (back.job_name, back.task_index, back.protocol, back.port) == ("worker", 1, "grpc", 7)
    assert back == server_def


def test_parse_tf_bytes_into_cluster_spec():
    cluster_def = tf.train.ClusterDef.FromString(TWO_JOBS)
    assert [job.name for job in cluster_def.job] == ["ps", "worker"]
    assert cluster_def.job[1].tasks == {0: "127.0.0.1:2222", 1: "127.0.0.1:2223"}
    assert tf.train.ClusterSpec(cluster_def) == two_jobs_spec()
    assert tf.train.ClusterSpec(cluster_def).as_dict()["worker"] == ["127.0.0.1:2222",
                                                                     "127.0.0.1:2223"]


def test_sparse_job_round_trip():
    spec = tf.train.ClusterSpec({"worker": {1: "h:3"}, "chief": {5: "c:1"}})
    cluster_def = spec.as_cluster_def()
    again = tf.train.ClusterSpec(tf.train.ClusterDef.FromString(cluster_def.SerializeToString()))
    assert again == spec and again.as_dict() == {"chief": {5: "c:1"}, "worker": {1: "h:3"}}
    assert tf.train.ClusterSpec(tf.train.ClusterSpec(cluster_def)) == spec


def test_text_format_as_tf_prints_it():
    text = str(tf.train.ClusterDef.FromString(TWO_JOBS))
    assert text.startswith('job {\n  name: "ps"\n  tasks {\n    key: 0\n'
                           '    value: "127.0.0.1:2221"\n  }\n}\n')
    assert text.count("tasks {") == 3


def test_map_type_errors_as_protobuf():
    job = tf.train.JobDef(name="w")
    with pytest.raises(TypeError):
        job.tasks["0"] = "h:1"
    with pytest.raises(TypeError):
        job.tasks[0] = 5
    assert job.tasks[4] == "" and 4 in job.tasks   # reading a missing key inserts it


@pytest.mark.parametrize("data", [
    bytes.fromhex("12050801120568"),   # an address past the entry's end
    bytes.fromhex("0a0512030801"),     # a name past the message's end
    bytes.fromhex("0a02ff00"),         # a name that is not UTF-8
])
def test_malformed_bytes_are_invalid_argument_naming_the_message(data):
    with pytest.raises(InvalidArgumentError, match="not a valid JobDef"):
        tf.train.JobDef.FromString(data)


def test_a_field_of_the_wrong_wire_type_is_kept_as_unknown_as_protobuf_does():
    job = tf.train.JobDef.FromString(bytes.fromhex("120408011005"))   # an address as a varint
    assert dict(job.tasks) == {} and job.SerializeToString() == bytes.fromhex("120408011005")


def test_cluster_def_naming_a_job_twice_is_refused():
    cluster_def = tf.train.ClusterDef()
    cluster_def.job.add(name="ps", tasks={0: "h:1"})
    cluster_def.job.add(name="ps", tasks={1: "h:2"})
    with pytest.raises(ValueError, match="names job 'ps' twice"):
        tf.train.ClusterSpec(cluster_def)


def test_cluster_spec_refuses_a_server_def():
    with pytest.raises(TypeError, match="ClusterDef"):
        tf.train.ClusterSpec(tf.train.ServerDef())


def test_config_proto_carries_a_cluster_def():
    config = tf.ConfigProto(cluster_def=two_jobs_spec().as_cluster_def())
    assert config.cluster_def.SerializeToString() == TWO_JOBS
    assert tf.ConfigProto().cluster_def.SerializeToString() == b""
    with pytest.raises(TypeError, match="ClusterDef.*got .*ClusterSpec"):   # protobuf refuses it
        tf.ConfigProto(cluster_def=two_jobs_spec())

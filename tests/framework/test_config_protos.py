"""ConfigProto, RunOptions, CallableOptions and ServerDef are protobuf messages with TF's field
numbers: their bytes and text are what TF's generated classes (TensorBoard's copies of TF's
config.proto) write, and what those write reads back here; values zmtf cannot use are refused
where a session or server is made from them, naming the field."""

from __future__ import annotations

import pickle

import pytest
from google.protobuf import text_format
from google.protobuf.message import Message as ProtobufMessage
from tensorboard.compat.proto import config_pb2, rewriter_config_pb2

import zmtf as tf
from zmtf.formats.config_proto import CallableOptions
from zmtf.formats.proto_message import to_text
from zmtf.formats.rewriter_config_proto import RewriterConfig

# TF 2.21's tensorflow_server_pb2.ServerDef(cluster={"worker": ["w0:1", "w1:1"]},
# job_name="worker", task_index=1, protocol="grpc", default_session_config=ConfigProto(
# operation_timeout_in_ms=7, device_filters=["/job:ps", "/job:worker/task:1"],
# gpu_options=GPUOptions(allow_growth=True))).SerializeToString(deterministic=True)
TF_SERVER_DEF = (b'\n\x1e\n\x1c\n\x06worker\x12\x08\x08\x01\x12\x04w1:1\x12\x08\x08\x00\x12\x04w0:1'
                 b'\x12\x06worker\x18\x01"#"\x07/job:ps"\x12/job:worker/task:12\x02 \x01X\x07*\x04grpc')


def full_config(module):
    """The same ConfigProto through zmtf's classes or TF's (``module``: tf or config_pb2)."""
    config = module.ConfigProto(
        device_count={"CPU": 2, "GPU": 0}, intra_op_parallelism_threads=3,
        inter_op_parallelism_threads=4, use_per_session_threads=True, placement_period=5,
        device_filters=["/job:ps", "/job:worker/task:0"], allow_soft_placement=True,
        log_device_placement=True, operation_timeout_in_ms=60000, isolate_session_state=True,
        share_cluster_devices_in_session=True)
    config.gpu_options.per_process_gpu_memory_fraction = 0.25
    config.gpu_options.allow_growth = True
    config.gpu_options.visible_device_list = "1,0"
    config.gpu_options.experimental.virtual_devices.add(memory_limit_mb=[1024.0, 512.0])
    config.gpu_options.experimental.use_unified_memory = True
    config.session_inter_op_thread_pool.add(num_threads=2, global_name="shared")
    optimizer = config.graph_options.optimizer_options
    optimizer.opt_level = module.OptimizerOptions.L0
    optimizer.global_jit_level = module.OptimizerOptions.OFF
    optimizer.do_constant_folding = True
    config.graph_options.infer_shapes = True
    config.graph_options.build_cost_model = 2
    rewrite = config.graph_options.rewrite_options
    rewrite.arithmetic_optimization = 2          # RewriterConfig.OFF
    rewrite.memory_optimization = 1              # NO_MEM_OPT
    rewrite.disable_meta_optimizer = True
    rewrite.optimizers.extend(["constfold", "layout"])
    rewrite.custom_optimizers.add(name="mine")
    config.rpc_options.compression_algorithm = "gzip"
    job = config.cluster_def.job.add(name="ps")
    job.tasks[0] = "ps0:2222"
    config.experimental.collective_group_leader = "/job:worker/task:0"
    config.experimental.session_metadata.name = "s"
    config.experimental.mlir_bridge_rollout = 2
    return config


def test_config_proto_bytes_and_text_are_tfs():
    ours, theirs = full_config(tf), full_config(config_pb2)
    assert isinstance(ours, ProtobufMessage)
    assert ours.DESCRIPTOR.full_name == "tensorflow.ConfigProto"
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
    assert to_text(ours) == text_format.MessageToString(theirs)
    assert tf.ConfigProto.FromString(theirs.SerializeToString()) == ours
    assert config_pb2.ConfigProto.FromString(ours.SerializeToString()) == theirs
    assert RewriterConfig.OFF == rewriter_config_pb2.RewriterConfig.OFF
    theirs_benchmark = config_pb2.ConfigProto()   # TF's tf.test.benchmark_config()
    theirs_benchmark.graph_options.rewrite_options.dependency_optimization = \
        rewriter_config_pb2.RewriterConfig.OFF
    assert tf.test.benchmark_config().SerializeToString() == \
        theirs_benchmark.SerializeToString(deterministic=True)


def test_run_options_and_callable_options_bytes_are_tfs():
    def run_options(module):
        options = module.RunOptions(trace_level=module.RunOptions.FULL_TRACE, timeout_in_ms=1500,
                                    inter_op_thread_pool=1, output_partition_graphs=True,
                                    report_tensor_allocations_upon_oom=True)
        options.experimental.collective_graph_key = 9
        options.experimental.run_handler_pool_options.priority = 2
        options.debug_options.debug_tensor_watch_opts.add(node_name="x", debug_ops=["DebugIdentity"])
        options.debug_options.global_step = 5
        return options

    ours, theirs = run_options(tf), run_options(config_pb2)
    assert ours.SerializeToString() == theirs.SerializeToString(deterministic=True)
    assert tf.RunOptions.TraceLevel.Name(3) == "FULL_TRACE"
    ours_callable = CallableOptions(feed=["x:0"], fetch=["y:0"], target=["train"],
                                    run_options=ours, feed_devices={"x:0": "/cpu:0"})
    theirs_callable = config_pb2.CallableOptions(feed=["x:0"], fetch=["y:0"], target=["train"],
                                                 run_options=theirs,
                                                 feed_devices={"x:0": "/cpu:0"})
    assert ours_callable.SerializeToString() == \
        theirs_callable.SerializeToString(deterministic=True)


def test_fields_zmtf_lacks_survive_and_library_methods_work():
    theirs = config_pb2.ConfigProto(inter_op_parallelism_threads=1)
    theirs.experimental.coordination_config.service_type = "standalone"   # not in zmtf's schema
    theirs.graph_options.rewrite_options.auto_parallel.num_replicas = 2   # nor this
    ours = tf.ConfigProto.FromString(theirs.SerializeToString())
    assert ours.inter_op_parallelism_threads == 1
    assert config_pb2.ConfigProto.FromString(ours.SerializeToString()) == theirs
    config = tf.ConfigProto()
    assert not config.HasField("gpu_options")
    config.gpu_options.allow_growth = True
    assert config.HasField("gpu_options")
    copy = tf.ConfigProto()
    copy.CopyFrom(config)
    copy.MergeFrom(tf.ConfigProto(device_filters=["/job:ps"], log_device_placement=True))
    assert copy.gpu_options.allow_growth and list(copy.device_filters) == ["/job:ps"]
    assert pickle.loads(pickle.dumps(full_config(tf))) == full_config(tf)
    with pytest.raises(AttributeError):
        config.graph_options.rewrite_options.arithmetic_optimisation = 2


def test_server_def_carries_its_default_session_config_in_the_bytes():
    server_def = tf.train.ServerDef.FromString(TF_SERVER_DEF)
    assert server_def.default_session_config.operation_timeout_in_ms == 7
    assert list(server_def.default_session_config.device_filters) == ["/job:ps",
                                                                       "/job:worker/task:1"]
    built = tf.train.ServerDef(cluster=server_def.cluster, job_name="worker", task_index=1,
                               protocol="grpc", default_session_config=tf.ConfigProto(
                                   operation_timeout_in_ms=7,
                                   device_filters=["/job:ps", "/job:worker/task:1"],
                                   gpu_options=tf.GPUOptions(allow_growth=True)))
    assert built.SerializeToString() == TF_SERVER_DEF
    server_def.task_index = 0
    server = tf.train.Server(server_def, start=False)
    try:
        config = server.server_def.default_session_config
        assert config.operation_timeout_in_ms == 7 and config.gpu_options.allow_growth
    finally:
        server.stop()


@pytest.mark.parametrize("setting, message", [
    ({"inter_op_parallelism_threads": -1}, "inter_op_parallelism_threads must be >= 0"),
    ({"intra_op_parallelism_threads": -2}, "intra_op_parallelism_threads must be >= 0"),
    ({"gpu_options": {"per_process_gpu_memory_fraction": 1.5}},
     r"gpu_options.per_process_gpu_memory_fraction must be in \[0, 1\], got 1.5"),
    ({"device_filters": ["/job:ps", "/job:worker/task:x"]}, r"device_filters\[1\]"),
])
def test_values_zmtf_cannot_use_are_refused_where_used_naming_the_field(setting, message):
    config = tf.ConfigProto(**setting)   # protobuf checks types only
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match=message):
            tf.Session(config=config)
    with pytest.raises(ValueError, match=message):
        tf.train.Server.create_local_server(config=config, start=False)

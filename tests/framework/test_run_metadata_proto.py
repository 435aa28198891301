"""RunMetadata, StepStats and tfprof's results are protobuf messages with TF's field numbers:
golden bytes against TF's own generated classes (TensorBoard's copies of TF's .proto files;
tfprof_output.proto's bytes made with TF 2.21's tfprof_output_pb2, embedded below), TF's
messages read by zmtf's readers, zmtf-only trace facts kept where TF's readers tolerate them."""

from __future__ import annotations

import json

import numpy as np
import pytest
from google.protobuf import text_format
from google.protobuf.message import Message as ProtobufMessage
from tensorboard.compat.proto import config_pb2, step_stats_pb2

import zmtf as tf
from zmtf.formats.proto_message import to_text
from zmtf.formats.step_stats_proto import fill_step_stats, node_runs
from zmtf.runtime.executor import NodeTrace
from zmtf.training.timeline import Timeline, clock_bounds

CPU = "/job:worker/replica:0/task:0/device:CPU:0"
PS = "/job:ps/replica:0/task:0/device:CPU:0"
T0 = 1000.0   # seconds since the epoch (small: exact to the nanosecond as a float)

#: TF 2.21 (tensorflow.core.profiler.tfprof_output_pb2), deterministic bytes of: a scope view
#: root over dense/w (36x5, 180 params, 7 us on the CPU, 360 flops), and the op view's root
#: over VariableV2 holding it
TF_GRAPH_NODE = bytes.fromhex(
    "0a0b5f544650726f66526f6f74300740b40162600a0764656e73652f77100720b401300740b401522c2f6a6f623a"
    "6c6f63616c686f73742f7265706c6963613a302f7461736b3a302f6465766963653a4350553a305a081202082412"
    "02080568e80270e802900107a00107a80101b00101b8010170e802a00107b00101b80102")
TF_MULTI_NODE = bytes.fromhex(
    "0a0b5f544650726f66526f6f74300740b40148e8025a82010a0a5661726961626c655632100720b40128e802300740"
    "b40148e80252600a0764656e73652f77100720b401300740b401522c2f6a6f623a6c6f63616c686f73742f7265706c"
    "6963613a302f7461736b3a302f6465766963653a4350553a305a08120208241202080568e80270e802900107a00107"
    "a80101b00101b80101680778077807")


def _traces():
    """A constant bound with the plan, a _Recv with its bytes, a fused node, a RunGraph span."""
    bound = [NodeTrace("c", CPU, T0, T0, "MainThread")]
    ran = [NodeTrace("_recv/w_0/from_job_ps", CPU, T0 + 0.000010, T0 + 0.000250, "MainThread", 64),
           NodeTrace("Relu", CPU, T0 + 0.000300, T0 + 0.000301, "pool-1",
                     label="Relu = _FusedElementwise[Mul+Relu](mul, Relu)"),
           NodeTrace("RunGraph", PS, T0 + 0.000020, T0 + 0.000200, "rpc", clock=(-0.000012, 0.000040))]
    return ran, bound


def test_traces_become_tfs_step_stats_bytes_and_read_back():
    ran, bound = _traces()
    ours = tf.RunMetadata()
    fill_step_stats(ours.step_stats, ran, bound)

    theirs = config_pb2.RunMetadata()
    worker = theirs.step_stats.dev_stats.add(device=CPU)
    worker.thread_names[0], worker.thread_names[1] = "MainThread", "pool-1"
    start = 1_000_000_000

    def add(dev, name, rel_us, us, tid, label, size=0):
        stats = dev.node_stats.add(
            node_name=name, all_start_micros=start + rel_us, op_end_rel_micros=us,
            all_end_rel_micros=us, scheduled_micros=start + rel_us, thread_id=tid,
            timeline_label=label, all_start_nanos=(start + rel_us) * 1000,
            op_end_rel_nanos=us * 1000, all_end_rel_nanos=us * 1000,
            scheduled_nanos=(start + rel_us) * 1000)
        if size:
            described = stats.output.add(slot=0).tensor_description.allocation_description
            described.requested_bytes = described.allocated_bytes = size
    add(worker, "c", 0, 0, 0, "c (bound)")
    add(worker, "_recv/w_0/from_job_ps", 10, 240, 0, "_recv/w_0/from_job_ps (64 bytes)", 64)
    ps = theirs.step_stats.dev_stats.add(device=PS)
    ps.thread_names[0] = "rpc"
    add(ps, "RunGraph", 20, 180, 0, "RunGraph (clock offset -12.000 us, within ±40.000 us)")
    add(worker, "Relu", 300, 1, 1, "Relu = _FusedElementwise[Mul+Relu](mul, Relu)")

    assert ours.SerializeToString() == theirs.SerializeToString(deterministic=True)
    assert config_pb2.RunMetadata.FromString(ours.SerializeToString()) == theirs
    runs = {r.node_name: r for r in node_runs(ours.step_stats)}
    assert sorted(runs) == ["Relu", "RunGraph", "_recv/w_0/from_job_ps"]   # "c" was bound
    assert [r.node_name for r in node_runs(ours.step_stats, with_bound=True)][0] == "c"
    recv = runs["_recv/w_0/from_job_ps"]
    assert (recv.thread, recv.bytes) == ("MainThread", 64)
    assert abs(recv.start - (T0 + 0.000010)) < 1e-6 and abs(recv.end - (T0 + 0.000250)) < 1e-6
    assert runs["Relu"].thread == "pool-1" and runs["Relu"].label.startswith("Relu = ")
    offset, bound_s = runs["RunGraph"].clock
    assert offset == pytest.approx(-0.000012) and bound_s == pytest.approx(0.000040)
    assert clock_bounds(list(runs.values()))["/job:ps/replica:0/task:0"] == pytest.approx(0.000040)


def test_a_run_metadata_of_tfs_classes_reads_and_round_trips():
    theirs = config_pb2.RunMetadata()
    dev = theirs.step_stats.dev_stats.add(device=CPU)        # TF1 writes micros only
    node = dev.node_stats.add(node_name="MatMul", all_start_micros=5_000_000, op_start_rel_micros=1,
                              op_end_rel_micros=30, all_end_rel_micros=31, thread_id=7,
                              timeline_label="MatMul = MatMul(a, b)")
    node.memory.add(allocator_name="cpu", total_bytes=64, peak_bytes=64)
    out = node.output.add(slot=0)
    out.tensor_description.dtype = 1
    out.tensor_description.shape.dim.add(size=4)
    out.tensor_description.allocation_description.requested_bytes = 16
    node.memory_stats.persistent_tensor_alloc_ids.extend([3, 4])
    cost = theirs.cost_graph.node.add(name="MatMul", device=CPU, id=1, compute_cost=9)
    cost.output_info.add(size=16, dtype=1).shape.dim.add(size=4)
    cost.input_info.add(preceding_node=0, preceding_port=1)
    theirs.cost_graph.cost.add(cost=1.5, dimension="flops")
    theirs.partition_graphs.add().node.add(name="MatMul", op="MatMul", device=CPU)
    theirs.function_graphs.add().pre_optimization_graph.node.add(name="f", op="NoOp")
    theirs.session_metadata.name, theirs.session_metadata.version = "s", 2
    data = theirs.SerializeToString(deterministic=True)

    ours = tf.RunMetadata.FromString(data)
    assert ours.SerializeToString() == data
    assert to_text(ours) == text_format.MessageToString(theirs)   # text drops unknown fields
    assert ours.cost_graph.node[0].output_info[0].shape.dim[0].size == 4
    assert ours.function_graphs[0].pre_optimization_graph.node[0].op == "NoOp"
    assert ours.partition_graphs[0].node[0].name == "MatMul" and ours.session_metadata.version == 2
    (run,) = node_runs(ours.step_stats)
    assert (run.start, run.end, run.thread, run.bytes) == (5.0, 5.000031, "7", 16)
    trace = json.loads(Timeline(ours.step_stats).generate_chrome_trace_format())
    assert [e["dur"] for e in trace["traceEvents"] if e["ph"] == "X"] == [31.0]


def test_a_traced_local_run_serializes_for_tfs_classes_and_typos_fail():
    x = tf.placeholder(tf.float32, [2, 2], name="x")
    y = tf.matmul(x, tf.constant(np.eye(2, dtype=np.float32)), name="y")
    metadata = tf.RunMetadata()
    config = tf.ConfigProto()
    config.experimental.session_metadata.name = "serving"
    with tf.Session(config=config) as sess:
        sess.run(y, {x: np.ones((2, 2), np.float32)}, run_metadata=metadata,
                 options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE,
                                       output_partition_graphs=True))
    assert isinstance(metadata, ProtobufMessage) and metadata.HasField("step_stats")
    theirs = config_pb2.RunMetadata.FromString(metadata.SerializeToString())
    (dev,) = theirs.step_stats.dev_stats
    assert dev.device.endswith("/device:CPU:0") and set(dev.thread_names.values())
    stats = {n.node_name: n for n in dev.node_stats}
    assert stats["y"].timeline_label == "y" and stats["Const"].timeline_label == "Const (bound)"
    assert abs(stats["y"].all_start_nanos // 1000 - stats["y"].all_start_micros) <= 1
    assert [g.node[-1].name for g in theirs.partition_graphs] == ["y"]
    assert theirs.session_metadata.name == "serving"   # as TF's DirectSession reports it
    assert isinstance(theirs.step_stats.dev_stats[0], step_stats_pb2.DeviceStepStats)
    with pytest.raises(AttributeError):
        metadata.step_stats.dev_stats[0].node_stats[0].start = 1.0   # a NodeTrace's, not TF's
    assert not metadata.HasField("cost_graph")


def test_profiler_results_are_tfs_tfprof_messages():
    ours = tf.profiler.GraphNodeProto.FromString(TF_GRAPH_NODE)
    assert ours.DESCRIPTOR.full_name == "tensorflow.tfprof.GraphNodeProto"
    assert ours.SerializeToString() == TF_GRAPH_NODE
    assert [d.size for d in ours.children[0].shapes[0].dim] == [36, 5]
    assert tf.profiler.MultiGraphNodeProto.FromString(TF_MULTI_NODE).SerializeToString() == TF_MULTI_NODE

    tf.reset_default_graph()
    with tf.variable_scope("dense"):
        tf.get_variable("w", [36, 5])
    options = tf.profiler.ProfileOptionBuilder(
        tf.profiler.ProfileOptionBuilder.trainable_variables_parameter()).with_empty_output().build()
    root = tf.profiler.profile(cmd="scope", options=options)
    assert isinstance(root, tf.profiler.GraphNodeProto) and root.total_parameters == 180
    assert tf.profiler.GraphNodeProto.FromString(root.SerializeToString()) == root
    memory = {"requested_bytes", "peak_bytes", "residual_bytes", "output_bytes"}
    written = {f.name for f, _ in root.children[0].children[0].ListFields()}
    assert "parameters" in written and not written & (memory | {f"total_{m}" for m in memory})
    ops = tf.profiler.profile(cmd="op", options=options)
    assert isinstance(ops, tf.profiler.MultiGraphNodeProto)
    assert ops.children[0].graph_nodes[0].name == "dense/w"

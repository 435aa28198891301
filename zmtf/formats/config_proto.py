"""TF1's option messages (config.proto): ConfigProto, GPUOptions, GraphOptions,
OptimizerOptions, RPCOptions, ThreadPoolOptionProto, RunOptions and CallableOptions as protobuf
messages with TF's field numbers (built from these tables: formats/proto_message.py), so their
bytes and text are TF's and typos, ``HasField``, ``CopyFrom`` and unknown fields behave as on
TF's classes. RunMetadata too: its ``step_stats`` is TF's StepStats (formats/step_stats_proto.py).

protobuf classes cannot check a value when it is set, so the values zmtf interprets are checked
where they are used: ``check_session_config`` when a session or server is made from a config.
"""

from __future__ import annotations

from typing import Any

from zmtf.formats.cluster_def_proto import ClusterDef
from zmtf.formats.cost_graph_proto import CostGraphDef
from zmtf.formats.graph_def_proto import GraphDef
from zmtf.formats.proto_message import Field, Message, RepeatedMessages
from zmtf.formats.rewriter_config_proto import RewriterConfig
from zmtf.formats.step_stats_proto import StepStats
from zmtf.framework.device_spec import DeviceSpec


def device_matches(device: str, filters: list[str]) -> bool:
    """Whether ``device`` (a full name) matches one of ``filters``: every field a filter
    names is equal (TF's device_filters rule)."""
    full = DeviceSpec.from_string(device)
    for spec in filters:
        want = DeviceSpec.from_string(spec)
        if all(getattr(want, name) is None or getattr(want, name) == getattr(full, name)
               for name in ("job", "replica", "task", "device_type", "device_index")):
            return True
    return False


class GPUOptions(Message):
    """GPU memory options (used by GPU devices; recorded but inert on a CPU-only process).
    ``per_process_gpu_memory_fraction`` must be in [0, 1] (checked when a session or server
    is made)."""

    class Experimental(Message):
        class VirtualDevices(Message):
            FIELDS = (Field(1, "memory_limit_mb", "float", repeated=True),
                      Field(2, "priority", "int32", repeated=True),
                      Field(3, "device_ordinal", "int32", repeated=True))

        class StreamMergeOptions(Message):
            FIELDS = (Field(1, "merge_host_to_device_stream", "bool"),
                      Field(2, "merge_device_to_host_stream", "bool"),
                      Field(3, "merge_device_to_device_stream", "bool"))

        FIELDS = (Field(1, "virtual_devices", "message", repeated=True, message=VirtualDevices),
                  Field(2, "use_unified_memory", "bool"),
                  Field(3, "num_dev_to_dev_copy_streams", "int32"),
                  Field(4, "collective_ring_order", "string"),
                  Field(5, "timestamped_allocator", "bool"),
                  Field(7, "kernel_tracker_max_interval", "int32"),
                  Field(8, "kernel_tracker_max_bytes", "int32"),
                  Field(9, "kernel_tracker_max_pending", "int32"),
                  Field(10, "internal_fragmentation_fraction", "double"),
                  Field(11, "use_cuda_malloc_async", "bool"),
                  Field(12, "disallow_retry_on_allocation_failure", "bool"),
                  Field(13, "gpu_host_mem_limit_in_mb", "float"),
                  Field(14, "gpu_host_mem_disallow_growth", "bool"),
                  Field(15, "num_virtual_devices_per_gpu", "int32"),
                  Field(16, "gpu_system_memory_size_in_mb", "int32"),
                  Field(17, "populate_pjrt_gpu_client_creation_info", "bool"),
                  Field(18, "node_id", "int32"),
                  Field(19, "stream_merge_options", "message", message=StreamMergeOptions))

    FIELDS = (Field(1, "per_process_gpu_memory_fraction", "double"),
              Field(2, "allocator_type", "string"),
              Field(3, "deferred_deletion_bytes", "int64"),
              Field(4, "allow_growth", "bool"),
              Field(5, "visible_device_list", "string"),
              Field(6, "polling_active_delay_usecs", "int32"),
              Field(7, "polling_inactive_delay_msecs", "int32"),
              Field(8, "force_gpu_compatible", "bool"),
              Field(9, "experimental", "message", message=Experimental))


class ThreadPoolOptionProto(Message):
    """One of ``ConfigProto.session_inter_op_thread_pool``: its size (0: one per core; must be
    >= 0) and a ``global_name`` that sessions share it by. Accepted and checked; zmtf runs a
    session's steps on its inter-op pool whatever pool a run names."""

    FIELDS = (Field(1, "num_threads", "int32"), Field(2, "global_name", "string"))


class OptimizerOptions(Message):
    """TF1's graph-optimizer settings: accepted and recorded. zmtf runs no constant folding
    pass and no XLA; ``global_jit_level = OptimizerOptions.OFF`` turns off its one fusing
    rewrite, elementwise fusion (zmtf.runtime.fusion; also ZMTF_FUSION=0), in a local
    session. The other fields change nothing."""

    L1, L0 = 0, -1                             # Level (the values protobuf's enum also gives)
    DEFAULT, OFF, ON_1, ON_2 = 0, -1, 1, 2     # GlobalJitLevel

    FIELDS = (Field(1, "do_common_subexpression_elimination", "bool"),
              Field(2, "do_constant_folding", "bool"),
              Field(3, "opt_level", "enum", enum="Level", names={0: "L1", -1: "L0"}),
              Field(4, "do_function_inlining", "bool"),
              Field(5, "global_jit_level", "enum", enum="GlobalJitLevel",
                    names={0: "DEFAULT", -1: "OFF", 1: "ON_1", 2: "ON_2"}),
              Field(6, "max_folded_constant_in_bytes", "int64"),
              Field(7, "cpu_global_jit", "bool"))


class GraphOptions(Message):
    """TF1's GraphOptions: accepted and recorded; ``infer_shapes`` adds ``_output_shapes`` to
    a session's partition graphs, the rest is inert (see OptimizerOptions)."""

    FIELDS = (Field(2, "enable_recv_scheduling", "bool"),
              Field(3, "optimizer_options", "message", message=OptimizerOptions),
              Field(4, "build_cost_model", "int64"),
              Field(5, "infer_shapes", "bool"),
              Field(6, "place_pruned_graph", "bool"),
              Field(7, "enable_bfloat16_sendrecv", "bool"),
              Field(8, "timeline_step", "int32"),
              Field(9, "build_cost_model_after", "int64"),
              Field(10, "rewrite_options", "message", message=RewriterConfig))


class RPCOptions(Message):
    """TF's gRPC settings (rpc_options.proto): accepted; zmtf speaks ZeroMQ."""

    FIELDS = (Field(1, "use_rpc_for_inprocess_master", "bool"),
              Field(2, "compression_algorithm", "string"),
              Field(3, "compression_level", "int32"),
              Field(4, "cache_rpc_response", "bool"),
              Field(5, "disable_session_connection_sharing", "bool"),
              Field(6, "num_channels_per_target", "int32"))


class SessionMetadata(Message):
    """A session's name and version (``ConfigProto.experimental.session_metadata``)."""

    FIELDS = (Field(1, "name", "string"), Field(2, "version", "int64"))


class ConfigProto(Message):
    """Session options: ``config = tf.ConfigProto(); config.log_device_placement = True``.

    ``device_filters`` (e.g. ``["/job:ps", "/job:worker/task:0"]``, as TF1's between-graph
    scripts set it) limits the devices a remote session's master considers and the tasks it
    asks for their devices: a worker then neither places ops on nor waits for the other
    workers. The master's own task always stays. ``cluster_def`` (a ``tf.train.ClusterDef``)
    names the cluster a remote session expects: zmtf's master checks it against the cluster
    its server was started with and refuses one that differs (it does not grow its cluster
    for a session, as TF's "dynamic cluster" does); an in-process session ignores it, as
    TF's does. ``isolate_session_state`` keeps a remote session's variables, queues and
    tables its own on every worker. ``device_count={"CPU": n}`` gives n CPU devices.
    ``graph_options``, ``placement_period``, ``rpc_options``, ``experimental`` and
    ``session_inter_op_thread_pool`` (checked) are accepted for TF1 scripts and change nothing.
    Thread counts must be >= 0 and every device filter a device name: checked when a session
    or server is made (``check_session_config``).
    """

    class Experimental(Message):
        FIELDS = (Field(1, "collective_group_leader", "string"),
                  Field(3, "executor_type", "string"),
                  Field(4, "recv_buf_max_chunk", "int32"),
                  Field(5, "use_numa_affinity", "bool"),
                  Field(6, "collective_deterministic_sequential_execution", "bool"),
                  Field(7, "collective_nccl", "bool"),
                  Field(8, "share_session_state_in_clusterspec_propagation", "bool"),
                  Field(9, "disable_thread_spinning", "bool"),
                  Field(10, "share_cluster_devices_in_session", "bool"),
                  Field(11, "session_metadata", "message", message=SessionMetadata),
                  Field(12, "optimize_for_static_graph", "bool"),
                  Field(13, "enable_mlir_bridge", "bool"),
                  Field(14, "disable_output_partition_graphs", "bool"),
                  Field(15, "xla_fusion_autotuner_thresh", "int64"),
                  Field(16, "enable_mlir_graph_optimization", "bool"),
                  Field(17, "mlir_bridge_rollout", "enum", enum="MlirBridgeRollout",
                        names={0: "MLIR_BRIDGE_ROLLOUT_UNSPECIFIED",
                               1: "MLIR_BRIDGE_ROLLOUT_ENABLED",
                               2: "MLIR_BRIDGE_ROLLOUT_DISABLED"}),
                  Field(18, "use_tfrt", "bool"),
                  Field(21, "disable_functional_ops_lowering", "bool"),
                  Field(22, "xla_prefer_single_graph_cluster", "bool"))

    FIELDS = (Field(1, "device_count", "map", key="string", value="int32"),
              Field(2, "intra_op_parallelism_threads", "int32"),
              Field(3, "placement_period", "int32"),
              Field(4, "device_filters", "string", repeated=True),
              Field(5, "inter_op_parallelism_threads", "int32"),
              Field(6, "gpu_options", "message", message=GPUOptions),
              Field(7, "allow_soft_placement", "bool"),
              Field(8, "log_device_placement", "bool"),
              Field(9, "use_per_session_threads", "bool"),
              Field(10, "graph_options", "message", message=GraphOptions),
              Field(11, "operation_timeout_in_ms", "int64"),
              Field(12, "session_inter_op_thread_pool", "message", repeated=True,
                    message=ThreadPoolOptionProto),
              Field(13, "rpc_options", "message", message=RPCOptions),
              Field(14, "cluster_def", "message", message=ClusterDef),
              Field(15, "isolate_session_state", "bool"),
              Field(16, "experimental", "message", message=Experimental),
              Field(17, "share_cluster_devices_in_session", "bool"),
              Field(18, "pluggable_device_options", "message", message=GPUOptions))
    # for type checkers (the library sets these from FIELDS)
    device_filters: list[str]
    session_inter_op_thread_pool: RepeatedMessages


def check_session_config(config: Any) -> None:
    """Refuse a ConfigProto whose values zmtf cannot use, naming the field: called where a
    session or server is made from it (a protobuf message cannot check a value when it is
    set). ValueError, as TF's session creation fails on them."""
    for name in ("inter_op_parallelism_threads", "intra_op_parallelism_threads"):
        if getattr(config, name) < 0:
            raise ValueError(f"{name} must be >= 0 (0 means one per core), got "
                             f"{getattr(config, name)}")
    for pool in config.session_inter_op_thread_pool:
        if pool.num_threads < 0:
            raise ValueError(f"session_inter_op_thread_pool num_threads must be >= 0 (0 means "
                             f"one per core), got {pool.num_threads}")
    fraction = config.gpu_options.per_process_gpu_memory_fraction
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"gpu_options.per_process_gpu_memory_fraction must be in [0, 1], got "
                         f"{fraction}")
    for index, spec in enumerate(config.device_filters):
        try:
            DeviceSpec.from_string(spec)
        except ValueError as exc:
            raise ValueError(f"device_filters[{index}] '{spec}' is not a device name ({exc}); "
                             f"device_filters is a list of device names, e.g. ['/job:ps']") from None


class DebugTensorWatch(Message):
    """tfdbg's watch on one tensor (debug.proto): accepted; zmtf has no debug ops."""

    FIELDS = (Field(1, "node_name", "string"), Field(2, "output_slot", "int32"),
              Field(3, "debug_ops", "string", repeated=True),
              Field(4, "debug_urls", "string", repeated=True),
              Field(5, "tolerate_debug_op_creation_failures", "bool"))


class DebugOptions(Message):
    """``RunOptions.debug_options`` (debug.proto): accepted and inert."""

    FIELDS = (Field(4, "debug_tensor_watch_opts", "message", repeated=True,
                    message=DebugTensorWatch),
              Field(10, "global_step", "int64"), Field(11, "reset_disk_byte_usage", "bool"))


class RunOptions(Message):
    """Per-run options: ``timeout_in_ms`` (DeadlineExceededError), ``trace_level`` (fills
    RunMetadata.step_stats) and ``output_partition_graphs`` (RunMetadata.partition_graphs)."""

    NO_TRACE, SOFTWARE_TRACE, HARDWARE_TRACE, FULL_TRACE = 0, 1, 2, 3   # TraceLevel

    class Experimental(Message):
        class RunHandlerPoolOptions(Message):
            FIELDS = (Field(1, "priority", "int64"),)

        FIELDS = (Field(1, "collective_graph_key", "int64"),
                  Field(2, "use_run_handler_pool", "bool"),
                  Field(3, "run_handler_pool_options", "message", message=RunHandlerPoolOptions))

    FIELDS = (Field(1, "trace_level", "enum", enum="TraceLevel", names={
                  0: "NO_TRACE", 1: "SOFTWARE_TRACE", 2: "HARDWARE_TRACE", 3: "FULL_TRACE"}),
              Field(2, "timeout_in_ms", "int64"),
              Field(3, "inter_op_thread_pool", "int32"),
              Field(5, "output_partition_graphs", "bool"),
              Field(6, "debug_options", "message", message=DebugOptions),
              Field(7, "report_tensor_allocations_upon_oom", "bool"),
              Field(8, "experimental", "message", message=Experimental))


class TensorConnection(Message):
    """``CallableOptions.tensor_connection``: a tensor read in place of another."""

    FIELDS = (Field(1, "from_tensor", "string"), Field(2, "to_tensor", "string"))


class CallableOptions(Message):
    """What Session._make_callable_from_options runs: tensors fed (``feed``) and fetched
    (``fetch``) by name, ops run (``target``), and the ``run_options`` of every call."""

    FIELDS = (Field(1, "feed", "string", repeated=True),
              Field(2, "fetch", "string", repeated=True),
              Field(3, "target", "string", repeated=True),
              Field(4, "run_options", "message", message=RunOptions),
              Field(5, "tensor_connection", "message", repeated=True, message=TensorConnection),
              Field(6, "feed_devices", "map", key="string", value="string"),
              Field(7, "fetch_devices", "map", key="string", value="string"),
              Field(8, "fetch_skip_sync", "bool"))


class RunMetadata(Message):
    """Filled by run(): ``step_stats`` (traced: RunOptions.trace_level) says when and where each
    node ran (formats/step_stats_proto.py); ``partition_graphs`` (RunOptions.
    output_partition_graphs) holds a GraphDef per device of the nodes the step ran there. Every
    run() given it clears it first, as TF1's does. zmtf builds no cost model and runs no
    functions as separate graphs: ``cost_graph`` and ``function_graphs`` stay empty."""

    class FunctionGraphs(Message):
        FIELDS = (Field(1, "partition_graphs", "message", repeated=True, message=GraphDef),
                  Field(2, "pre_optimization_graph", "message", message=GraphDef),
                  Field(3, "post_optimization_graph", "message", message=GraphDef))

    FIELDS = (Field(1, "step_stats", "message", message=StepStats),
              Field(2, "cost_graph", "message", message=CostGraphDef),
              Field(3, "partition_graphs", "message", repeated=True, message=GraphDef),
              Field(4, "function_graphs", "message", repeated=True, message=FunctionGraphs),
              Field(5, "session_metadata", "message", message=SessionMetadata))

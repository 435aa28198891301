"""ConfigProto, GPUOptions, RunOptions and RunMetadata: TF1's option objects, validated."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Callable, TypeVar

from zmtf.formats.cluster_def_proto import ClusterDef, register_session_config
from zmtf.formats.step_stats_proto import StepStats
from zmtf.framework.device_spec import DeviceSpec


_Options = TypeVar("_Options")


def _fields_only(cls: type[_Options]) -> type[_Options]:
    """Refuse a keyword that is no field, as a protobuf message does: TF1 scripts spell these
    option names by hand, and a typo must fail, not be silently ignored. (With ``slots=True``
    the dataclass already refuses a misspelled attribute assignment: AttributeError.)"""
    known = {f.name for f in fields(cls)}   # type: ignore[arg-type]
    init: Callable[..., None] = cls.__init__   # type: ignore[misc]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        for name in kwargs:
            if name not in known:
                raise ValueError(f'Protocol message {cls.__name__} has no "{name}" field.')
        init(self, *args, **kwargs)

    __init__.__doc__ = init.__doc__
    cls.__init__ = __init__   # type: ignore[misc]
    return cls


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


@_fields_only
@dataclass(slots=True)
class GPUOptions:
    """GPU memory options (used by GPU devices; recorded but inert on a CPU-only process)."""

    per_process_gpu_memory_fraction: float = 0.0
    allow_growth: bool = False
    visible_device_list: str = ""

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.per_process_gpu_memory_fraction) <= 1.0:
            raise ValueError(
                f"gpu_options.per_process_gpu_memory_fraction must be in [0, 1], got "
                f"{self.per_process_gpu_memory_fraction}"
            )


@_fields_only
@dataclass(slots=True)
class ThreadPoolOptionProto:
    """One of ``ConfigProto.session_inter_op_thread_pool``: its size (0: one per core) and a
    ``global_name`` that sessions share it by. Accepted and checked; zmtf runs a session's
    steps on its inter-op pool whatever pool a run names."""

    num_threads: int = 0
    global_name: str = ""

    def __post_init__(self) -> None:
        if int(self.num_threads) < 0:
            raise ValueError(f"session_inter_op_thread_pool num_threads must be >= 0 (0 means one "
                             f"per core), got {self.num_threads}")


class ThreadPools(list):  # type: ignore[type-arg]
    """``session_inter_op_thread_pool``: a list with protobuf's ``add(**fields)``."""

    def add(self, **fields: Any) -> ThreadPoolOptionProto:
        pool = ThreadPoolOptionProto(**fields)
        self.append(pool)
        return pool


@_fields_only
@dataclass(slots=True)
class OptimizerOptions:
    """TF1's graph-optimizer settings: accepted and recorded. zmtf runs no constant folding
    pass and no XLA; ``global_jit_level = OptimizerOptions.OFF`` turns off its one fusing
    rewrite, elementwise fusion (zmtf.runtime.fusion; also ZMTF_FUSION=0), in a local
    session. The other fields change nothing."""

    L1 = 0
    L0 = -1
    DEFAULT = 0
    OFF = -1
    ON_1 = 1
    ON_2 = 2

    do_common_subexpression_elimination: bool = False
    do_constant_folding: bool = False
    do_function_inlining: bool = False
    opt_level: int = 0
    global_jit_level: int = 0


@_fields_only
@dataclass(slots=True)
class GraphOptions:
    """TF1's GraphOptions: accepted and recorded, inert (see OptimizerOptions)."""

    optimizer_options: OptimizerOptions = field(default_factory=OptimizerOptions)
    enable_bfloat16_sendrecv: bool = False
    infer_shapes: bool = False
    place_pruned_graph: bool = False
    build_cost_model: int = 0
    timeline_step: int = 0
    rewrite_options: Any = None


@_fields_only
@dataclass(slots=True)
class ConfigProto:
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
    ``graph_options``, ``placement_period``, ``rpc_options`` and
    ``session_inter_op_thread_pool`` (checked) are accepted for TF1 scripts and change nothing.
    """

    log_device_placement: bool = False
    allow_soft_placement: bool = False
    inter_op_parallelism_threads: int = 0
    intra_op_parallelism_threads: int = 0
    use_per_session_threads: bool = False
    gpu_options: GPUOptions = field(default_factory=GPUOptions)
    device_count: dict[str, int] = field(default_factory=dict)
    operation_timeout_in_ms: int = 0
    device_filters: list[str] = field(default_factory=list)
    graph_options: GraphOptions = field(default_factory=GraphOptions)
    isolate_session_state: bool = False
    placement_period: int = 0
    rpc_options: Any = None
    cluster_def: ClusterDef = field(default_factory=ClusterDef)
    session_inter_op_thread_pool: ThreadPools = field(default_factory=ThreadPools)

    def __post_init__(self) -> None:
        self.session_inter_op_thread_pool = ThreadPools(
            pool if isinstance(pool, ThreadPoolOptionProto) else ThreadPoolOptionProto(**pool)
            for pool in self.session_inter_op_thread_pool)
        if not isinstance(self.cluster_def, ClusterDef):
            raise TypeError(f"cluster_def must be a tf.train.ClusterDef (for a ClusterSpec, pass "
                            f"cluster_spec.as_cluster_def()), got {type(self.cluster_def).__name__}")
        if isinstance(self.gpu_options, dict):
            self.gpu_options = GPUOptions(**self.gpu_options)
        if isinstance(self.device_filters, str):
            raise TypeError("device_filters must be a list of device names, e.g. ['/job:ps']")
        self.device_filters = list(self.device_filters)
        for spec in self.device_filters:
            DeviceSpec.from_string(spec)   # a malformed filter fails here, naming itself
        for name in ("inter_op_parallelism_threads", "intra_op_parallelism_threads"):
            if int(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be >= 0 (0 means one per core), got {getattr(self, name)}")


register_session_config(ConfigProto)   # ServerDef().default_session_config


@_fields_only
@dataclass(slots=True)
class RunOptions:
    """Per-run options: ``timeout_in_ms`` (DeadlineExceededError) and ``trace_level``."""

    NO_TRACE = 0
    SOFTWARE_TRACE = 1
    HARDWARE_TRACE = 2
    FULL_TRACE = 3

    trace_level: int = 0
    timeout_in_ms: int = 0
    output_partition_graphs: bool = False   # run() fills RunMetadata.partition_graphs


@_fields_only
@dataclass(slots=True)
class RunMetadata:
    """Filled by run(): ``step_stats`` (when tracing) lists when and where each node ran;
    ``partition_graphs`` (RunOptions.output_partition_graphs) holds a GraphDef per device of
    the nodes the step ran there. Every run() given it clears it first, as TF1's does."""

    step_stats: StepStats = field(default_factory=StepStats)   # TF1's dev_stats, on one clock
    partition_graphs: list[Any] = field(default_factory=list)
    cost_graph: Any = None   # TF1's build_cost_model output: zmtf builds no cost model

    def HasField(self, name: str) -> bool:  # noqa: N802 - protobuf's name
        """Whether the singular field ``name`` holds something (protobuf's HasField)."""
        if name == "step_stats":
            return len(self.step_stats) > 0 or bool(getattr(self.step_stats, "bound", None))
        if name == "cost_graph":
            return self.cost_graph is not None
        raise ValueError(f'Protocol message RunMetadata has no singular "{name}" field.')

    def Clear(self) -> None:  # noqa: N802 - protobuf's name
        self.step_stats = StepStats()
        self.partition_graphs = []
        self.cost_graph = None


@dataclass
class CallableOptions:
    """What Session._make_callable_from_options runs: tensors fed (``feed``) and fetched
    (``fetch``) by name, ops run (``target``), and the ``run_options`` of every call."""

    feed: list[str] = field(default_factory=list)
    fetch: list[str] = field(default_factory=list)
    target: list[str] = field(default_factory=list)
    run_options: RunOptions = field(default_factory=RunOptions)

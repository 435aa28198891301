"""The step logic shared by Session and AsyncSession for an in-process target.

``begin`` resolves fetches and feeds and finds (or builds) the bound plan; ``start`` hands
it to the executor; ``finish`` rebuilds the fetch structure. Session and AsyncSession differ
only in how they wait for the executor's Future.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from zmtf.kernels import lookup as kernel_lookup
from zmtf.kernels import supports as kernel_supports
from zmtf.formats.config_proto import ConfigProto, RunMetadata, RunOptions
from zmtf.formats.step_stats_proto import StepStats
from zmtf.client.fetches import FetchPlans, Rebuild
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.errors import FeedMismatchError, FetchNotFoundError
from zmtf.framework.dtypes import to_string_array
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.framework.sparse_tensor import SparseTensor, sparse_feed_parts
from zmtf.placement.plan import StepPlanner
from zmtf.kernels.cpu.blas import set_blas_threads
from zmtf.runtime import functional  # noqa: F401  (registers the While kernels)
from zmtf.runtime.context import KernelContext
from zmtf.runtime.devices import SHARED_POOLS, DevicePools, LocalDevice, local_devices
from zmtf.runtime.bound_steps import BoundSteps
from zmtf.runtime.executor import BoundStep, Executor, NodeTrace, fetched
from zmtf.runtime.resources import ResourceContainer

placement_log = logging.getLogger("zmtf.placement")
LOCAL_TASK = DeviceSpec(job="localhost", replica=0, task=0)


@dataclass(slots=True)
class StepCall:
    """One run() in flight: the bound plan, the feed values and how to rebuild the result."""

    step: BoundStep
    feed_values: list[Any]
    rebuild: Rebuild
    trace: list[NodeTrace] | None
    run_metadata: RunMetadata | None
    timeout: float | None


def _supports(op_type: str, device_type: str, dtype: str | None) -> bool:
    return kernel_supports(op_type, device_type, dtype)


class LocalSessionCore:
    """Plans, caches and executes steps of one graph in this process."""

    def __init__(self, graph: Graph, config: ConfigProto | None) -> None:
        self.graph = graph
        self.config = config or ConfigProto()
        self._own_pools = self.config.use_per_session_threads
        self._pools = (DevicePools(self.config.inter_op_parallelism_threads) if self._own_pools
                       else SHARED_POOLS.get(self.config.inter_op_parallelism_threads))
        self.devices: list[LocalDevice] = local_devices(
            "/job:localhost/replica:0/task:0", self.config.gpu_options, self.config.device_count,
            self._pools)
        self.executor = Executor(self._pools)
        self.resources = ResourceContainer()
        intra = self.config.intra_op_parallelism_threads or self._pools.threads
        set_blas_threads(self.config.intra_op_parallelism_threads)
        self.context = KernelContext(self.resources, intra)
        self.context.executor = self.executor
        planner = StepPlanner(_supports, LOCAL_TASK,
                              allow_soft_placement=self.config.allow_soft_placement,
                              log_placement=self.config.log_device_placement)
        # keyed by object identity and graph version: emptied now and then, not kept forever
        self._bound = BoundSteps(planner, [d.name for d in self.devices], kernel_lookup,
                                 self.resources, limit=256)
        self._fetch_plans = FetchPlans(self.graph)
        if self.config.log_device_placement:
            make_placement_log_visible()
            for d in self.devices:
                placement_log.info("Created device %s (%s)", d.name, d.description)

    # ---- one step ---------------------------------------------------------------
    def begin(self, fetches: Any, feed_dict: dict | None, options: RunOptions | None,
              run_metadata: RunMetadata | None, feeds: Feeds | None = None) -> StepCall:
        """``feeds``: ``feed_dict`` resolved and converted already (AsyncSession, off its loop)."""
        plan = self._fetch_plans.get(fetches)
        if feeds is None:
            feeds = feed_arrays(self.graph, feed_dict) if feed_dict else ([], [])
        feed_tensors, feed_values = feeds
        step = self._bound_step(plan.tensors, feed_tensors, plan.operations)

        def rebuild_all(values: list[Any]) -> Any:
            return plan.rebuild([None if i is None else fetched(values[i], self.resources)
                                 for i in plan.picks])

        tracing = options is not None and options.trace_level > 0 and run_metadata is not None
        timeout_ms = (options.timeout_in_ms if options else 0) or self.config.operation_timeout_in_ms
        return StepCall(step, feed_values, rebuild_all, [] if tracing else None, run_metadata,
                        timeout_ms / 1000.0 if timeout_ms > 0 else None)

    def start(self, call: StepCall, *, inline: bool) -> Any:
        return self.executor.run(call.step, call.feed_values, self.context, inline=inline,
                                 trace=call.trace)

    def finish(self, call: StepCall, values: list[Any]) -> Any:
        if call.run_metadata is not None and call.trace is not None:
            call.run_metadata.step_stats = StepStats(call.trace)
        return call.rebuild(values)

    # ---- plans and feeds ------------------------------------------------------------
    def _bound_step(self, fetches: list[Tensor], feeds: list[Tensor], targets: list[Operation]) -> BoundStep:
        key = (self.graph.version, tuple(map(id, fetches)), tuple(map(id, feeds)), tuple(map(id, targets)))
        return self._bound.steps.get(key) or self._bound.bind(key, fetches, feeds, targets)

    def close(self) -> None:
        """Release steps blocked in queues or accumulators (CancelledError), then the pools."""
        self.resources.cancel_waiters("Session has been closed.")
        if self._own_pools:
            self._pools.shutdown()


#: Resolved feeds: the fed tensors and their values as arrays of the tensors' dtypes.
Feeds = tuple[list[Tensor], list[np.ndarray]]
#: a fed array at least this big that must be converted (another dtype, not contiguous) is
#: converted off the event loop by AsyncSession (``heavy_feeds``): 64 MB took the loop 131 ms
OFF_LOOP_FEED_BYTES = 1 << 20
#: ... and so is a list or tuple this long (numpy reads it element by element)
OFF_LOOP_FEED_ITEMS = 1024


def feed_arrays(graph: Graph, feed_dict: dict) -> Feeds:
    """Resolve feed keys (tensors, names, variables) and check each value against its tensor."""
    tensors, values = resolve_feeds(graph, feed_dict)
    return tensors, convert_feeds(tensors, values)


def resolve_feeds(graph: Graph, feed_dict: dict) -> tuple[list[Tensor], list[Any]]:
    """The fed tensors, and the values as given (cheap: no value is read)."""
    tensors, values = [], []
    for key, value in _split_sparse_feeds(feed_dict):
        element = graph.as_graph_element(key, allow_operation=False)
        if not isinstance(element, Tensor):
            raise FetchNotFoundError(None, None, f"Cannot feed {key!r}: it names an Operation, "
                                     f"not a Tensor; feed one of its outputs such as '{element.name}:0'.")
        tensors.append(element)
        values.append(value)
    return tensors, values


def convert_feeds(tensors: list[Tensor], values: list[Any]) -> list[np.ndarray]:
    """Each value as an array of its tensor's dtype, checked against its static shape (work
    in proportion to the values' size: ``heavy_feeds`` says when it is worth a thread)."""
    return [_feed_value(tensor, value) for tensor, value in zip(tensors, values)]


def heavy_feeds(tensors: list[Tensor], values: list[Any]) -> bool:
    """Whether converting (and encoding) these values would hold an event loop for long: a
    big array of another dtype or not contiguous, or a long list. A big array that is already
    what the wire sends costs nothing: it is sent from its own memory."""
    for tensor, value in zip(tensors, values):
        if isinstance(value, np.ndarray):
            if value.nbytes >= OFF_LOOP_FEED_BYTES and (
                    value.dtype != tensor.dtype.np or not value.flags.c_contiguous):
                return True
        elif isinstance(value, (list, tuple)) and len(value) >= OFF_LOOP_FEED_ITEMS:
            return True
    return False


def contiguous_feeds(tensors: list[Tensor], values: list[Any]) -> list[np.ndarray]:
    """``convert_feeds``, each array contiguous too (encoding then only takes views of it):
    what AsyncSession runs on a thread for ``heavy_feeds``."""
    return [np.ascontiguousarray(array) if isinstance(array, np.ndarray) else array
            for array in convert_feeds(tensors, values)]


def _split_sparse_feeds(feed_dict: dict) -> list[tuple[Any, Any]]:
    """The feeds with each SparseTensor key (a sparse_placeholder) replaced by its three parts."""
    pairs: list[tuple[Any, Any]] = []
    for key, value in feed_dict.items():
        if isinstance(key, SparseTensor):
            pairs.extend(zip((key.indices, key.values, key.dense_shape), sparse_feed_parts(value, key)))
        else:
            pairs.append((key, value))
    return pairs


def _feed_value(tensor: Tensor, value: Any) -> np.ndarray:
    """The fed value as an array of the tensor's dtype, checked against its static shape."""
    target = tensor.dtype.np
    if tensor.dtype.is_string:
        try:
            array = to_string_array(value)
        except TypeError as exc:
            raise FeedMismatchError(
                None, None, f"Cannot feed {type(value).__name__} for Tensor '{tensor.name}', which "
                f"has dtype string: {exc}; feed str, bytes or lists/arrays of them.",
                node_name=tensor.op.name) from None
        return _checked_shape(tensor, array)
    array = np.asarray(value)
    if array.size == 0 and not isinstance(value, np.ndarray):
        array = array.astype(target)   # [] has no dtype of its own (numpy says float64)
    if array.dtype != target:
        if array.dtype == object or not (np.can_cast(array.dtype, target, "same_kind")
                                         or (array.dtype.kind in "iub" and target.kind in "iuf")):
            raise FeedMismatchError(
                None, None,
                f"Cannot feed value of dtype {array.dtype} for Tensor '{tensor.name}', which has "
                f"dtype {tensor.dtype.name}: convert the value with np.asarray(value, "
                f"dtype=np.{tensor.dtype.name}).", node_name=tensor.op.name)
        array = array.astype(target)
    return _checked_shape(tensor, array)


def _checked_shape(tensor: Tensor, array: np.ndarray) -> np.ndarray:
    if not tensor.shape.is_compatible_with(array.shape):
        raise FeedMismatchError(
            None, None,
            f"Cannot feed value of shape {array.shape} for Tensor '{tensor.name}', which has "
            f"shape '{tensor.shape}'", node_name=tensor.op.name)
    return array


def make_placement_log_visible() -> None:
    """TF users expect placement lines on stderr; add a handler unless logging is configured."""
    logger = logging.getLogger("zmtf")
    if logger.handlers or logging.getLogger().handlers:
        if logger.level == logging.NOTSET or logger.level > logging.INFO:
            logger.setLevel(logging.INFO)
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("I %(name)s] %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

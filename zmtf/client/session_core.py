"""The step logic shared by Session and AsyncSession for an in-process target.

``begin`` resolves fetches and feeds and finds (or builds) the bound plan; ``start`` hands
it to the executor; ``finish`` rebuilds the fetch structure. Session and AsyncSession differ
only in how they wait for the executor's Future.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

from zmtf.kernels import lookup as kernel_lookup
from zmtf.kernels import supports as kernel_supports
from zmtf.formats.config_proto import ConfigProto, OptimizerOptions, RunMetadata, RunOptions
from zmtf.formats.step_stats_proto import fill_step_stats
from zmtf.client.feeds import Feeds, feed_arrays
from zmtf.client.fetches import FetchPlans, Rebuild
from zmtf.client.partition_graphs import local_partitions, partition_graph_defs
from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.graph import Graph, Operation, Tensor
from zmtf.placement.plan import StepPlanner
from zmtf.kernels.cpu.blas import set_blas_threads
from zmtf.runtime import functional  # noqa: F401  (registers the While kernels)
from zmtf.runtime.context import KernelContext
from zmtf.runtime.devices import SHARED_POOLS, DevicePools, LocalDevice, local_devices
from zmtf.runtime.bound_steps import BoundSteps
from zmtf.runtime.executor import BoundStep, Executor, NodeTrace, fetched
from zmtf.runtime.heap import keep_freed_memory_for_steps
from zmtf.runtime.resources import ResourceContainer
from zmtf.runtime.step_stats import WALL_OFFSET

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
    partition_graphs: bool = False   # RunOptions.output_partition_graphs, with a run_metadata


def _supports(op_type: str, device_type: str, dtype: str | None) -> bool:
    return kernel_supports(op_type, device_type, dtype)


class LocalSessionCore:
    """Plans, caches and executes steps of one graph in this process."""

    def __init__(self, graph: Graph, config: ConfigProto | None) -> None:
        self.graph = graph
        self.config = config or ConfigProto()
        self._own_pools = self.config.use_per_session_threads
        experimental = self.config.experimental
        self._session_metadata = (experimental.session_metadata
                                  if experimental.HasField("session_metadata") else None)
        self._pools = (DevicePools(self.config.inter_op_parallelism_threads) if self._own_pools
                       else SHARED_POOLS.get(self.config.inter_op_parallelism_threads))
        self.devices: list[LocalDevice] = local_devices(
            "/job:localhost/replica:0/task:0", self.config.gpu_options, self.config.device_count,
            self._pools)
        self.executor = Executor(self._pools)
        self.resources = ResourceContainer()
        intra = self.config.intra_op_parallelism_threads or self._pools.threads
        set_blas_threads(self.config.intra_op_parallelism_threads)
        keep_freed_memory_for_steps()   # a step's activations reuse the heap (runtime/heap.py)
        self.context = KernelContext(self.resources, intra)
        self.context.executor = self.executor
        planner = StepPlanner(_supports, LOCAL_TASK,
                              allow_soft_placement=self.config.allow_soft_placement,
                              log_placement=self.config.log_device_placement)
        # keyed by object identity and graph version: emptied now and then, not kept forever
        # global_jit_level OFF: no elementwise fusion (runtime.fusion); else ZMTF_FUSION decides
        optimizer = getattr(self.config.graph_options, "optimizer_options", None)
        jit_off = getattr(optimizer, "global_jit_level", 0) == OptimizerOptions.OFF
        self._bound = BoundSteps(planner, [d.name for d in self.devices], kernel_lookup,
                                 self.resources, limit=256, fuse=False if jit_off else None)
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

        tracing = partitions = False
        if run_metadata is not None:
            run_metadata.Clear()   # TF1's run() fills it anew, or leaves it empty
            if options is not None:
                tracing = options.trace_level > 0
                partitions = options.output_partition_graphs
        timeout_ms = (options.timeout_in_ms if options else 0) or self.config.operation_timeout_in_ms
        return StepCall(step, feed_values, rebuild_all, [] if tracing else None, run_metadata,
                        timeout_ms / 1000.0 if timeout_ms > 0 else None, bool(partitions))

    def start(self, call: StepCall, *, inline: bool) -> Any:
        return self.executor.run(call.step, call.feed_values, self.context, inline=inline,
                                 trace=call.trace)

    def finish(self, call: StepCall, values: list[Any]) -> Any:
        if call.run_metadata is not None:
            if call.trace is not None:   # traced: the NodeTraces become TF's messages, once
                fill_step_stats(call.run_metadata.step_stats, call.trace,
                                _bound_nodes(call.step, call.trace), WALL_OFFSET)
            if call.partition_graphs:
                call.run_metadata.partition_graphs.extend(partition_graph_defs(
                    self.graph, local_partitions(call.step.planned.nodes)))
            if self._session_metadata is not None:   # as TF's DirectSession
                call.run_metadata.session_metadata.CopyFrom(self._session_metadata)
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


def _bound_nodes(step: BoundStep, trace: list[NodeTrace]) -> list[NodeTrace]:
    """The nodes evaluated once when the plan was bound (constants, variable references),
    which no step runs, at the step's start, taking no time: TF1's dev_stats list them."""
    ran = {t.node_name for t in trace}
    start = min((t.start for t in trace), default=time.perf_counter())
    thread = threading.current_thread().name
    bound = [NodeTrace(node.name, node.device, start, start, thread)
             for node, kernel in zip(step.plan.nodes, step.kernels)
             if node.pending_count == 0 and node.name not in ran
             and (getattr(kernel, "constant_output", False) or getattr(kernel, "store_output", False))]
    return bound


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

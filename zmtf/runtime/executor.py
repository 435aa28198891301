"""The executor: runs a StepPlan by dependency counts on per-device inter-op pools.

Strategy (as TF's executor): the thread that finishes a node decrements its consumers'
pending counts and runs the newly ready ones itself; when several are ready at once, the
expensive ones (large inputs, matmul) go to their device's pool so independent branches
run in parallel, and the last one runs inline so a chain never pays a thread hop.
The hot loop works on flat per-node tuples bound once per plan (``BoundStep``).

Async kernels (``kernel.is_async``: Send/Recv, queue dequeue, take_grad) are called as
``kernel(ctx, inputs, attrs, done)`` and finish later with ``done(outputs, error)``; one
that waits on shared state registers ``done.on_cancel(fn)`` so that aborting the step
(deadline, cancel, another node's failure) releases it with the step's error.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from time import perf_counter
from typing import Any, Callable, Sequence

import numpy as np

from zmtf.framework import errors
from zmtf.framework.gc_pause import gc_paused
from zmtf.framework.memory_budget import Account, charge_to
from zmtf.framework.op_signatures import explain
from zmtf.kernels.cpu import parts
from zmtf.kernels.cpu.state import VariableRef
from zmtf.kernels.dead import DEAD
from zmtf.kernels.fp import quiet_section
from zmtf.kernels.registry import AnyKernelFn
from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.devices import DevicePools
from zmtf.runtime.gpu_memory import on_gpu_thread
from zmtf.runtime.fused_kernels import FusedKernel, FusedMemberError
from zmtf.runtime.conv_fusion import (
    CONV_OP, FILTER_OP, POOL_GRAD_OP, FusedConvKernel, FusedPoolGradKernel, filter_gradient_kernel,
    fuse_convolutions,
)
from zmtf.runtime.pooled_filter_gradient import (
    POOLED_FILTER_OP, PooledFilterGradientKernel, fuse_pooled_filter_gradients,
)
from zmtf.runtime.fusion import FUSED_OP, fuse_elementwise, fusion_default
from zmtf.runtime.gradient_sums import STACKED_MATMUL_OP, sum_gradients
from zmtf.runtime.matmul_readers import fold_matmul_readers
from zmtf.runtime.plan_rewrites import has_effects
from zmtf.runtime.plumbing import prune_plumbing
from zmtf.runtime.shared_transpose import share_transposes
from zmtf.runtime.weight_gradients_beside import BESIDE, OneWorkerKernel, run_weight_gradients_beside
from zmtf.runtime.step_future import StepFuture

KernelLookup = Callable[[str, str, "str | None"], AnyKernelFn]
#: a bound kernel, sync or async: the executor tells them apart by ``is_async`` at run time
#: (a flag no type checker follows), so it calls them as the one or the other
Kernel = Callable[..., Any]

# A thread hop (submit, wake a pool thread, hand the result back) costs ~23 us on the 2-vCPU
# target (bench/offload.py), so only a node whose kernel takes longer gains from running
# beside another. A node whose inputs hold at least this many elements in total is worth
# it: an elementwise kernel over 2^19 input elements takes ~30 us; at 2^15 (the earlier
# threshold) it took ~4 us, and every such hop made the step slower.
EXPENSIVE_ELEMENTS = 1 << 19
ALWAYS_EXPENSIVE = frozenset({"MatMul", "_MatMulAdd", "_SlicedMatMul"})   # inputs 0, 1: a, b
# ... unless it is a product of fewer multiply-adds than this (~400 us of one-thread BLAS).
# bench/offload.py: a product of 2^22 (an LSTM's 32x256x512) lost to the hop in every run
# (hopped/inline 1.15-1.35 at load 2.7-10.7); 2^25 won once (0.61, load 3.8). In one LSTM
# process, hopping its 2^22 products cost ~1 ms of CPU per step (12.6 vs 11.7 ms) and no wall.
EXPENSIVE_MULTIPLY_ADDS = 1 << 23
# A weight gradient beside the backward pass (runtime/weight_gradients_beside.py) hops from
# this size: the pass goes on on this thread, so it overlaps what the hop costs. The small
# CNN's dense weight product (2^22.6): its step 0.96x of keeping it here (in-process A/B).
BESIDE_MULTIPLY_ADDS = 1 << 21
# Ops with inputs whose kernels take the same time whatever the inputs' sizes (they return
# an input, a view of it or its shape): never worth a thread hop, so the hot loop does not
# size their inputs. Nodes without data inputs never are either.
CONSTANT_TIME_OPS = frozenset({
    "Identity", "_ReadVariableRef", "StopGradient", "Snapshot", "ExpandDims", "Shape", "Size", "Rank",
})


@dataclass(frozen=True, slots=True)
class BoundStep:
    """A StepPlan with kernels looked up and everything laid out as flat tuples.

    ``plan`` is the plan the executor runs: ``planned`` without its plumbing nodes
    (runtime.plumbing), its elementwise chains fused (runtime.fusion); ``planned`` is the
    plan as the planner made it (the step's partition graphs show that one)."""

    plan: StepPlan
    kernels: tuple[Kernel, ...]
    attrs: tuple[dict[str, Any], ...]
    input_slots: tuple[tuple[int, ...], ...]
    output_slots: tuple[tuple[int, ...], ...]
    consumers: tuple[tuple[int, ...], ...]
    pending: tuple[int, ...]
    devices: tuple[str, ...]
    roots: tuple[int, ...]                  # nodes to start with
    preset: tuple[tuple[int, Any], ...]     # (slot, value) known before any step: constants
    to_run: int                             # nodes a step runs (all but the constants)
    merges: frozenset[int] | None           # Merge nodes of a plan with tf.cond, else None
    gpu: tuple[bool, ...]                   # nodes on a GPU: they run on that GPU's thread
    is_async: tuple[bool, ...]              # kernels that finish through ``done`` (Send/Recv...)
    may_offload: tuple[bool, ...]           # nodes whose cost can grow with their inputs
    updates: tuple[bool, ...]               # nodes with effects whose value nobody reads
    planned: StepPlan                       # the plan before bind's rewrites


class _StoreOnly:
    """The context of a kernel evaluated at bind time: the variable store, nothing else."""

    __slots__ = ("resources",)

    def __init__(self, resources: Any) -> None:
        self.resources = resources


def bind(planned: StepPlan, lookup: KernelLookup, resources: Any = None,
         fuse: bool | None = None) -> BoundStep:
    """Look each node's kernel up once, so steps never touch the registry.

    The plan first loses its plumbing nodes (``prune_plumbing``), then, with ``fuse`` (None:
    ``fusion_default()``, the ZMTF_FUSION switch), its elementwise groups become one node
    each (``fuse_elementwise``), after its convolutions took their bias, Relu and filter
    gradient's columns (``fuse_convolutions``) and a first layer's filter gradient its pool's
    gradient (``fuse_pooled_filter_gradients``), AddNs of per-step gradients (MatMuls,
    SumToShapes) became one node each (``sum_gradients``), MatMuls that read one weight
    transposed share one transposed copy of it (``share_transposes``), a MatMul whose one
    reader slices its columns or adds a bias does that itself (``fold_matmul_readers``), and
    weight gradients run beside the backward pass (``run_weight_gradients_beside``).
    Nodes that would give the same value in every step (see ``_evaluate_at_bind``) are
    evaluated here, once, instead of in each step."""
    with gc_paused():   # the rewrites' sets and maps all live until they return
        plan = prune_plumbing(planned)
        if fusion_default() if fuse is None else fuse:
            plan = sum_gradients(fuse_pooled_filter_gradients(fuse_convolutions(plan)))
            plan = fold_matmul_readers(share_transposes(fuse_elementwise(plan)))
            plan = run_weight_gradients_beside(plan)
    nodes = plan.nodes
    kernels = tuple(_kernel(n, lookup) for n in nodes)
    preset, constant, pending = _evaluate_at_bind(plan, kernels, resources)
    roots = tuple(i for i, n in enumerate(pending) if n == 0 and i not in constant)
    return BoundStep(
        plan,
        kernels,
        tuple(n.attrs for n in nodes),
        tuple(n.input_slots for n in nodes),
        tuple(n.output_slots for n in nodes),
        tuple(_beside_last(n.consumers, nodes) for n in nodes),
        tuple(pending),
        tuple(n.device for n in nodes),
        roots,
        tuple(preset),
        len(nodes) - len(constant),
        frozenset(i for i, n in enumerate(nodes) if n.op_type == "Merge")
        if any(n.op_type in ("Switch", "Merge") for n in nodes) else None,
        tuple("/device:GPU:" in n.device for n in nodes),
        tuple(bool(getattr(k, "is_async", False)) for k in kernels),
        tuple(bool(n.input_slots) and n.op_type not in CONSTANT_TIME_OPS for n in nodes),
        tuple(_is_update(n, nodes) for n in nodes),
        planned,
    )


def _kernel(node: PlannedNode, lookup: KernelLookup) -> Kernel:
    kernel = _node_kernel(node, lookup)
    return OneWorkerKernel(kernel) if node.attrs.get(BESIDE) else kernel


def _node_kernel(node: PlannedNode, lookup: KernelLookup) -> Kernel:
    device_type = node.device.rsplit("device:", 1)[-1].split(":")[0]
    if node.op_type == FUSED_OP:
        return FusedKernel(node.attrs, device_type, lookup)
    if node.op_type == CONV_OP:
        return FusedConvKernel(node.attrs, device_type, lookup)
    if node.op_type == POOL_GRAD_OP:
        return FusedPoolGradKernel(node.attrs, device_type, lookup)
    if node.op_type == FILTER_OP:
        return filter_gradient_kernel
    if node.op_type == POOLED_FILTER_OP:
        return PooledFilterGradientKernel(node.attrs, device_type, _member_lookup(lookup))
    return lookup(node.op_type, device_type, node.kernel_dtype)


def _member_lookup(lookup: KernelLookup) -> KernelLookup:
    """``lookup`` for the members of a fused node, FILTER_OP (a rewritten op) included."""
    return lambda op, device, dtype: filter_gradient_kernel if op == FILTER_OP else lookup(op, device, dtype)


def _evaluate_at_bind(plan: StepPlan, kernels: Sequence[Kernel], resources: Any
                      ) -> tuple[list[tuple[int, Any]], set[int], list[int]]:
    """The values known before any step runs: (slot, value) presets, the nodes that gave
    them, and every node's pending count once those nodes are done.

    Such a node waits on nothing and its kernel declares ``constant_output`` (CPU Const) or
    ``store_output`` (CPU Variable: a reference into ``resources``, the store every step of
    this binding runs with, when given). Its consumers then wait for one predecessor less,
    and a step never runs it."""
    pending = [n.pending_count for n in plan.nodes]
    preset: list[tuple[int, Any]] = []
    constant: set[int] = set()
    store = None if resources is None else _StoreOnly(resources)
    for i, node in enumerate(plan.nodes):
        if node.pending_count:
            continue
        if getattr(kernels[i], "constant_output", False):
            outputs = kernels[i](None, [], node.attrs)
        elif store is not None and getattr(kernels[i], "store_output", False):
            outputs = kernels[i](store, [], node.attrs)
        else:
            continue
        constant.add(i)
        preset.extend(zip(node.output_slots, outputs))
        for c in node.consumers:
            pending[c] -= 1
    return preset, constant, pending


@dataclass(frozen=True, slots=True)
class NodeTrace:
    """When and on which thread a node ran (RunMetadata step stats)."""

    node_name: str
    device: str
    start: float
    end: float
    thread: str
    bytes: int = 0   # a _Send's or _Recv's tensor size (the timeline's flow events)
    #: (offset, bound) seconds: on a remote task's RunGraph span only, how its clock was
    #: moved onto the master's and how far off that may be (distributed.trace_clock)
    clock: tuple[float, float] | None = None
    #: TF1's timeline_label when it says more than the name: a fused node lists its ops
    label: str = ""


class Executor:
    """Runs bound steps on device pools; one executor serves many concurrent steps."""

    def __init__(self, pools: DevicePools) -> None:
        self._pools = pools

    def run(self, step: BoundStep, feed_values: Sequence[Any], ctx: Any, *, inline: bool,
            trace: list[NodeTrace] | None = None, here_only: bool = False,
            account: Account | None = None) -> StepFuture:
        """Start a step; the Future gives the fetched values (a list) or the step's first error.

        ``inline=True`` drives the step on the calling thread until it has nothing left to
        run inline (the caller is about to block anyway); otherwise a pool thread starts it.
        ``here_only`` (with inline) runs every node on the calling thread, expensive ones too:
        a plan without async or GPU nodes is then done when this returns.
        ``account`` (a server's step) is charged for the step's big outputs before they are
        allocated, and given back when the step settles (``framework.memory_budget``).
        """
        run = _StepRun(step, feed_values, ctx, self._pools, trace)
        run.here_only = here_only
        if account is not None:
            run.account = account
            run.future.add_done_callback(lambda _: account.close())
        run_ref = weakref.ref(run)  # no future <-> run cycle: results must die with the caller's refs

        def abort(error: BaseException | None = None) -> None:
            live = run_ref()
            if live is not None:
                live.abort(error)

        run.future.abort = abort
        if inline:
            run.inline = True
            run.start()
        else:
            device = step.devices[step.roots[0]] if step.roots else ""
            self._pools.pool(device).submit(run.start)
        return run.future


class _StepRun:
    """The mutable state of one step: value slots, pending counts, the first error.

    Any thread may run a node: the one that started the step, a device pool's thread (an
    expensive node, a GPU node) or the thread that completes an async kernel. ``lock``
    guards what they share (pending counts, ``remaining``, the async kernels' releases); a
    value slot is written once, before its consumers become ready, so it needs no lock.
    """

    __slots__ = ("step", "slots", "ctx", "pools", "trace", "pending", "remaining", "lock",
                 "future", "failed", "inline", "here_only", "busy", "cancel_callbacks", "dead",
                 "account", "async_started", "__weakref__")

    def __init__(self, step: BoundStep, feed_values: Sequence[Any], ctx: Any, pools: DevicePools,
                 trace: list[NodeTrace] | None) -> None:
        self.step = step
        self.slots: list[Any] = [None] * step.plan.num_slots
        for slot, value in step.preset:
            self.slots[slot] = value
        for slot, value in zip(step.plan.feed_slots, feed_values):
            self.slots[slot] = value
        self.ctx = ctx
        self.pools = pools
        self.trace = trace
        self.async_started: dict[int, tuple[float, int]] = {}   # traced steps' async nodes
        self.pending = list(step.pending)
        self.remaining = step.to_run
        self.lock = threading.Lock()
        self.future = StepFuture()
        self.failed = False
        self.inline = False
        self.here_only = False
        self.account: Account | None = None   # a server's step: charged for big outputs
        self.busy = 0.0   # seconds spent inside kernels (not waiting for Recv): see compute_seconds
        #: node -> callback of a waiting async kernel, called once if the step aborts first
        self.cancel_callbacks: dict[int, Callable[[BaseException], None]] = {}
        #: tf.cond plans only: nodes made dead by a dead predecessor (a control edge included)
        self.dead: bytearray | None = bytearray(len(step.pending)) if step.merges is not None else None

    def start(self) -> None:
        """Run from the roots on this thread; a step with nothing to run finishes at once."""
        if self.remaining == 0:
            self._finish()
        else:
            self._process(list(self.step.roots))

    def _process(self, ready: list[int], placed: int = -1) -> None:
        if self.account is None:
            with quiet_section():   # numpy's float-error state, set once around many kernels
                self._run_ready(ready, placed)
            return
        previous = charge_to(self.account)   # the kernels' size checks charge this step
        try:
            with quiet_section():
                self._run_ready(ready, placed)
        finally:
            charge_to(previous)

    def _run_ready(self, ready: list[int], placed: int = -1) -> None:
        """Run ready nodes on this thread until none is left (or the step failed).

        Each node is skipped (dead: the branch of a tf.cond that did not run), started (an
        async kernel: it completes later, through ``done``), handed to its device's pool, or
        run here. Completing a node may make others ready; they join ``ready``, and the last
        one added runs next, so a chain stays on this thread. ``placed`` is a node handed to
        this thread by a pool: it runs here.
        """
        step, slots = self.step, self.slots
        while ready and not self.failed:
            i = ready.pop()
            inputs = _gather(slots, step.input_slots[i])
            if self.dead is not None and self._is_dead(i, inputs):
                if not self._skip_dead(i):
                    return
            elif step.is_async[i]:
                self._start_async(i, inputs, ready)
                continue
            elif i != placed and not self.here_only and (
                    (ready and step.may_offload[i] and self._expensive(i, inputs)
                     and self._worth_company(ready))
                    or (step.gpu[i] and not on_gpu_thread(step.devices[i]))):
                # An expensive node leaves while this thread has others to run, so the two
                # run in parallel; a GPU node runs on its GPU's thread, which holds the
                # GPU's CUDA context, stream and memory budget.
                self.pools.pool(step.devices[i]).submit(self._process, [i], i)
                continue
            else:
                start = perf_counter()
                try:
                    outputs = step.kernels[i](self.ctx, inputs, step.attrs[i])
                except BaseException as exc:  # noqa: BLE001 - every failure becomes the step's error
                    self._fail(i, exc)
                    return
                end = perf_counter()
                self.busy += end - start   # racy across pool threads: an estimate is all it needs
                if self.trace is not None:
                    attrs = step.attrs[i]
                    self.trace.append(NodeTrace(attrs["_node_name"], step.devices[i], start, end,
                                                threading.current_thread().name,
                                                label=attrs.get("_label", "")))
                for slot, value in zip(step.output_slots[i], outputs):
                    slots[slot] = value
            self._complete(i, ready)

    def _complete(self, i: int, ready: list[int]) -> None:
        """Count node i as done; the consumers it made ready join ``ready``. The last node
        finishes the step."""
        pending = self.pending
        with self.lock:
            for c in self.step.consumers[i]:
                pending[c] -= 1
                if pending[c] == 0:
                    ready.append(c)
            self.remaining -= 1
            done = self.remaining == 0
        if done:
            self._finish()

    def _is_dead(self, i: int, inputs: list[Any]) -> bool:
        """A node runs dead (is skipped) when a predecessor was dead, or a data input is; a
        Merge only when all its inputs are (its kernel then says so)."""
        if self.dead[i]:  # type: ignore[index]
            return True
        return i not in self.step.merges and any(x is DEAD for x in inputs)  # type: ignore[operator]

    def _skip_dead(self, i: int) -> bool:
        """Mark node i's outputs and its consumers dead; False if the node cannot be dead."""
        if getattr(self.step.kernels[i], "dead_unsupported", False):
            node = self.step.plan.nodes[i]
            self._fail(i, errors.UnimplementedError(
                None, None, f"'{node.name}' ({node.op_type}) would carry the dead value of a tf.cond "
                f"branch that did not run to another task: zmtf keeps a cond's values on one "
                f"task. Pin the cond and the ops using its results to one task."))
            return False
        for slot in self.step.output_slots[i]:
            self.slots[slot] = DEAD
        merges, dead = self.step.merges, self.dead
        for c in self.step.consumers[i]:
            if c not in merges:  # type: ignore[operator]
                dead[c] = 1  # type: ignore[index]
        return True

    def _start_async(self, i: int, inputs: list[Any], ready: list[int]) -> None:
        """Start a kernel that completes later through ``done`` (Recv): no thread waits for it.

        A kernel that completes inside this call (its value was there already) adds the nodes
        it made ready to ``ready``, for the caller's loop: finishing them from within ``done``
        would start the next such kernel a stack level deeper, and a chain of a few hundred
        (the Recvs of one big push) would end in RecursionError."""
        done = _AsyncDone(self, i)
        if self.trace is not None:   # a _Send/_Recv: from its start to its value, with its size
            self.async_started[i] = (perf_counter(), _nbytes(inputs))
        try:
            self.step.kernels[i](self.ctx, inputs, self.step.attrs[i], done)
        except BaseException as exc:  # noqa: BLE001
            self._fail(i, exc)
            return
        done.starter = None   # the kernel call returned: later calls finish the node
        if done.early is not None:   # the outcome came already
            self._async_outputs(i, *done.early, ready)

    def async_done(self, i: int, outputs: list[Any] | None, error: BaseException | None) -> None:
        """An async kernel finished after its start returned: go on with what it made ready."""
        ready: list[int] = []
        self._async_outputs(i, outputs, error, ready)
        if ready and not self.failed:
            if self.inline:  # the caller asked for inline steps: continue on this thread
                self._process(ready)
            else:            # continue on the device pool, never the caller's thread
                self.pools.pool(self.step.devices[i]).submit(self._process, ready)

    def _async_outputs(self, i: int, outputs: list[Any] | None, error: BaseException | None,
                       ready: list[int]) -> None:
        """Record an async kernel's outcome; the nodes it made ready join ``ready``."""
        if self.cancel_callbacks:
            with self.lock:
                self.cancel_callbacks.pop(i, None)
        if self.failed:
            return  # aborted meanwhile: the step's error is already out
        if error is not None:
            self._fail(i, error)
            return
        for slot, value in zip(self.step.output_slots[i], outputs or ()):
            self.slots[slot] = value
        if self.trace is not None:
            start, size = self.async_started.pop(i, (perf_counter(), 0))
            self.trace.append(NodeTrace(self.step.attrs[i]["_node_name"], self.step.devices[i], start,
                                        perf_counter(), threading.current_thread().name,
                                        size or _nbytes(outputs or ())))
        self._complete(i, ready)

    def on_cancel(self, i: int, callback: Callable[[BaseException], None]) -> bool:
        """Register node ``i``'s release; False when the step has already failed (do not wait)."""
        with self.lock:
            if self.failed:
                return False
            self.cancel_callbacks[i] = callback
            return True

    def _expensive(self, i: int, inputs: list[Any]) -> bool:
        """Whether node i is worth a thread hop: large inputs, or a large enough matrix product."""
        step = self.step
        op = step.plan.nodes[i].op_type
        if op == STACKED_MATMUL_OP:   # inputs a_1, b_1, a_2, b_2, ...: the products' sum
            return _stacked_multiply_adds(inputs, step.attrs[i]) >= EXPENSIVE_MULTIPLY_ADDS
        beside = step.attrs[i].get(BESIDE)
        if beside and parts.workers_for(parts.WORKERS) < 2:
            return False   # no core to spare (a busy machine, one intra-op thread): in turn here
        if op in ALWAYS_EXPENSIVE:
            a, b = inputs[0], inputs[1]
            if getattr(a, "ndim", 0) == 2 and getattr(b, "ndim", 0) == 2:
                # a small product costs less than the thread hop that would overlap it
                n = b.shape[0] if step.attrs[i].get("transpose_b") else b.shape[1]
                return a.size * n >= (BESIDE_MULTIPLY_ADDS if beside else EXPENSIVE_MULTIPLY_ADDS)
            return True
        if beside:   # a filter gradient: a convolution's work
            return True
        total = 0
        for x in inputs:   # a handle input (a queue, a table) has a size() method, not a size
            size = getattr(x, "size", 1)
            total += size if isinstance(size, int) else 1
        return total >= EXPENSIVE_ELEMENTS

    def _worth_company(self, ready: list[int]) -> bool:
        """Whether a ready node is worth running beside an expensive one: one that leads to
        more work, or is expensive itself. Cheap updates (``BoundStep.updates``: an optimizer's
        step after the gradient it waited for) are not: the expensive node stays on this
        thread rather than wait for a pool thread to wake (~100 us on the 2-vCPU target, the
        small CNN's first layer's backward after its optimizer's update of the second), and
        they run after it."""
        step, slots = self.step, self.slots
        return any(not step.updates[j] or self._expensive(j, _gather(slots, step.input_slots[j]))
                   for j in ready)

    def _finish(self) -> None:
        """Settle the step's future: the fetched values, or the error that keeps them away."""
        try:
            result = self._fetched_values()
        except BaseException as exc:  # noqa: BLE001 - e.g. FailedPrecondition: uninitialized
            self.future.settle("FINISHED", None, exc)
            return
        self.slots = []  # drop intermediates now: their buffers go back to the pool
        self.future.compute_seconds = self.busy
        self.future.settle("FINISHED", result, None)

    def _fetched_values(self) -> list[Any]:
        """The fetch slots' values; a fetched Variable op ("w:0", TF1's ref tensor) gives the
        variable's value."""
        result = list(map(self.slots.__getitem__, self.step.plan.fetch_slots))
        if VariableRef in map(type, result):
            result = [v.read() if type(v) is VariableRef else v for v in result]
        if self.dead is not None and any(v is DEAD for v in result):
            index = next(k for k, v in enumerate(result) if v is DEAD)
            raise errors.InvalidArgumentError(
                None, None, f"Retval[{index}] does not have value: the fetched tensor lies in a "
                f"tf.cond branch that did not run; fetch the cond's result instead")
        return result

    def abort(self, error: BaseException | None = None) -> None:
        """Fail the step (a deadline passed, the caller cancelled, a node failed): no node of
        it is scheduled any more and its future has ``error``. Only the first failure counts."""
        error = error or errors.CancelledError(None, None, "step cancelled")
        if self._mark_failed(error):
            self.future.settle("FINISHED", None, error)

    def _fail(self, i: int, exc: BaseException) -> None:
        """Fail the step with node i's error, named after the node (first failure wins)."""
        node = self.step.plan.nodes[i]
        if isinstance(exc, FusedMemberError):   # a fused node's member: name the member
            self.abort(as_op_error(exc.cause, exc.name, exc.op_type, node.device))
            return
        self.abort(as_op_error(exc, node.name, node.op_type, node.device,
                               lambda: explain(node.op_type, len(node.input_slots), node.attrs)))

    def _mark_failed(self, error: BaseException) -> bool:
        """Fail the step once and release every waiting async kernel with ``error``."""
        with self.lock:
            if self.failed:
                return False
            self.failed = True
            callbacks, self.cancel_callbacks = list(self.cancel_callbacks.values()), {}
        for release in callbacks:
            release(error)
        return True


def _is_update(node: PlannedNode, nodes: Sequence[PlannedNode]) -> bool:
    """A node with effects (an optimizer's update) whose value no node reads."""
    outputs = set(node.output_slots)
    return has_effects(node.op_type) and not any(outputs & set(nodes[c].input_slots) for c in node.consumers)


def _beside_last(consumers: tuple[int, ...], nodes: Sequence[PlannedNode]) -> tuple[int, ...]:
    """``consumers`` with the nodes off the backward pass's critical path last: stacked
    products (a stack of an RNN's weight gradient, gradient_sums.STACK_TERMS) and weight
    gradients marked BESIDE. The node run next is the last one made ready, so such a node is
    considered first, while the pass's next node waits in the ready list, and goes to the
    pool when big enough (``_expensive``) instead of holding up the pass."""
    if not any(_off_critical_path(nodes[c]) for c in consumers):
        return consumers
    return tuple(sorted(consumers, key=lambda c: _off_critical_path(nodes[c])))


def _off_critical_path(node: PlannedNode) -> bool:
    return node.op_type == STACKED_MATMUL_OP or bool(node.attrs.get(BESIDE))


def _stacked_multiply_adds(inputs: list[Any], attrs: dict) -> int:
    """The multiply-adds of a STACKED_MATMUL_OP's products (0 for inputs that are not 2-D
    arrays: its kernel will say what is wrong)."""
    column = 0 if attrs.get("transpose_b") else 1
    try:
        return sum(int(a.size) * int(b.shape[column]) for a, b in zip(inputs[0::2], inputs[1::2]))
    except (AttributeError, IndexError, TypeError):
        return 0


def _gather(slots: list[Any], input_slots: tuple[int, ...]) -> list[Any]:
    """A node's input values, from their slots.

    Nearly every node has one or two inputs: a list display reads those directly, where
    ``list(map(...))`` would build an iterator first (a tenth of a small node's cost)."""
    n = len(input_slots)
    if n == 1:
        return [slots[input_slots[0]]]
    if n == 2:
        return [slots[input_slots[0]], slots[input_slots[1]]]
    return list(map(slots.__getitem__, input_slots))


class _AsyncDone:
    """The ``done`` of one async kernel call: ``done(outputs, error)``, or ``done.one(value,
    error)`` for a kernel of one output (a Recv: the rendezvous calls it as is), and
    ``done.on_cancel(fn)``."""

    __slots__ = ("_run", "_node", "starter", "early")   # the last two: _start_async's to read

    def __init__(self, run: _StepRun, node: int) -> None:
        self._run = run
        self._node = node
        self.starter: int | None = threading.get_ident()   # the thread in _start_async
        self.early: tuple[list[Any] | None, BaseException | None] | None = None

    def __call__(self, outputs: list[Any] | None, error: BaseException | None) -> None:
        if self.starter == threading.get_ident():   # inside the kernel call: the caller goes on
            self.early = (outputs, error)
            return
        self._run.async_done(self._node, outputs, error)

    def one(self, value: Any, error: BaseException | None) -> None:
        self(None if error is not None else [value], error)

    def on_cancel(self, release: Callable[[BaseException], None]) -> bool:
        """Call ``release(error)`` if the step aborts before ``done``; False if it already has."""
        return self._run.on_cancel(self._node, release)


def _nbytes(values: Any) -> int:
    """The bytes of a traced _Send's inputs or _Recv's outputs (arrays; others count 0)."""
    return sum(int(getattr(v, "nbytes", 0)) for v in values)


_ARGUMENT_ERRORS = (ValueError, TypeError, IndexError, KeyError, ZeroDivisionError, FloatingPointError)


def as_op_error(exc: BaseException, node_name: str, op_type: str, device: str,
                explain_node: Callable[[], str | None] | None = None) -> errors.OpError:
    """A kernel failure as a typed error that names the node, its op and its device.

    A bare Python error from a kernel usually means a node unlike the ones zmtf builds (a
    graph from the network); ``explain_node()`` then says how it differs, first."""
    where = f"\n\t [[node {node_name} ({op_type}) on {device}]]"
    if isinstance(exc, errors.OpError):
        exc.node_name = exc.node_name or node_name
        if "[[node" not in exc.message:
            exc.message += where
        return exc
    cls: type[errors.OpError] = (errors.InvalidArgumentError if isinstance(exc, _ARGUMENT_ERRORS)
                                 else errors.InternalError)
    if isinstance(exc, MemoryError):
        cls = errors.ResourceExhaustedError
    text = f"{type(exc).__name__}: {exc}"
    try:   # best effort: nothing may keep the kernel's own error from failing the step
        hint = explain_node() if explain_node is not None else None
    except Exception:  # noqa: BLE001
        hint = None
    if hint:
        text = f"{hint}; the kernel failed with {text}"
    error = cls(None, None, f"{text}{where}", node_name=node_name)
    error.__cause__ = exc
    return error


def fetched(value: Any, resources: Any = None) -> Any:
    """What run() hands back for one fetched value: numpy scalars for 0-d, arrays the caller owns.

    Variable reads alias the variable's storage (no copy inside a step, as TF1's ref reads);
    a fetched value that does is copied so later updates never show through.
    """
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value[()]
        if not value.flags.writeable or (resources is not None and resources.holds(value)):
            return value.copy()
    return value

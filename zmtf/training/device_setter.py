"""replica_device_setter: variables go to the ps tasks, every other op to the worker (TF1).

The returned device function runs inside ``tf.device(...)`` after any inner device scopes
have been applied (innermost first, as in TF), so an op's own device fields always win and
the setter only fills in the fields still unset:

    with tf.device(tf.train.replica_device_setter(ps_tasks=2)):
        v1 = tf.Variable(1.0)      # /job:ps/task:0
        v2 = tf.Variable(2.0)      # /job:ps/task:1
        s = v1 + v2                # /job:worker
        with tf.device("/gpu:1"):
            p1 = 2 * s             # /job:worker/device:GPU:1

Pure: it only reads ops and device strings. ``cluster`` is duck-typed (anything with
``as_dict()``, a ClusterDef's repeated ``job``, or a dict) because ``train`` sits below ``distributed`` and cannot import
its ClusterSpec.
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Iterable, Mapping, MutableSequence
from dataclasses import dataclass
from typing import Any

from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.tensor_shape import TensorShape

__all__ = [
    "STANDARD_PS_OPS",
    "GreedyLoadBalancingStrategy",
    "byte_size_load_fn",
    "replica_device_setter",
]

_logger = logging.getLogger(__name__)

# The op types that hold state and so belong on a parameter server (TF's list).
STANDARD_PS_OPS = (
    "Variable", "VariableV2", "AutoReloadVariable", "MutableHashTable",
    "MutableHashTableV2", "MutableHashTableOfTensors", "MutableHashTableOfTensorsV2",
    "MutableDenseHashTable", "MutableDenseHashTableV2", "VarHandleOp",
    "BoostedTreesEnsembleResourceHandleOp", "BoostedTreesQuantileStreamResourceHandleOp",
    "ResourceConditionalAccumulator", "DecisionTreeResource",
)

DeviceFunction = Callable[[Any], str]
PsStrategy = Callable[[Any], int]


class _RoundRobinStrategy:
    """Hand out ps task indices 0, 1, ..., num_tasks - 1, 0, 1, ... (TF's default)."""

    def __init__(self, num_tasks: int) -> None:
        self._num_tasks = num_tasks
        self._next_task = 0

    def __call__(self, unused_op: Any) -> int:
        """Return the next task index in turn; the op itself does not matter."""
        task = self._next_task
        self._next_task = (self._next_task + 1) % self._num_tasks
        return task


class GreedyLoadBalancingStrategy:
    """Put each ps op on the least-loaded ps task so far, load measured by ``load_fn(op)``.

    Order-sensitive, as in TF: a variable goes where the load is lowest when it is created.
    ``replica_device_setter(ps_tasks=2, ps_strategy=GreedyLoadBalancingStrategy(2,
    byte_size_load_fn))`` balances bytes instead of counts.
    """

    def __init__(self, num_tasks: int, load_fn: Callable[[Any], float]) -> None:
        _check_task_count(num_tasks, "GreedyLoadBalancingStrategy num_tasks")
        if num_tasks == 0:
            raise ValueError("GreedyLoadBalancingStrategy needs at least one ps task, got 0")
        self._num_tasks = num_tasks
        self._load_fn = load_fn
        self._ps_loads = [0.0] * num_tasks

    @property
    def loads(self) -> list[float]:
        """The load placed on each ps task so far."""
        return list(self._ps_loads)

    def __call__(self, op: Any) -> int:
        """Return the least-loaded task (the lowest index on a tie) and charge op to it."""
        task = min(range(self._num_tasks), key=self._ps_loads.__getitem__)
        self._ps_loads[task] += self._load_fn(op)
        return task


def byte_size_load_fn(op: Any) -> int:
    """Load function for GreedyLoadBalancingStrategy: the bytes in op's single output."""
    if len(op.outputs) != 1:
        raise ValueError(
            f"Op {op.name!r} ({op.type}) has {len(op.outputs)} outputs; byte_size_load_fn "
            "needs an op with a single output, such as a Variable"
        )
    output = op.outputs[0]
    shape = output.get_shape()
    if not shape.is_fully_defined():
        # As in TF: fall back to the op's declared "shape" attr when the output's is unknown.
        shape = TensorShape(op.get_attr("shape"))
    if not shape.is_fully_defined():
        raise ValueError(
            f"Op {op.name!r} has shape {shape}, which is not fully defined, so its byte size is "
            "unknown; give the variable a fully defined shape or use another load_fn"
        )
    return int(shape.num_elements()) * output.dtype.size


@dataclass(frozen=True, slots=True)
class _ReplicaDeviceChooser:
    """Chooses an op's device from the ps and worker devices and the op's own device."""

    ps_tasks: int
    ps_device: DeviceSpec | None  # None: no ps job, every op goes to the worker
    worker_device: DeviceSpec
    merge_devices: bool
    ps_ops: frozenset[str]
    ps_strategy: PsStrategy

    def device_function(self, op: Any) -> str:
        """Return op's device: its own fields first, then the ps or worker device's."""
        if not self.merge_devices and op.device:
            return str(op.device)
        current = DeviceSpec.from_string(op.device or "")
        ps_device = self.ps_device
        if self.ps_tasks and ps_device is not None and op.type in self.ps_ops:
            # NOTE: the strategy is asked (and advances) only when the op's own job does not
            # move it off the ps job, exactly as in TF.
            if ps_device.job and (not current.job or current.job == ps_device.job):
                ps_device = ps_device.replace(task=self._choose_task(op))
            return ps_device.make_merged_spec(current).to_string()
        return self.worker_device.make_merged_spec(current).to_string()

    def _choose_task(self, op: Any) -> int:
        """Ask the strategy for a task, accepting any integer type (numpy's included)."""
        task = self.ps_strategy(op)
        try:
            index = operator.index(task)
        except TypeError:
            index = -1
        if index < 0:
            raise ValueError(
                f"ps_strategy returned {task!r} for op {op.name!r}; it must return a "
                f"non-negative ps task index (there are {self.ps_tasks} ps tasks)"
            )
        return index


def _check_task_count(count: object, what: str) -> int:
    """Check a number of tasks: a non-negative int."""
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise ValueError(f"{what} must be a non-negative integer, got {count!r}")
    return count


def _cluster_jobs(cluster: object) -> Mapping[Any, Any]:
    """Get {job: tasks} from a ClusterSpec (anything with as_dict()), a ClusterDef (anything
    with repeated ``job`` messages of ``name`` and ``tasks``) or a plain dict."""
    as_dict = getattr(cluster, "as_dict", None)
    job_defs = getattr(cluster, "job", None)
    if callable(as_dict):
        jobs = as_dict()
    elif isinstance(job_defs, MutableSequence):   # a ClusterDef's repeated JobDefs
        jobs = {job.name: dict(job.tasks) for job in job_defs}
    else:
        jobs = cluster
    if not isinstance(jobs, Mapping):
        raise TypeError(
            "cluster must be a ClusterSpec, a ClusterDef or a dict mapping job names to lists "
            f"of addresses, got {type(cluster).__name__}"
        )
    return jobs


def _ps_tasks_in(cluster: object, ps_device: str | None) -> int | None:
    """Count the tasks of ps_device's job in cluster; None when the cluster lacks that job."""
    ps_job = DeviceSpec.from_string(ps_device or "").job
    tasks = _cluster_jobs(cluster).get(ps_job) if ps_job is not None else None
    if tasks is None:
        return None
    if not isinstance(tasks, (list, tuple, Mapping)):
        raise TypeError(
            f"cluster job {ps_job!r} must list its tasks (a list of addresses or a dict from "
            f"task index to address), got {type(tasks).__name__}"
        )
    return len(tasks)


def _as_ps_ops(ps_ops: Iterable[str] | None) -> frozenset[str]:
    """Default to STANDARD_PS_OPS; reject a bare string, which would match by characters."""
    if ps_ops is None:
        return frozenset(STANDARD_PS_OPS)
    if isinstance(ps_ops, str):
        raise TypeError(f"ps_ops must be a list of op types such as ['VariableV2'], got {ps_ops!r}")
    return frozenset(ps_ops)


def replica_device_setter(
    ps_tasks: int = 0,
    ps_device: str | None = "/job:ps",
    worker_device: str | None = "/job:worker",
    merge_devices: bool = True,
    cluster: Any = None,
    ps_ops: Iterable[str] | None = None,
    ps_strategy: PsStrategy | None = None,
) -> DeviceFunction | None:
    """Return a device function for ``tf.device``: ps ops round-robin over ps tasks (TF1).

    With ``cluster`` (a ClusterSpec, ClusterDef or dict) the ps task count comes from its ps job, and
    ``ps_tasks`` is ignored. Returns None, as TF does, when there are no ps tasks.
    """
    if cluster is not None:
        ps_tasks_or_none = _ps_tasks_in(cluster, ps_device)
        if ps_tasks_or_none is None:
            return None
        ps_tasks = ps_tasks_or_none
    if _check_task_count(ps_tasks, "ps_tasks") == 0:
        return None
    if not merge_devices:
        _logger.warning(
            "DEPRECATION: It is recommended to set merge_devices=true in replica_device_setter"
        )
    strategy = _RoundRobinStrategy(ps_tasks) if ps_strategy is None else ps_strategy
    if not callable(strategy):
        raise TypeError(
            f"ps_strategy must be callable (op -> ps task index), got {type(strategy).__name__}"
        )
    chooser = _ReplicaDeviceChooser(
        ps_tasks=ps_tasks,
        ps_device=DeviceSpec.from_string(ps_device) if ps_device else None,
        worker_device=DeviceSpec.from_string(worker_device or ""),
        merge_devices=merge_devices,
        ps_ops=_as_ps_ops(ps_ops),
        ps_strategy=strategy,
    )
    return chooser.device_function

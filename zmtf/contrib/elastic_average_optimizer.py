"""``tf.contrib.opt.ElasticAverageOptimizer`` and its custom getter: TF 1.15's elastic
averaging SGD (Zhang, Choromanska & LeCun, "Deep learning with Elastic Averaging SGD").

Each worker trains its own copy of the model (LOCAL_VARIABLES, on the worker). The ps holds
the centre ("global_center_variable/<name>", GLOBAL_VARIABLES); each worker keeps the last
centre it fetched ("local_center_variable/<name>", LOCAL_VARIABLES). The loss gets
rho * sum l2_loss(var - local_center), and every ``communication_period`` local steps::

    local_center = global_center
    diff = var - local_center
    var -= moving_rate * diff;  global_center += moving_rate * diff;  global_step += 1

zmtf difference: TF gates that exchange with tf.cond; zmtf's cond cannot carry a dead value
from the worker to the ps, so the exchange runs every step with ``where(is_period, ..., 0)``
(the same values: off-period steps add exactly zero and keep the local centre), at the cost
of a ps round trip per step.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Operation, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.composite_ops import l2_loss
from zmtf.ops.control_flow_ops import group
from zmtf.ops.data_flow_ops import FIFOQueue
from zmtf.ops.selection_ops import where_v2
from zmtf.ops.variable_scope import get_variable
from zmtf.ops.variables import Variable, global_variables, trainable_variables
from zmtf.training.optimizers import Optimizer
from zmtf.training.saver import Saver
from zmtf.training.session_run_hook import SessionRunHook

LOCAL_VARIABLE_NAME = "local_center_variable"
GLOBAL_VARIABLE_NAME = "global_center_variable"
GLOBAL_STEP = "global_step"


def _on_worker(getter: Any, worker_device: str, name: str, *args: Any, **kwargs: Any) -> Any:
    with get_default_graph().device(worker_device):
        return getter(name, *args, **kwargs)


def _single(variable: Any, name: str) -> Variable:
    if not isinstance(variable, Variable):
        raise NotImplementedError(f"{name}: zmtf's elastic/model averaging getters take plain "
                                  f"variables, not partitioned ones; drop the partitioner")
    return variable


def pass_through_getter(getter: Any, worker_device: str, name: str, trainable: Any,
                        collections: Any, *args: Any, **kwargs: Any) -> Any:
    """A non-trainable variable as asked; a LOCAL_VARIABLES one on the worker (TF's rule)."""
    kwargs["trainable"], kwargs["collections"] = trainable, collections
    if collections and GraphKeys.LOCAL_VARIABLES in collections:
        return _on_worker(getter, worker_device, name, *args, **kwargs)
    return getter(name, *args, **kwargs)


class ElasticAverageCustomGetter:
    """Use with ``tf.variable_scope('', custom_getter=...)`` under a replica_device_setter
    and create variables with tf.get_variable: each trainable variable becomes a local one on
    ``worker_device``, plus its global centre (ps) and local centre (worker)."""

    def __init__(self, worker_device: str) -> None:
        self._worker_device = worker_device
        self._local_map: dict[Variable, Variable] = {}
        self._global_map: dict[Variable, Variable] = {}

    def __call__(self, getter: Any, name: str, trainable: Any, collections: Any,
                 *args: Any, **kwargs: Any) -> Any:
        if not trainable:
            return pass_through_getter(getter, self._worker_device, name, trainable,
                                       collections, *args, **kwargs)
        local_var = _on_worker(getter, self._worker_device, name, *args, trainable=True,
                               collections=[GraphKeys.LOCAL_VARIABLES], **kwargs)
        if kwargs.get("reuse") is True:
            return local_var
        _single(local_var, name)
        global_center = getter(f"{GLOBAL_VARIABLE_NAME}/{name}", *args, trainable=False,
                               collections=[GraphKeys.GLOBAL_VARIABLES], **kwargs)
        local_center = _on_worker(getter, self._worker_device, f"{LOCAL_VARIABLE_NAME}/{name}",
                                  *args, trainable=False,
                                  collections=[GraphKeys.LOCAL_VARIABLES], **kwargs)
        self._local_map[local_var] = local_center
        self._global_map[local_var] = global_center
        return local_var


def make_local_step(worker_device: str) -> Variable:
    """The worker's own step counter ("local_step", int32, LOCAL_VARIABLES, on the worker)."""
    with get_default_graph().device(worker_device):
        return get_variable("local_step", initializer=0, dtype=dtypes.int32, trainable=False,
                            collections=[GraphKeys.LOCAL_VARIABLES])


def move_to_local(created: list[Variable]) -> None:
    """TF: variables the wrapped optimizer made (Adam's beta powers, slots) belong to this
    worker, so they go from GLOBAL_VARIABLES to LOCAL_VARIABLES."""
    graph = get_default_graph()
    kept = graph.get_collection_ref(GraphKeys.GLOBAL_VARIABLES)
    moved = [v for v in kept if any(v is c for c in created)]
    kept[:] = [v for v in kept if not any(v is m for m in moved)]
    for var in moved:
        graph.add_to_collection(GraphKeys.LOCAL_VARIABLES, var)


def new_globals(build: Any) -> tuple[Any, list[Variable]]:
    """``build()`` and the global variables it created."""
    before = {id(v) for v in global_variables()}
    result = build()
    return result, [v for v in global_variables() if id(v) not in before]


class ElasticAverageOptimizer(Optimizer):
    """Wraps ``opt`` (which updates this worker's variables) with the elastic exchange."""

    BETA = 0.9   # the paper's default: moving_rate = BETA / communication_period / num_worker

    def __init__(self, opt: Optimizer, num_worker: int, ea_custom_getter: ElasticAverageCustomGetter,
                 communication_period: int = 10, moving_rate: Any = None, rho: Any = None,
                 use_locking: bool = True, name: str = "ElasticAverageOptimizer") -> None:
        super().__init__(use_locking, name)
        if communication_period < 1:
            raise ValueError(f"communication_period must be >= 1, got {communication_period}")
        self._opt = opt
        self._num_worker = int(num_worker)
        self._period = int(communication_period)
        self._local_map = ea_custom_getter._local_map
        self._global_map = ea_custom_getter._global_map
        self._moving_rate = (self.BETA / communication_period / num_worker
                             if moving_rate is None else moving_rate)
        self._rho = self._moving_rate / opt._learning_rate if rho is None else rho  # type: ignore[attr-defined]
        self._local_step = make_local_step(ea_custom_getter._worker_device)
        opt._prepare()

    def compute_gradients(self, loss: Any, var_list: Any = None,
                          gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False, grad_loss: Any = None) -> list:
        """The wrapped optimizer's gradients of loss + rho * sum l2_loss(var - local_center)."""
        var_list = list(var_list) if var_list else trainable_variables()
        distance = math_ops.add_n([l2_loss(math_ops.subtract(v, self._centre_of(v, self._local_map)))
                                   for v in var_list])
        return self._opt.compute_gradients(loss + self._rho * distance, var_list, gate_gradients,
                                           aggregation_method, colocate_gradients_with_ops, grad_loss)

    def _centre_of(self, var: Variable, centres: dict) -> Variable:
        centre = centres.get(var)
        if centre is None:
            raise ValueError(f"{var.op.name} was not created through the ElasticAverageCustomGetter: "
                             f"create it with tf.get_variable inside tf.variable_scope(custom_getter=...)")
        return centre

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        """The wrapped optimizer's update and local_step += 1; then, when the new local step is
        a multiple of the period, the elastic exchange with the centre."""
        pairs = list(grads_and_vars)
        apply_updates, created = new_globals(lambda: self._opt.apply_gradients(pairs))
        move_to_local(created)
        graph = get_default_graph()
        with graph.control_dependencies([apply_updates]):
            local_update = self._local_step.assign_add(1, name="local_step_update")
        with graph.control_dependencies([local_update]):
            is_period = math_ops.equal(math_ops.floormod(local_update, self._period), 0)
            updates = [self._exchange(var, is_period) for grad, var in pairs if grad is not None]
        if global_step is not None:
            with graph.colocate_with(global_step.op), graph.control_dependencies(updates):
                updates.append(global_step.assign_add(
                    math_ops.cast(is_period, global_step.dtype.base_dtype),
                    use_locking=self._use_locking).op)
        return group(*updates, name=name or self._name)

    def _exchange(self, var: Variable, is_period: Any) -> Operation:
        graph = get_default_graph()
        local_center = self._centre_of(var, self._local_map)
        global_center = self._centre_of(var, self._global_map)
        with graph.device(local_center.device):
            fetched = local_center.assign(where_v2(is_period, global_center.read_value(),
                                                   local_center.read_value()))
        with graph.device(var.device):
            step = where_v2(is_period, self._moving_rate * math_ops.subtract(var.read_value(), fetched),
                            array_ops.zeros_like(fetched))
            local_move = var.assign_sub(step, use_locking=self._use_locking)
        with graph.device(global_center.device):
            centre_move = global_center.assign_add(step, use_locking=self._use_locking)
        return group(local_move, centre_move)

    def get_init_op(self, task_index: int) -> Operation:
        """Every local variable and local centre := the global centre, then a barrier until
        all ``num_worker`` workers have done so."""
        local_vars = [v for v in trainable_variables() if v in self._global_map]
        if not local_vars:
            raise ValueError("The lists of local_variables, global_center_variables, "
                             "local_center_variables should not be empty  ")
        init_ops = []
        for var in local_vars:
            centre = self._global_map[var].read_value()
            init_ops += [var.assign(centre), self._local_map[var].assign(centre)]
        init_op = group(*init_ops)
        return barrier(init_op, self._num_worker, task_index, self._global_map[local_vars[0]].device)

    def make_session_run_hook(self, is_chief: bool, task_index: int) -> "SessionRunHook":
        """A hook that runs get_init_op(task_index) once the session exists."""
        return _ElasticAverageOptimizerHook(self, is_chief, task_index)

    def swapping_saver(self, var_list: Any = None, name: str = "swapping_saver",
                       **kwargs: Any) -> Saver:
        """A Saver that writes each global centre under its local variable's name (for
        evaluation or inference on the averaged model)."""
        if not self._global_map:
            raise ValueError("Global step must be created through ElasticAverageCustomGetter "
                             "before swapping_saver: no variable was")
        if var_list is None:
            var_list = trainable_variables()
        if not isinstance(var_list, dict):
            var_list = {v.op.name: v for v in var_list}
        swapped = {key: self._global_map.get(var, var) for key, var in var_list.items()}
        return Saver(swapped, name=name, **kwargs)

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        return self._opt.get_slot(var, name)

    def get_slot_names(self) -> list[str]:
        return self._opt.get_slot_names()


def barrier(after: Operation, num_worker: int, task_index: int, device: str) -> Operation:
    """TF's init barrier: one queue per worker ("variable_init_sync_queue<i>"); each worker,
    after ``after``, puts a token in every other worker's queue and takes num_worker - 1 from
    its own. zmtf puts the queues on ``device`` (the ps), where every worker shares them."""
    if num_worker <= 1:
        return after
    graph = get_default_graph()
    with graph.device(device):
        queues = [FIFOQueue(num_worker, [dtypes.bool_], shapes=[[]],
                            shared_name=f"variable_init_sync_queue{i}") for i in range(num_worker)]
        with graph.control_dependencies([after]):
            token = array_ops.zeros([], dtypes.bool_)
            ops = [q.enqueue(token) for i, q in enumerate(queues) if i != task_index]
        with graph.control_dependencies(ops):
            taken = queues[task_index].dequeue_many(num_worker - 1)
    return group(*ops, taken)


class _ElasticAverageOptimizerHook(SessionRunHook):
    def __init__(self, optimizer: ElasticAverageOptimizer, is_chief: bool, task_index: int) -> None:
        self._optimizer, self._is_chief, self._task_index = optimizer, is_chief, task_index

    def begin(self) -> None:
        self._variable_init_op = self._optimizer.get_init_op(self._task_index)

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self._variable_init_op)

"""tf.train.SyncReplicasOptimizer: synchronous between-graph training over parameter servers.

TF 1.x's design, op for op. Each worker pushes its gradients into one
ConditionalAccumulator per variable (on the variable's ps) tagged with its local step, then
waits for a token from the sync token queue (on the global step's ps). The chief's sync op
takes the average of ``replicas_to_aggregate`` gradients from every accumulator, applies
them with the wrapped optimizer, increments the global step, and puts one token (the new
global step) per replica into the queue. A worker's local step becomes the token's value,
so a gradient computed before the latest update is stale and its accumulator drops it.

The chief runs, after initializing the variables::

    sess.run(opt.chief_init_op)
    sess.run(opt.get_init_tokens_op())
    threads = opt.get_chief_queue_runner().create_threads(sess, coord=coord, start=True)

and every other worker runs ``opt.local_step_init_op`` once the chief is done. Right after
the start, one round of gradients is dropped as stale (the initial tokens carry step 0),
exactly as in TF.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.errors import UnimplementedError
from zmtf.framework.graph import GraphKeys, Operation, Tensor
from zmtf.ops import array_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import group, no_op
from zmtf.ops.data_flow_ops import ConditionalAccumulator, FIFOQueue
from zmtf.ops.variables import Variable, global_variables, report_uninitialized_variables
from zmtf.training.optimizers import Optimizer
from zmtf.training.queue_runner import QueueRunner
from zmtf.training.session_run_hook import SessionRunHook


class SyncReplicasOptimizer(Optimizer):
    """Wraps ``opt``: every update averages ``replicas_to_aggregate`` fresh gradients.

    ``total_num_replicas`` > ``replicas_to_aggregate`` gives backup workers (the slowest
    gradients of a step are dropped); fewer replicas than that compute several batches
    per update.
    """

    def __init__(self, opt: Optimizer, replicas_to_aggregate: int,
                 total_num_replicas: int | None = None, variable_averages: Any = None,
                 variables_to_average: Any = None, use_locking: bool = False,
                 name: str = "sync_replicas") -> None:
        if variable_averages is not None or variables_to_average is not None:
            raise UnimplementedError(
                "SyncReplicasOptimizer(variable_averages=...) needs ExponentialMovingAverage, "
                "which zmtf does not have; pass variable_averages=None")
        if replicas_to_aggregate < 1:
            raise ValueError(f"replicas_to_aggregate must be >= 1, got {replicas_to_aggregate}")
        super().__init__(use_locking, name)
        total = replicas_to_aggregate if total_num_replicas is None else total_num_replicas
        self._opt = opt
        self._replicas_to_aggregate = int(replicas_to_aggregate)
        self._total_num_replicas = int(total)
        self._tokens_per_step = max(self._total_num_replicas, self._replicas_to_aggregate)
        self._global_step: Any = None
        self._sync_token_queue: FIFOQueue | None = None
        self._chief_queue_runner: QueueRunner | None = None
        self._accumulator_list: list[tuple[ConditionalAccumulator, str]] = []
        self._gradients_applied = False
        self.local_step_init_op: Tensor | None = None
        self.chief_init_op: Operation | None = None
        self.ready_for_local_init_op: Tensor | None = None

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list:
        """The wrapped optimizer's gradients: each replica computes its own."""
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Tensor:
        """Push the gradients to the accumulators, then wait for a token; returns the train op
        (``name`` is accepted for the Optimizer signature and, as in TF, not used)."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError("Must supply at least one variable")
        if global_step is None:
            raise ValueError("Global step is required to check staleness: pass "
                             "global_step=tf.train.get_or_create_global_step()")
        if self._gradients_applied:
            raise ValueError("apply_gradients() was already called on this SyncReplicasOptimizer; "
                             "make one optimizer per train op")
        self._global_step = global_step
        graph = global_step.graph
        with graph.as_default():
            self._make_local_step(global_step)
            train_ops, aggregated = self._accumulate(pairs)
            with graph.device(global_step.device), graph.name_scope(None):
                update_op = self._opt.apply_gradients(
                    [(g, v) for g, (_, v) in zip(aggregated, pairs)], global_step)
                train_op = self._sync(global_step, train_ops, update_op)
            chief_init_ops = [self.local_step_init_op.op]
            for accumulator, device in self._accumulator_list:
                with graph.device(device):
                    chief_init_ops.append(accumulator.set_global_step(global_step,
                                                                      name="SetGlobalStep"))
            self.chief_init_op = group(*chief_init_ops)
        self._gradients_applied = True
        return train_op

    def _make_local_step(self, global_step: Any) -> None:
        """This replica's step (a local variable on the worker) and its init ops."""
        graph = global_step.graph
        anchor = no_op(name="sync_rep_local_anchor")
        with graph.device(anchor.device), graph.control_dependencies(None):
            self._local_step = Variable(0, trainable=False, collections=[GraphKeys.LOCAL_VARIABLES],
                                        dtype=global_step.dtype, name="sync_rep_local_step")
        self.local_step_init_op = self._local_step.assign(global_step)
        # as TF: the names of the global variables not initialized yet (ready: none)
        self.ready_for_local_init_op = report_uninitialized_variables(global_variables())

    def _accumulate(self, pairs: list) -> tuple[list[Operation], list[Tensor | None]]:
        """One accumulator per variable, next to it: apply_grad ops and take_grad tensors."""
        graph = self._global_step.graph
        train_ops: list[Operation] = []
        aggregated: list[Tensor | None] = []
        with graph.name_scope(self._name):
            for grad, var in pairs:
                if grad is None:
                    aggregated.append(None)
                    continue
                grad = convert_to_tensor(grad)
                with graph.device(var.device):
                    accumulator = ConditionalAccumulator(
                        grad.dtype, shape=var.get_shape(), shared_name=var.name + "/grad_accum")
                    train_ops.append(accumulator.apply_grad(grad, local_step=self._local_step))
                    aggregated.append(accumulator.take_grad(self._replicas_to_aggregate))
                self._accumulator_list.append((accumulator, var.device))
        return train_ops, aggregated

    def _sync(self, global_step: Any, train_ops: list[Operation], update_op: Operation) -> Tensor:
        """The token queue; the workers' dequeue (their train op) and the chief's sync op."""
        graph = global_step.graph
        self._sync_token_queue = FIFOQueue(-1, global_step.dtype, shapes=(), name="sync_token_q",
                                           shared_name="sync_token_q")
        # The runner gets a queue of its own: closing the token queue on the ps would stop
        # every later session too (TF's reason for this dummy).
        dummy_queue = FIFOQueue(1, dtypes.int32, shapes=(), name="dummy_queue",
                                shared_name="dummy_queue")
        with graph.control_dependencies(train_ops):
            token = self._sync_token_queue.dequeue()
        train_op = self._local_step.assign(token)
        with graph.control_dependencies([update_op]):
            with graph.colocate_with(global_step.op):   # read after the update, not before
                step_now = array_ops.identity(global_step._ref_tensor())
            tokens = array_ops.fill([self._tokens_per_step], step_now)
            sync_op = self._sync_token_queue.enqueue_many((tokens,))
        self._chief_queue_runner = QueueRunner(dummy_queue, [sync_op])
        return train_op

    # ---- what the chief runs -------------------------------------------------------------
    def get_chief_queue_runner(self) -> QueueRunner:
        """The QueueRunner whose thread runs the sync op in a loop (start it on the chief only)."""
        if not self._gradients_applied or self._chief_queue_runner is None:
            raise ValueError("Should be called after apply_gradients().")
        return self._chief_queue_runner

    def get_init_tokens_op(self, num_tokens: int = -1) -> Operation:
        """Fill the token queue so the replicas can take their first steps (chief, once)."""
        if not self._gradients_applied or self._sync_token_queue is None:
            raise ValueError("get_init_tokens_op() should be called after apply_gradients().")
        tokens_needed = self._replicas_to_aggregate - self._total_num_replicas
        if num_tokens == -1:
            num_tokens = self._replicas_to_aggregate
        elif num_tokens < tokens_needed:
            raise ValueError(f"Too few tokens to finish the first step: {num_tokens} (given) vs "
                             f"{tokens_needed} (needed)")
        graph = self._global_step.graph
        with graph.as_default(), graph.device(self._global_step.device), graph.name_scope(None):
            if num_tokens <= 0:
                return no_op(name="sync_init_tokens")
            tokens = array_ops.fill([num_tokens], self._global_step)
            return self._sync_token_queue.enqueue_many((tokens,), name="sync_init_tokens")

    def make_session_run_hook(self, is_chief: bool, num_tokens: int = -1) -> Any:
        """A hook for MonitoredTrainingSession: the chief initializes the sync state, fills the
        token queue and starts the sync queue runner; the others set their local step. It may
        be made before ``apply_gradients``, as long as that runs before the session starts."""
        return _SyncReplicasHook(self, is_chief, num_tokens)

    # ---- the wrapped optimizer's slots ----------------------------------------------------
    def get_slot(self, var: Variable, name: str) -> Variable | None:
        return self._opt.get_slot(var, name)

    def get_slot_names(self) -> list[str]:
        return self._opt.get_slot_names()

    def variables(self) -> list[Variable]:
        return self._opt.variables()


class _SyncReplicasHook(SessionRunHook):
    def __init__(self, opt: SyncReplicasOptimizer, is_chief: bool, num_tokens: int) -> None:
        self._opt, self._is_chief, self._num_tokens = opt, is_chief, num_tokens

    def begin(self) -> None:
        if not self._opt._gradients_applied:
            raise ValueError("SyncReplicasOptimizer.apply_gradient should be called before using "
                             "the hook.")
        self._tokens = self._opt.get_init_tokens_op(self._num_tokens) if self._is_chief else None

    def after_create_session(self, session: Any, coord: Any) -> None:
        if not self._is_chief:
            session.run(self._opt.local_step_init_op)
            return
        session.run(self._opt.chief_init_op)
        session.run(self._tokens)
        self._opt.get_chief_queue_runner().create_threads(session, coord=coord, daemon=True, start=True)

    def end(self, session: Any) -> None:
        """The chief stops: one more round of tokens lets a worker waiting for one finish its
        step and see that training is over (in TF it may wait forever)."""
        if self._is_chief:
            session.run(self._tokens)

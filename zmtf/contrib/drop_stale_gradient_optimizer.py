"""``tf.contrib.opt.DropStaleGradientOptimizer``: TF 1.15's guard for asynchronous training.

compute_gradients records the global step ("local step") before the gradients are computed;
apply_gradients reads the global step again once every gradient exists. If it moved by more
than ``staleness``, the update (and with it the global step increment) is skipped and the
variable "stale_counter" (next to the global step) goes up by 1, as in TF; the returned
tensor is the new stale_counter. TF's summary "Gradient staleness percentage" is added too.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops, summary_ops
from zmtf.ops.cond_ops import cond
from zmtf.ops.init_ops import Zeros
from zmtf.ops.variable_scope import get_variable
from zmtf.training.optimizers import Optimizer, get_global_step
from zmtf.training.wrapped_optimizer import SlotsOfWrapped


class DropStaleGradientOptimizer(SlotsOfWrapped, Optimizer):
    """Wraps ``opt``: applies its gradients only if at most ``staleness`` global steps
    passed while they were computed."""

    def __init__(self, opt: Optimizer, staleness: int, use_locking: bool = False,
                 name: str = "DropStaleGradient") -> None:
        super().__init__(use_locking, name)
        self._opt = opt
        self._staleness = staleness
        self._local_step: Tensor | None = None

    def compute_gradients(self, loss: Any, *args: Any, **kwargs: Any) -> list:
        graph = get_default_graph()
        global_step = get_global_step()
        if global_step is None:
            raise ValueError("DropStaleGradientOptimizer needs a global step: create it first "
                             "with tf.train.get_or_create_global_step()")
        with graph.colocate_with(loss.op):
            self._local_step = global_step.read_value() + 0
        with graph.control_dependencies([self._local_step]):
            loss = array_ops.identity(loss)
        return self._opt.compute_gradients(loss, *args, **kwargs)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Tensor:
        if self._local_step is None:
            raise ValueError("DropStaleGradientOptimizer.apply_gradients needs the step its "
                             "compute_gradients recorded: call compute_gradients (or minimize) first")
        if global_step is None:
            raise ValueError("DropStaleGradientOptimizer.apply_gradients needs global_step to "
                             "measure staleness: pass global_step=tf.train.get_global_step()")
        pairs = list(grads_and_vars)
        graph = get_default_graph()
        with graph.colocate_with(global_step.op):
            stale_counter = get_variable("stale_counter", [], initializer=Zeros(), trainable=False)
        gradients = [g if isinstance(g, Tensor) else g.op for g, _ in pairs if g is not None]
        with graph.control_dependencies(gradients), graph.colocate_with(global_step.op):
            staleness = array_ops.reshape(global_step.read_value() - self._local_step, [])

        def accept() -> Tensor:
            with graph.control_dependencies(
                    [self._opt.apply_gradients(pairs, global_step=global_step, name=name)]):
                return array_ops.identity(0.0)

        def drop() -> Tensor:
            return array_ops.identity(1.0)

        dropped = cond(math_ops.less_equal(staleness, self._staleness), accept, drop)
        conditional_update = stale_counter.assign_add(dropped)
        summary_ops.scalar("Gradient staleness percentage",
                           stale_counter / math_ops.cast(global_step.read_value() + 1, dtypes.float32))
        return conditional_update

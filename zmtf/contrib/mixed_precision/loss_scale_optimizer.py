"""TF 1.15's ``tf.contrib.mixed_precision.LossScaleOptimizer``: gradients of loss * scale,
divided by the scale again; a step whose gradients are not all finite is skipped (no
variable moves, the global step stays) and the loss scale manager hears about it.

zmtf also scales an IndexedSlices gradient (its values), which TF 1.15's version cannot do.
"""

from __future__ import annotations

from typing import Any

from zmtf.contrib.mixed_precision.loss_scale_manager import LossScaleManager
from zmtf.framework.graph import Operation
from zmtf.ops import math_ops
from zmtf.ops.control_flow_ops import group
from zmtf.training.loss_scale import all_finite, run_if, scaled_gradient
from zmtf.training.optimizers import Optimizer
from zmtf.training.wrapped_optimizer import SlotsOfWrapped


class LossScaleOptimizer(SlotsOfWrapped, Optimizer):
    """Wraps ``opt``; ``loss_scale_manager`` says what to scale the loss by."""

    def __init__(self, opt: Optimizer, loss_scale_manager: LossScaleManager) -> None:
        super().__init__(False, "LossScaleOptimizer")
        self._opt = opt
        self._loss_scale_manager = loss_scale_manager

    def compute_gradients(self, loss: Any, var_list: Any = None,
                          gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list:
        loss_scale = self._loss_scale_manager.get_loss_scale()
        grads_and_vars = self._opt.compute_gradients(
            loss * loss_scale, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        inverse = math_ops.reciprocal(loss_scale)
        return [(scaled_gradient(grad, inverse), var) for grad, var in grads_and_vars]

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        pairs = list(grads_and_vars)
        finite = all_finite([grad for grad, _ in pairs])
        update_vars = run_if(finite, lambda: self._opt.apply_gradients(
            pairs, global_step=global_step, name=name))
        return group(update_vars, self._loss_scale_manager.update_loss_scale(finite))


"""``tf.train.experimental.MixedPrecisionLossScaleOptimizer`` (TF 1.15, in TF 2.x's compat.v1):
gradients of loss * loss_scale, unscaled; with a DynamicLossScale a step whose gradients are
not all finite is skipped (variables and global step stay) while the scale shrinks. With a
fixed scale every step is applied, as in TF.

The optimizer takes the wrapped one's name; its apply op is that name ("Momentum") and the
wrapped apply is "<name>-wrapped", as in TF. Distribution strategies are not built in zmtf.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Operation
from zmtf.ops import math_ops
from zmtf.ops.control_flow_ops import group
from zmtf.training import loss_scale as loss_scale_module
from zmtf.training.optimizers import Optimizer
from zmtf.training.wrapped_optimizer import SlotsOfWrapped


class MixedPrecisionLossScaleOptimizer(SlotsOfWrapped, Optimizer):
    """Wraps ``opt``; ``loss_scale`` is "dynamic", a number, or a LossScale."""

    def __init__(self, opt: Optimizer, loss_scale: Any) -> None:
        if not isinstance(opt, Optimizer):
            raise ValueError(f'"opt" must be an instance of Optimizer, but got: {type(opt)}')
        super().__init__(opt._use_locking, opt.get_name())
        self._opt = opt
        self._loss_scale = loss_scale_module.get(loss_scale)
        if self._loss_scale is None:
            raise ValueError("loss_scale cannot be None")

    def compute_gradients(self, loss: Any, var_list: Any = None,
                          gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                          colocate_gradients_with_ops: bool = False,
                          grad_loss: Any = None) -> list:
        scale = self._loss_scale()
        grads_and_vars = self._opt.compute_gradients(
            loss * math_ops.cast(scale, loss.dtype), var_list=var_list,
            gate_gradients=gate_gradients, aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, grad_loss=grad_loss)
        inverse = 1 / scale
        return [(loss_scale_module.scaled_gradient(grad, inverse), var)
                for grad, var in grads_and_vars]

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        pairs = list(grads_and_vars)
        if not isinstance(self._loss_scale, loss_scale_module.DynamicLossScale):
            return self._opt.apply_gradients(pairs, global_step, name)
        name = name or self.get_name()
        update_scale, should_apply = self._loss_scale.update([grad for grad, _ in pairs])
        applied = loss_scale_module.run_if(should_apply, lambda: self._opt.apply_gradients(
            pairs, global_step, f"{name}-wrapped"))
        return group(applied, update_scale, name=name)

"""``tf.contrib.opt``: TF 1.15's LazyAdamOptimizer, the decoupled weight decay optimizers
(AdamWOptimizer, MomentumWOptimizer, extend_with_decoupled_weight_decay) and the
distributed-training wrappers ElasticAverageOptimizer + ElasticAverageCustomGetter
(contrib/elastic_average_optimizer.py), DropStaleGradientOptimizer
(contrib/drop_stale_gradient_optimizer.py) and MovingAverageOptimizer with its swapping_saver
(contrib/moving_average_optimizer.py). Other contrib.opt names (ModelAverageOptimizer, ...)
are an AttributeError that says so.
"""

from __future__ import annotations

from typing import Any

from zmtf.contrib.drop_stale_gradient_optimizer import DropStaleGradientOptimizer
from zmtf.contrib.elastic_average_optimizer import (ElasticAverageCustomGetter,
                                                    ElasticAverageOptimizer)
from zmtf.contrib.moving_average_optimizer import MovingAverageOptimizer
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops import math_ops
from zmtf.ops.control_flow_ops import group, no_op
from zmtf.ops.scatter_ops import scatter_add, scatter_sub, scatter_update
from zmtf.ops.selection_ops import gather
from zmtf.ops.variables import Variable
from zmtf.training.optimizers import (AdamOptimizer, MomentumOptimizer, Optimizer,
                                   deduplicate_indexed_slices)

__all__ = ["AdamWOptimizer", "DecoupledWeightDecayExtension", "DropStaleGradientOptimizer",
           "ElasticAverageCustomGetter", "ElasticAverageOptimizer", "LazyAdamOptimizer",
           "MomentumWOptimizer", "MovingAverageOptimizer", "extend_with_decoupled_weight_decay"]


class LazyAdamOptimizer(AdamOptimizer):
    """Adam whose sparse update touches only the gradient's rows: m, v and var of the rows
    looked up this step, nothing else (TF's AdamOptimizer decays every row of m and v).
    Dense gradients get plain Adam."""

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        values, indices = deduplicate_indexed_slices(grad)
        lr, beta1, beta2, epsilon = self._sparse_hypers(var)
        m, v = self.get_slot(var, "m"), self.get_slot(var, "v")
        assert m is not None and v is not None
        m_t = scatter_update(m, indices, beta1 * gather(m, indices) + (1 - beta1) * values,
                             use_locking=self._use_locking)
        v_t = scatter_update(v, indices,
                             beta2 * gather(v, indices) + (1 - beta2) * math_ops.square(values),
                             use_locking=self._use_locking)
        denominator = math_ops.sqrt(gather(v_t, indices)) + epsilon
        var_update = scatter_sub(var, indices, lr * gather(m_t, indices) / denominator,
                                           use_locking=self._use_locking)
        return group(var_update, m_t, v_t)


class DecoupledWeightDecayExtension:
    """Mixin (before an Optimizer in the bases): each update first does
    var -= weight_decay * var (only the gradient's rows for a sparse one), for the variables of
    ``decay_var_list`` (default: all). Loshchilov & Hutter, "Decoupled Weight Decay"."""

    def __init__(self, weight_decay: Any, **kwargs: Any) -> None:
        self._decay_var_list: list[Variable] | None = None
        self._weight_decay = weight_decay
        super().__init__(**kwargs)

    def minimize(self, loss: Any, global_step: Any = None, var_list: Any = None,
                 gate_gradients: int = Optimizer.GATE_OP, aggregation_method: Any = None,
                 colocate_gradients_with_ops: bool = False, name: str | None = None,
                 grad_loss: Any = None, decay_var_list: Any = None) -> Operation:
        self._decay_var_list = list(decay_var_list) if decay_var_list else None
        return super().minimize(  # type: ignore[misc]
            loss, global_step=global_step, var_list=var_list, gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops, name=name, grad_loss=grad_loss)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: str | None = None,
                        decay_var_list: Any = None) -> Operation:
        if decay_var_list:   # minimize's list stays set through its own apply_gradients call
            self._decay_var_list = list(decay_var_list)
        return super().apply_gradients(grads_and_vars, global_step=global_step,  # type: ignore[misc]
                                       name=name)

    def _decays(self, var: Variable) -> bool:
        return self._decay_var_list is None or any(var is v for v in self._decay_var_list)

    def _weight_decay_of(self, var: Variable) -> Any:
        """A Python number multiplies var as it is (TF's ``weight_decay * var``); a tensor
        or a callable's result is cast to var's dtype."""
        value = self._weight_decay() if callable(self._weight_decay) else self._weight_decay
        if isinstance(value, (int, float)):
            return value
        return self._hyper(value, "weight_decay", var)  # type: ignore[attr-defined]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        decay = (var.assign_sub(self._weight_decay_of(var) * var).op if self._decays(var)
                 else no_op())
        with var.graph.control_dependencies([decay]):
            return super()._apply_dense(grad, var)  # type: ignore[misc]

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        values, indices = deduplicate_indexed_slices(grad)
        if self._decays(var):
            decay = scatter_add(var, indices, -self._weight_decay_of(var) * gather(var, indices)).op
        else:
            decay = no_op()
        with var.graph.control_dependencies([decay]):
            return super()._apply_sparse(  # type: ignore[misc]
                IndexedSlices(values, indices, grad.dense_shape), var)


class AdamWOptimizer(DecoupledWeightDecayExtension, AdamOptimizer):
    """Adam with decoupled weight decay: var -= weight_decay * var, then Adam's step."""

    def __init__(self, weight_decay: Any, learning_rate: Any = 0.001, beta1: Any = 0.9,
                 beta2: Any = 0.999, epsilon: Any = 1e-8, use_locking: bool = False,
                 name: str = "AdamW") -> None:
        super().__init__(weight_decay, learning_rate=learning_rate, beta1=beta1, beta2=beta2,
                         epsilon=epsilon, use_locking=use_locking, name=name)


class MomentumWOptimizer(DecoupledWeightDecayExtension, MomentumOptimizer):
    """Momentum with decoupled weight decay: var -= weight_decay * var, then the momentum step."""

    def __init__(self, weight_decay: Any, learning_rate: Any, momentum: Any,
                 use_locking: bool = False, name: str = "MomentumW",
                 use_nesterov: bool = False) -> None:
        super().__init__(weight_decay, learning_rate=learning_rate, momentum=momentum,
                         use_locking=use_locking, name=name, use_nesterov=use_nesterov)


def extend_with_decoupled_weight_decay(base_optimizer: type) -> type:
    """A subclass of ``base_optimizer`` whose constructor takes ``weight_decay`` first."""
    if not (isinstance(base_optimizer, type) and issubclass(base_optimizer, Optimizer)):
        raise TypeError(f"extend_with_decoupled_weight_decay needs an Optimizer subclass, got "
                        f"{base_optimizer!r}")

    class OptimizerWithDecoupledWeightDecay(DecoupledWeightDecayExtension, base_optimizer):  # type: ignore[misc, valid-type]
        def __init__(self, weight_decay: Any, *args: Any, **kwargs: Any) -> None:
            DecoupledWeightDecayExtension.__init__(self, weight_decay, **_named(base_optimizer, args, kwargs))

    OptimizerWithDecoupledWeightDecay.__name__ = base_optimizer.__name__ + "WithDecoupledWeightDecay"
    return OptimizerWithDecoupledWeightDecay


def _named(cls: type, args: tuple, kwargs: dict) -> dict:
    """Positional constructor arguments of ``cls`` as keywords (the mixin passes keywords on)."""
    import inspect
    params = [p for p in inspect.signature(cls.__init__).parameters if p != "self"]
    return {**dict(zip(params, args)), **kwargs}


def __getattr__(name: str) -> Any:
    raise AttributeError(f"tf.contrib.opt.{name} is not in zmtf: of tf.contrib.opt, zmtf has only "
                         f"{', '.join(__all__)} (docs/supported.md lists what is built)")

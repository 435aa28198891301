"""``tf.train.ProximalGradientDescentOptimizer`` and ``ProximalAdagradOptimizer``: TF's
FOBOS updates, whose l1 term sets small weights exactly to zero (kernels/cpu/proximal.py)."""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops.variables import Variable
from zmtf.training.optimizers import Optimizer, _apply


class ProximalGradientDescentOptimizer(Optimizer):
    """var = prox(var - lr * grad): gradient descent, then l1/l2 shrinkage."""

    def __init__(self, learning_rate: Any, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "ProximalGradientDescent") -> None:
        super().__init__(use_locking, name)
        self._lr, self._l1, self._l2 = learning_rate, l1_regularization_strength, l2_regularization_strength

    def _hypers(self, var: Variable) -> list[Tensor]:
        return [self._hyper(self._lr, "learning_rate", var), self._hyper(self._l1, "l1", var),
                self._hyper(self._l2, "l2", var)]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return _apply("ApplyProximalGradientDescent", [var._ref_tensor(), *self._hypers(var), grad],
                      {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return _apply("SparseApplyProximalGradientDescent",
                      [var._ref_tensor(), *self._hypers(var), grad.values, grad.indices],
                      {"use_locking": self._use_locking})


class ProximalAdagradOptimizer(ProximalGradientDescentOptimizer):
    """accum += grad^2; var = prox(var - lr / sqrt(accum) * grad), the shrinkage scaled by
    the same per-weight rate (accum starts at ``initial_accumulator_value``)."""

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "ProximalAdagrad") -> None:
        if initial_accumulator_value <= 0.0:
            raise ValueError(f"initial_accumulator_value must be positive: {initial_accumulator_value}")
        super().__init__(learning_rate, l1_regularization_strength, l2_regularization_strength,
                         use_locking, name)
        self._initial = float(initial_accumulator_value)

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._zeros_slot(var, "accumulator", self._name, self._initial)

    def _accum(self, var: Variable) -> Tensor:
        accum = self.get_slot(var, "accumulator")
        assert accum is not None
        return accum._ref_tensor()

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return _apply("ApplyProximalAdagrad",
                      [var._ref_tensor(), self._accum(var), *self._hypers(var), grad],
                      {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        return _apply("SparseApplyProximalAdagrad",
                      [var._ref_tensor(), self._accum(var), *self._hypers(var), grad.values,
                       grad.indices], {"use_locking": self._use_locking})

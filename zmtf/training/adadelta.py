"""``tf.train.AdadeltaOptimizer`` (Zeiler 2012), TF1's form: slots "accum" and "accum_update"
("<var>/Adadelta", "<var>/Adadelta_1"), updated by one ApplyAdadelta per variable."""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops.variables import Variable
from zmtf.training.optimizers import Optimizer, _apply


class AdadeltaOptimizer(Optimizer):
    """accum = rho * accum + (1 - rho) * g^2;
    update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) * g;
    accum_update = rho * accum_update + (1 - rho) * update^2; var -= lr * update."""

    def __init__(self, learning_rate: Any = 0.001, rho: Any = 0.95, epsilon: Any = 1e-8,
                 use_locking: bool = False, name: str = "Adadelta") -> None:
        super().__init__(use_locking, name)
        self._lr, self._rho, self._epsilon = learning_rate, rho, epsilon

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._zeros_slot(var, "accum", self._name)
            self._zeros_slot(var, "accum_update", self._name + "_1")

    def _slots_and_hypers(self, var: Variable) -> list[Tensor]:
        accum, accum_update = self.get_slot(var, "accum"), self.get_slot(var, "accum_update")
        assert accum is not None and accum_update is not None
        return [var._ref_tensor(), accum._ref_tensor(), accum_update._ref_tensor(),
                self._hyper(self._lr, "learning_rate", var), self._hyper(self._rho, "rho", var),
                self._hyper(self._epsilon, "epsilon", var)]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return _apply("ApplyAdadelta", [*self._slots_and_hypers(var), grad],
                      {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """Only the gradient's rows (repeated rows summed) are updated, slots included."""
        return _apply("SparseApplyAdadelta",
                      [*self._slots_and_hypers(var), grad.values, grad.indices],
                      {"use_locking": self._use_locking})

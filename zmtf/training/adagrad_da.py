"""``tf.train.AdagradDAOptimizer``: Adagrad dual averaging, for sparse models trained with
l1 (it keeps weights exactly zero). Slots "gradient_accumulator" (zeros) and
"gradient_squared_accumulator" (``initial_gradient_squared_accumulator_value``), named
"<var>/AdagradDA" and "<var>/AdagradDA_1"; the update reads ``global_step + 1``, as TF1's does.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops import array_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.variables import Variable
from zmtf.training.optimizers import Optimizer, _apply


class AdagradDAOptimizer(Optimizer):
    """var = -sign(g) * lr * max(|g| - l1 * t, 0) / (l2 * t * lr + sqrt(gg)), with g and gg
    the sums of the gradients and of their squares and t = global_step + 1."""

    def __init__(self, learning_rate: Any, global_step: Any,
                 initial_gradient_squared_accumulator_value: float = 0.1,
                 l1_regularization_strength: float = 0.0, l2_regularization_strength: float = 0.0,
                 use_locking: bool = False, name: str = "AdagradDA") -> None:
        if initial_gradient_squared_accumulator_value <= 0.0:
            raise ValueError(f"initial_gradient_squared_accumulator_value must be positive: "
                             f"{initial_gradient_squared_accumulator_value}")
        super().__init__(use_locking, name)
        self._lr = learning_rate
        self._initial = float(initial_gradient_squared_accumulator_value)
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._global_step = global_step
        self._step_on_worker: Tensor | None = None

    def _create_slots(self, var_list: list[Variable]) -> None:
        for var in var_list:
            self._zeros_slot(var, "gradient_accumulator", self._name)
            self._zeros_slot(var, "gradient_squared_accumulator", self._name, self._initial)

    def _prepare(self) -> None:
        if self._global_step is None:
            raise ValueError("AdagradDAOptimizer needs a global_step (an integer scalar variable, "
                             "e.g. tf.train.get_or_create_global_step()); it was given None")
        self._step_on_worker = array_ops.identity(convert_to_tensor(self._global_step)) + 1

    def _refs_and_grad(self, var: Variable) -> list[Tensor]:
        g_acc = self.get_slot(var, "gradient_accumulator")
        gg_acc = self.get_slot(var, "gradient_squared_accumulator")
        assert g_acc is not None and gg_acc is not None
        return [var._ref_tensor(), g_acc._ref_tensor(), gg_acc._ref_tensor()]

    def _hypers(self, var: Variable) -> list[Tensor]:
        """lr, l1, l2 in var's dtype, then the global step read beside var."""
        assert self._step_on_worker is not None
        hypers = [self._hyper(self._lr, "learning_rate", var), self._hyper(self._l1, "l1", var),
                  self._hyper(self._l2, "l2", var)]
        return [*hypers, array_ops.identity(self._step_on_worker)]

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return _apply("ApplyAdagradDA", [*self._refs_and_grad(var), grad, *self._hypers(var)],
                      {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """Only the gradient's rows (repeated rows summed) and their accumulators change."""
        return _apply("SparseApplyAdagradDA",
                      [*self._refs_and_grad(var), grad.values, grad.indices, *self._hypers(var)],
                      {"use_locking": self._use_locking})

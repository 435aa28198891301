"""``tf.train.FtrlOptimizer``: FTRL-Proximal (McMahan et al. 2013), as TF1 builds it.

Slots "accum" (starts at ``initial_accumulator_value``) and "linear" (zeros), named
"<var>/Ftrl" and "<var>/Ftrl_1". Dense gradients use ApplyFtrl, or ApplyFtrlV2 when
``l2_shrinkage_regularization_strength`` > 0; an IndexedSlices gradient (an embedding lookup's,
the usual case for wide sparse models) updates only its rows with SparseApplyFtrl(V2).
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.indexed_slices import IndexedSlices
from zmtf.ops.variables import Variable
from zmtf.training.optimizers import Optimizer, _apply


class FtrlOptimizer(Optimizer):
    """FTRL-Proximal with L1, L2 and L2-shrinkage regularization (TF's ApplyFtrl formulas)."""

    def __init__(self, learning_rate: Any, learning_rate_power: float = -0.5,
                 initial_accumulator_value: float = 0.1, l1_regularization_strength: float = 0.0,
                 l2_regularization_strength: float = 0.0, use_locking: bool = False,
                 name: str = "Ftrl", accum_name: str | None = None, linear_name: str | None = None,
                 l2_shrinkage_regularization_strength: float = 0.0) -> None:
        super().__init__(use_locking, name)
        checks = (
            (initial_accumulator_value, "initial_accumulator_value", "be positive or zero"),
            (l1_regularization_strength, "l1_regularization_strength", "be positive or zero"),
            (l2_regularization_strength, "l2_regularization_strength", "be positive or zero"),
            (l2_shrinkage_regularization_strength, "l2_shrinkage_regularization_strength",
             "be positive or zero"),
            (-learning_rate_power, "learning_rate_power", "be less than or equal to 0"),
        )
        for value, what, rule in checks:
            if value < 0.0:
                raise ValueError(f"{what} {value} needs to {rule}")
        self._lr = learning_rate
        self._lr_power = learning_rate_power
        self._initial = float(initial_accumulator_value)
        self._l1, self._l2 = l1_regularization_strength, l2_regularization_strength
        self._l2_shrinkage = l2_shrinkage_regularization_strength
        self._accum_name, self._linear_name = accum_name, linear_name

    def _create_slots(self, var_list: list[Variable]) -> None:
        accum_name = self._accum_name or self._name
        linear_name = self._linear_name or self._name
        if linear_name == accum_name:
            linear_name += "_1"  # TF's second slot of the same name is uniquified
        for var in var_list:
            self._zeros_slot(var, "accum", accum_name, self._initial)
            self._zeros_slot(var, "linear", linear_name)

    def _refs(self, var: Variable) -> list[Tensor]:
        accum, linear = self.get_slot(var, "accum"), self.get_slot(var, "linear")
        assert accum is not None and linear is not None
        return [var._ref_tensor(), accum._ref_tensor(), linear._ref_tensor()]

    def _hypers(self, var: Variable) -> list[Tensor]:
        """lr, l1, l2[, l2_shrinkage], lr_power: the Apply op's trailing inputs."""
        named = [(self._lr, "learning_rate"), (self._l1, "l1_regularization_strength"),
                 (self._l2, "l2_regularization_strength")]
        if self._l2_shrinkage > 0.0:
            named.append((self._l2_shrinkage, "l2_shrinkage_regularization_strength"))
        named.append((self._lr_power, "learning_rate_power"))
        return [self._hyper(value, name, var) for value, name in named]

    def _op_type(self, sparse: bool) -> str:
        op_type = "SparseApplyFtrl" if sparse else "ApplyFtrl"
        return op_type + "V2" if self._l2_shrinkage > 0.0 else op_type

    def _apply_dense(self, grad: Tensor, var: Variable) -> Operation:
        return _apply(self._op_type(False), [*self._refs(var), grad, *self._hypers(var)],
                      {"use_locking": self._use_locking})

    def _apply_sparse(self, grad: IndexedSlices, var: Variable) -> Operation:
        """Only the gradient's rows are read and written (repeated rows summed first)."""
        inputs = [*self._refs(var), grad.values, grad.indices, *self._hypers(var)]
        return _apply(self._op_type(True), inputs, {"use_locking": self._use_locking})

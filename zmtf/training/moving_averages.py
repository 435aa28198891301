"""``tf.train.ExponentialMovingAverage`` and ``assign_moving_average``, TF1's forms.

``apply(var_list)`` gives each variable a non-trainable shadow "<var>/ExponentialMovingAverage",
colocated with it and initialized to its initial value, and returns one op that moves every
shadow toward its variable: shadow -= (1 - decay) * (shadow - var). With ``num_updates`` the
decay is min(decay, (1 + num_updates) / (10 + num_updates)), so early averages move faster.
``variables_to_restore()`` maps checkpoint names to variables so that a Saver loads the
averages into the model's variables (evaluation with averaged weights).

Zero-debiasing (TF's default for ``assign_moving_average``, and always used for averages of
plain tensors, whose shadows start at zero): a "biased" accumulator and a "local_step"
counter beside the average, and average = biased / (1 - decay^local_step), so the first
updates are not pulled toward the zero start.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import GraphKeys, Operation, Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops, state_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import group
from zmtf.ops.variables import Variable, global_variables, trainable_variables

_FLOAT_DTYPES = (dtypes.float16, dtypes.float32, dtypes.float64)


def assign_moving_average(variable: Variable, value: Any, decay: Any, zero_debias: bool = True,
                          name: str | None = None) -> Tensor:
    """variable -= (1 - decay) * (variable - value), colocated with ``variable``; with
    ``zero_debias`` (TF's default) variable = biased / (1 - decay^t), as TF computes it."""
    graph = variable.graph
    with graph.name_scope(name or "AssignMovingAvg"), graph.colocate_with(variable.op):
        one_minus_decay = 1.0 - convert_to_tensor(decay, name="decay")
        if one_minus_decay.dtype != variable.dtype:
            one_minus_decay = math_ops.cast(one_minus_decay, variable.dtype)
        if zero_debias:
            return _zero_debiased_update(variable, value, one_minus_decay)
        delta = (variable.value() - value) * one_minus_decay
        return state_ops.assign_sub(variable, delta)


def _zero_debiased_update(variable: Variable, value: Any, one_minus_decay: Tensor) -> Tensor:
    """TF's _zero_debias: "<var>/biased" and "<var>/local_step" (zeros, not trainable)."""
    graph = variable.graph
    with graph.name_scope(None), graph.control_dependencies(None):
        biased = Variable(array_ops.zeros(variable.shape, variable.dtype), trainable=False,
                          name=f"{variable.op.name}/biased", dtype=variable.dtype)
        local_step = Variable(array_ops.zeros([], variable.dtype), trainable=False,
                              name=f"{variable.op.name}/local_step", dtype=variable.dtype)
    update_biased = state_ops.assign_sub(biased, (biased.value() - value) * one_minus_decay)
    step = state_ops.assign_add(local_step, array_ops.ones([], variable.dtype))
    bias_factor = 1.0 - math_ops.pow(1.0 - one_minus_decay, step)
    return state_ops.assign(variable, update_biased / bias_factor)


class ExponentialMovingAverage:
    """Shadow copies of variables that track their exponential moving average."""

    def __init__(self, decay: Any, num_updates: Any = None, zero_debias: bool = False,
                 name: str = "ExponentialMovingAverage") -> None:
        self._decay = decay
        self._zero_debias = zero_debias
        self._num_updates = num_updates
        self._name = name
        #: model variable op (or averaged tensor) -> its shadow variable
        self._averages: dict[Operation | Tensor, Variable] = {}

    @property
    def name(self) -> str:
        return self._name

    def apply(self, var_list: Any = None) -> Operation:
        """Create the shadows of ``var_list`` (default: the trainable variables) and return
        the op that updates them all."""
        var_list = trainable_variables() if var_list is None else list(var_list)
        for var in var_list:
            self._check(var)
        graph = get_default_graph()
        for var in var_list:
            self._averages[_key(var)] = self._create_shadow(var)
            if isinstance(var, Variable):
                graph.add_to_collection(GraphKeys.MOVING_AVERAGE_VARIABLES, var)
        with graph.name_scope(self._name) as scope:
            decay = convert_to_tensor(self._decay, dtype=dtypes.float32, name="decay")
            if self._num_updates is not None:
                steps = math_ops.cast(convert_to_tensor(self._num_updates), dtypes.float32)
                decay = math_ops.minimum(decay, (1.0 + steps) / (10.0 + steps))
            updates = [assign_moving_average(
                self._averages[_key(var)], var.value() if isinstance(var, Variable) else var, decay,
                zero_debias=self._zero_debias and not isinstance(var, Variable)) for var in var_list]
            return group(*updates, name=scope)

    def average(self, var: Variable | Tensor) -> Variable | None:
        """The shadow of ``var``, or None if ``apply`` was not called on it."""
        return self._averages.get(_key(var))

    def average_name(self, var: Variable | Tensor) -> str:
        """The shadow's op name: the name its value has in a checkpoint."""
        shadow = self._averages.get(_key(var))
        return shadow.op.name if shadow is not None else f"{var.op.name}/{self._name}"

    def variables_to_restore(self, moving_avg_variables: Any = None) -> dict[str, Variable]:
        """{checkpoint name: variable}: the averaged variables read their shadow's saved value,
        every other global variable its own (``tf.train.Saver(ema.variables_to_restore())``)."""
        if moving_avg_variables is None:
            graph = get_default_graph()
            moving_avg_variables = trainable_variables() + graph.get_collection(
                GraphKeys.MOVING_AVERAGE_VARIABLES)
        averaged = {var.op: var for var in moving_avg_variables}
        name_map = {self.average_name(var): var for var in averaged.values()}
        averaged_names = {var.name for var in averaged.values()}
        for var in global_variables():
            if var.name not in averaged_names and var.op.name not in name_map:
                name_map[var.op.name] = var
        return name_map

    def _check(self, var: Any) -> None:
        if not isinstance(var, (Variable, Tensor)):
            raise TypeError(f"ExponentialMovingAverage.apply() takes variables and tensors, got {var!r}")
        if var.dtype not in _FLOAT_DTYPES:
            raise TypeError(f"The variables must be half, float, or double: {var.name}")
        if _key(var) in self._averages:
            raise ValueError(f"Moving average already computed for: {var.name}")
        if not isinstance(var, Variable) and not var.shape.is_fully_defined():
            raise ValueError(f"ExponentialMovingAverage.apply() of tensor {var.name} needs its "
                             f"full static shape for the average's variable; got {var.shape}")

    def _create_shadow(self, var: Variable | Tensor) -> Variable:
        """"<var>/<name>": non-trainable; a variable's starts at its initial value, on its
        device; a tensor's starts at zero (TF's zeros slot)."""
        graph = var.graph
        with graph.name_scope(None), graph.control_dependencies(None):
            if not isinstance(var, Variable):
                return Variable(array_ops.zeros(var.shape, var.dtype), trainable=False,
                                name=f"{var.op.name}/{self._name}", dtype=var.dtype)
            with graph.colocate_with(var.op):
                return Variable(var.initial_value, trainable=False,
                                name=f"{var.op.name}/{self._name}", dtype=var.dtype)


def _key(var: Variable | Tensor) -> Operation | Tensor:
    """Variables are averaged per op (its value tensor changes), tensors per tensor."""
    return var.op if isinstance(var, Variable) else var

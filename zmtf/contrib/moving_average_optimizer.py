"""``tf.contrib.opt.MovingAverageOptimizer``: TF 1.15's wrapper that keeps an exponential
moving average of the trained variables and a saver that writes the averages in their place.

apply_gradients runs the wrapped optimizer, then (after it, when ``sequential_update``)
updates a ``tf.train.ExponentialMovingAverage`` of the variables that got a gradient; the
returned op is "train_with_avg". ``swapping_saver()`` saves each average under its variable's
name and each variable under its average's name, so that a plain Saver (or restore through
this one) loads the averages into the model's variables, as evaluation wants.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Operation, get_default_graph
from zmtf.ops.control_flow_ops import group
from zmtf.ops.variable_scope import PartitionedVariable
from zmtf.ops.variables import global_variables
from zmtf.training.moving_averages import ExponentialMovingAverage
from zmtf.training.optimizers import Optimizer
from zmtf.training.saver import Saver, named_variables
from zmtf.training.wrapped_optimizer import SlotsOfWrapped


class MovingAverageOptimizer(SlotsOfWrapped, Optimizer):
    """Wraps ``opt``; each step also moves the variables' averages towards them."""

    def __init__(self, opt: Optimizer, average_decay: Any = 0.9999, num_updates: Any = None,
                 sequential_update: bool = True) -> None:
        super().__init__(False, "MovingAverageOptimizer")
        self._opt = opt
        self._ema = ExponentialMovingAverage(average_decay, num_updates=num_updates)
        self._sequential_update = sequential_update
        #: variable op name <-> its average's op name, both ways; None until apply_gradients
        self._swapped_variable_name_map: dict[str, str] | None = None

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list:
        return self._opt.compute_gradients(*args, **kwargs)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None,
                        name: str | None = None) -> Operation:
        pairs = list(grads_and_vars)
        train_op = self._opt.apply_gradients(pairs, global_step=global_step, name=name)
        var_list = [var for grad, var in pairs if grad is not None]
        if self._sequential_update:
            with get_default_graph().control_dependencies([train_op]):
                ma_op = self._ema.apply(var_list)
        else:
            ma_op = self._ema.apply(var_list)
        swapped = self._swapped_variable_name_map = {}
        for var in var_list:
            average = self._ema.average(var)
            assert average is not None
            swapped[var.op.name] = average.op.name
            swapped[average.op.name] = var.op.name
        return group(train_op, ma_op, name="train_with_avg")

    def swapping_saver(self, var_list: Any = None, name: str = "swapping_saver",
                       **kwargs: Any) -> Saver:
        """A Saver whose checkpoint holds each average under its variable's name (and the
        variable under the average's name); ``var_list`` must hold both of each pair."""
        if self._swapped_variable_name_map is None:
            raise RuntimeError("Must call apply_gradients or minimize before creating the "
                               "swapping_saver")
        named = named_variables(global_variables() if var_list is None else var_list)
        swapped_var_list = {}
        for key, var in named.items():
            if isinstance(var, PartitionedVariable):
                if any(part.op.name in self._swapped_variable_name_map for part in var):
                    raise NotImplementedError(
                        f"MovingAverageOptimizer.swapping_saver of the partitioned variable "
                        f"{var.name} is not built in zmtf; save its averages with "
                        f"tf.train.Saver(ema.variables_to_restore()) instead")
                swapped_var_list[key] = var
            else:
                swapped_var_list[key] = self._swapped(named, key)
        return Saver(swapped_var_list, name=name, **kwargs)

    def _swapped(self, named: dict[str, Any], key: str) -> Any:
        """What is saved under ``key``: its swap partner, by checkpoint key as in TF."""
        assert self._swapped_variable_name_map is not None
        other = self._swapped_variable_name_map.get(key)
        if other is None:
            return named[key]
        if other not in named:
            raise ValueError(f"Variable to swap {other} is not part of variables to save. "
                             f"This breaks MovingAverageOptimizer.")
        return named[other]

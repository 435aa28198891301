"""The slot look-ups every contrib wrapper optimizer forwards to the optimizer it wraps."""

from __future__ import annotations

from zmtf.ops.variables import Variable
from zmtf.training.optimizers import Optimizer


class SlotsOfWrapped:
    """Mixin for an Optimizer that wraps ``self._opt``: its slots are the wrapped one's."""

    _opt: Optimizer

    def get_slot(self, var: Variable, name: str) -> Variable | None:
        return self._opt.get_slot(var, name)

    def get_slot_names(self) -> list[str]:
        return self._opt.get_slot_names()

"""Switch and Merge: the kernels of tf.cond (deadness itself is the executor's business)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.kernels.dead import DEAD
from zmtf.kernels.registry import register


@register("Switch")
def switch(ctx: Any, inputs: list, attrs: dict) -> list:
    """Switch(data, pred) -> (output_false, output_true): data on pred's side, DEAD on the other."""
    data, pred = inputs
    return [DEAD, data] if bool(np.asarray(pred)) else [data, DEAD]


@register("Merge")
def merge(ctx: Any, inputs: list, attrs: dict) -> list:
    """Merge(values...) -> (the live value, its index); DEAD when every input is."""
    for index, value in enumerate(inputs):
        if value is not DEAD:
            return [value, np.asarray(index, np.int32)]
    return [DEAD, DEAD]

"""``tf.keras.regularizers``: ``l1(0.01)``, ``l2(0.01)``, ``l1_l2``; keras's penalties are
``l1 * sum(|w|) + l2 * sum(w ** 2)`` (no 1/2 factor, unlike ``tf.contrib.layers.l2_regularizer``)."""

from __future__ import annotations

from typing import Any

from zmtf.ops import math_ops
from zmtf.ops.constant_op import constant, convert_to_tensor


class Regularizer:
    """A penalty callable: ``regularizer(weights)`` -> a scalar loss tensor."""

    def __call__(self, x: Any) -> Any:
        return constant(0.0)


class L1L2(Regularizer):
    """``l1 * sum(|x|) + l2 * sum(x ** 2)``."""

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:  # noqa: E741
        self.l1, self.l2 = float(l1), float(l2)

    def __call__(self, x: Any) -> Any:
        x = convert_to_tensor(x)
        penalty = constant(0.0, dtype=x.dtype)
        if self.l1:
            penalty = penalty + self.l1 * math_ops.reduce_sum(math_ops.abs(x))
        if self.l2:
            penalty = penalty + self.l2 * math_ops.reduce_sum(math_ops.square(x))
        return penalty


def l1(l: float = 0.01) -> L1L2:  # noqa: E741
    return L1L2(l1=l)


def l2(l: float = 0.01) -> L1L2:  # noqa: E741
    return L1L2(l2=l)


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:  # noqa: E741
    return L1L2(l1=l1, l2=l2)


def get(identifier: Any) -> Any:
    """None, a callable (returned as is), or 'l1' / 'l2' / 'l1_l2' (keras's 0.01 scales)."""
    if identifier is None or callable(identifier):
        return identifier
    makers = {"l1": l1, "l2": l2, "l1_l2": l1_l2}
    if identifier in makers:
        return makers[identifier]()
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")


__all__ = ["L1L2", "Regularizer", "get", "l1", "l1_l2", "l2"]

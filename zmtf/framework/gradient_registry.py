"""Gradient functions by op type: ``GRADIENTS[op_type](op, *output_grads) -> input grads``.

One table, filled at import by ``zmtf.ops.math_grad``, ``nn_grad``, ``conv_grad`` and
``array_grad`` with ``@gradient("Add", ...)``; ``not_differentiable("Shape", ...)`` records op types whose
inputs get no gradient (TF's ``ops.NotDifferentiable``). ``zmtf.training.gradients`` reads it.

A gradient function gets the forward op and one gradient per op output (a zeros tensor where
nothing flowed back into a float output, as in TF) and returns one entry per op input: a
Tensor, or None for an input that takes no gradient (an int shape, a label index).
"""

from __future__ import annotations

from typing import Callable, Sequence

from zmtf.framework.graph import Operation, Tensor

GradientFn = Callable[..., Sequence["Tensor | None"]]

#: op type -> gradient function; None marks an op type as not differentiable.
GRADIENTS: dict[str, GradientFn | None] = {}


def gradient(*op_types: str) -> Callable[[GradientFn], GradientFn]:
    """Register ``fn(op, *output_grads) -> [grad per input]`` for the given op types."""

    def register(fn: GradientFn) -> GradientFn:
        for op_type in op_types:
            _add(op_type, fn)
        return fn

    return register


def not_differentiable(*op_types: str) -> None:
    """Declare op types through which no gradient flows (Shape, ArgMax, Equal, ...)."""
    for op_type in op_types:
        _add(op_type, None)


def _add(op_type: str, fn: GradientFn | None) -> None:
    if op_type in GRADIENTS:
        raise AssertionError(f"gradient for {op_type} registered twice")
    GRADIENTS[op_type] = fn


class RegisterGradient:
    """TF1's decorator: register ``fn(op, *output_grads)`` under ``op_type`` (a new op type,
    or a name that ``graph.gradient_override_map({"Identity": op_type})`` points ops at)."""

    def __init__(self, op_type: str) -> None:
        if not isinstance(op_type, str):
            raise TypeError("op_type must be a string")
        self._op_type = op_type

    def __call__(self, fn: GradientFn) -> GradientFn:
        if self._op_type in GRADIENTS:
            raise KeyError(f"Registering two gradient with name '{self._op_type}'! Pick a new "
                           f"name for tf.RegisterGradient")
        GRADIENTS[self._op_type] = fn
        return fn


def NotDifferentiable(op_type: str) -> None:  # noqa: N802 (TF's name)
    """TF1's ``tf.NoGradient``/``tf.NotDifferentiable``: no gradient flows through op_type."""
    if op_type in GRADIENTS:
        raise KeyError(f"Registering two gradient with name '{op_type}'!")
    GRADIENTS[op_type] = None


def gradient_function(op: Operation) -> GradientFn | None:
    """The gradient function of ``op``: the one its ``_gradient_op_type`` attr names (set by
    ``gradient_override_map``), else its type's; None if declared not differentiable."""
    try:
        op_type = op.get_attr("_gradient_op_type")
    except ValueError:
        op_type = op.type
    if op_type not in GRADIENTS:
        overridden = f", overridden to '{op_type}'" if op_type != op.type else ""
        raise LookupError(
            f"No gradient defined for operation '{op.name}' (op type: {op.type}{overridden}). "
            f"Register one with @tf.RegisterGradient(name) and map the op to it with "
            f"graph.gradient_override_map, wrap the path through it out of the loss, or pass "
            f"its output in stop_gradients=[...]."
        )
    return GRADIENTS[op_type]

"""Keras merge layers: called on a list of tensors, they combine them element-wise (Add,
Subtract, Multiply, Average, Maximum, Minimum) or along an axis (Concatenate)."""

from __future__ import annotations

from functools import reduce
from typing import Any

from zmtf.ops import array_ops, math_ops
from zmtf.keras.base_layer import Layer


class _Merge(Layer):
    def _check(self, inputs: Any) -> list[Any]:
        if not isinstance(inputs, (list, tuple)) or len(inputs) < 2:
            raise ValueError(f"A merge layer should be called on a list of at least 2 inputs. "
                             f"Got {len(inputs) if isinstance(inputs, (list, tuple)) else 1} inputs.")
        return list(inputs)

    def call(self, inputs: Any) -> Any:
        return reduce(self._merge, self._check(inputs))


class Add(_Merge):
    _merge = staticmethod(math_ops.add)


class Multiply(_Merge):
    _merge = staticmethod(math_ops.multiply)


class Maximum(_Merge):
    _merge = staticmethod(math_ops.maximum)


class Minimum(_Merge):
    _merge = staticmethod(math_ops.minimum)


class Subtract(_Merge):
    def call(self, inputs: Any) -> Any:
        if len(self._check(inputs)) != 2:
            raise ValueError("A `Subtract` layer should be called on exactly 2 inputs")
        return math_ops.subtract(inputs[0], inputs[1])


class Average(_Merge):
    def call(self, inputs: Any) -> Any:
        items = self._check(inputs)
        return reduce(math_ops.add, items) / float(len(items))


class Concatenate(_Merge):
    """Joins the inputs along ``axis`` (default the last)."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = int(axis)

    def call(self, inputs: Any) -> Any:
        return array_ops.concat(self._check(inputs), self.axis)


def _functional(layer_class: type, inputs: Any, **kwargs: Any) -> Any:
    return layer_class(**kwargs)(inputs)


def add(inputs: Any, **kwargs: Any) -> Any:
    return _functional(Add, inputs, **kwargs)


def multiply(inputs: Any, **kwargs: Any) -> Any:
    return _functional(Multiply, inputs, **kwargs)


def concatenate(inputs: Any, axis: int = -1, **kwargs: Any) -> Any:
    return _functional(Concatenate, inputs, axis=axis, **kwargs)

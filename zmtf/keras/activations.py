"""``tf.keras.activations``: the element-wise functions keras layers take by name
(``Dense(8, activation="relu")``), and ``get`` that turns a name into one."""

from __future__ import annotations

from typing import Any, Callable

from zmtf.ops import composite_ops, math_ops, nn_ops, selection_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.composite_ops import softsign as _softsign
from zmtf.ops.nn_extras import selu as _selu
from zmtf.ops.nn_ops import softplus as _softplus


def linear(x: Any) -> Any:
    """The identity (keras's default: no activation)."""
    return x


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None, threshold: float = 0.0) -> Any:
    """max(x, 0); ``alpha``, ``max_value`` and ``threshold`` are built only at their defaults
    besides ``max_value`` (a clip) and ``alpha`` (a leaky slope below 0)."""
    if threshold != 0.0:
        raise NotImplementedError("tf.keras.activations.relu with threshold != 0 is not built in zmtf")
    y = nn_ops.relu(x) if alpha == 0.0 else composite_ops.leaky_relu(x, alpha)
    return y if max_value is None else math_ops.minimum(y, max_value)


def sigmoid(x: Any) -> Any:
    return math_ops.sigmoid(x)


def tanh(x: Any) -> Any:
    return math_ops.tanh(x)


def hard_sigmoid(x: Any) -> Any:
    """TF 1.15 keras's piecewise-linear sigmoid: clip(0.2 * x + 0.5, 0, 1) (the default
    recurrent activation of its LSTM and GRU)."""
    return composite_ops.clip_by_value(0.2 * convert_to_tensor(x) + 0.5, 0.0, 1.0)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """x if x > 0 else alpha * (exp(x) - 1)."""
    y = composite_ops.elu(x)
    return y if alpha == 1.0 else selection_ops.where(math_ops.greater(x, 0.0), y, y * alpha)


def selu(x: Any) -> Any:
    return _selu(x)


def softplus(x: Any) -> Any:
    return _softplus(x)


def softsign(x: Any) -> Any:
    return _softsign(x)


def exponential(x: Any) -> Any:
    return math_ops.exp(x)


def softmax(x: Any, axis: int = -1) -> Any:
    """exp(x) / sum(exp(x)) along ``axis``; keras refuses a 1-D input."""
    x = convert_to_tensor(x)
    if x.shape.ndims == 1:
        raise ValueError("Cannot apply softmax to a tensor that is 1D. Received input: "
                         f"{x.name}")
    return nn_ops.softmax(x, axis=axis)


_BY_NAME: dict[str, Callable[..., Any]] = {
    "linear": linear, "relu": relu, "sigmoid": sigmoid, "hard_sigmoid": hard_sigmoid,
    "tanh": tanh, "elu": elu, "selu": selu,
    "softplus": softplus, "softsign": softsign, "exponential": exponential, "softmax": softmax,
}


def get(identifier: Any) -> Callable[..., Any]:
    """A name ('relu'), a callable (returned as is) or None (``linear``)."""
    if identifier is None:
        return linear
    if callable(identifier):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        return _BY_NAME[identifier]
    raise ValueError(f"Unknown activation function: {identifier!r}; zmtf's tf.keras knows "
                     f"{', '.join(sorted(_BY_NAME))}")


def serialize(activation: Callable[..., Any]) -> str:
    return getattr(activation, "__name__", str(activation))


__all__ = ["elu", "exponential", "get", "hard_sigmoid", "linear", "relu", "selu", "serialize",
           "sigmoid", "softmax", "softplus", "softsign", "tanh"]

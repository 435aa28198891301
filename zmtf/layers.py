"""``tf.layers``: the TF1 layer functions built on tf.get_variable (variables in a scope)."""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework.ops import math_ops, nn_ops
from zmtf.framework.ops.constant_op import convert_to_tensor
from zmtf.framework.ops.init_ops import Zeros
from zmtf.framework.variable_scope import get_variable, variable_scope


def dense(inputs: Any, units: int, activation: Callable[[Any], Any] | None = None,
          use_bias: bool = True, kernel_initializer: Any = None, bias_initializer: Any = None,
          trainable: bool = True, name: str | None = None, reuse: Any = None, **_unused: Any) -> Any:
    """``activation(inputs @ kernel + bias)``: variables "<name>/kernel" [in, units] (Glorot
    uniform by default) and "<name>/bias" [units] (zeros), in variable scope ``name``
    (default "dense", "dense_1", ...)."""
    x = convert_to_tensor(inputs)
    if x.shape.ndims != 2 or x.shape.as_list()[-1] is None:
        raise ValueError(f"tf.layers.dense in zmtf needs a 2-D input with a known last dimension, "
                         f"got {x.shape} ({x.name})")
    with variable_scope(name, default_name="dense", reuse=reuse):
        kernel = get_variable("kernel", [x.shape.as_list()[-1], int(units)], dtype=x.dtype,
                              initializer=kernel_initializer, trainable=trainable)
        y = math_ops.matmul(x, kernel)
        if use_bias:
            bias = get_variable("bias", [int(units)], dtype=x.dtype,
                                initializer=bias_initializer or Zeros(), trainable=trainable)
            y = nn_ops.bias_add(y, bias)
        return activation(y) if activation is not None else y


__all__ = ["dense"]

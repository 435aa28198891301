"""Keras core layers in graph mode: Dense, Activation, Dropout, Flatten, Reshape, Lambda,
Embedding."""

from __future__ import annotations

import math
from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.ops import array_ops, composite_ops, linalg_ops, math_ops, nn_ops
from zmtf.ops.embedding_ops import embedding_lookup
from zmtf.keras import activations
from zmtf.keras.base_layer import Layer, smart_cond, training_value


class Dense(Layer):
    """``activation(inputs @ kernel + bias)``; kernel [in, units], bias [units]. Inputs of
    rank > 2 contract their last axis (a tensordot), as keras does."""

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self.kernel_regularizer, self.bias_regularizer = kernel_regularizer, bias_regularizer
        self.kernel_constraint, self.bias_constraint = kernel_constraint, bias_constraint

    def build(self, input_shape: Any) -> None:
        last = input_shape.as_list()[-1] if input_shape.ndims else None
        if last is None:
            raise ValueError("The last dimension of the inputs to `Dense` should be defined. "
                             "Found `None`.")
        self.kernel = self.add_weight("kernel", [last, self.units], initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = (self.add_weight("bias", [self.units], initializer=self.bias_initializer,
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)

    def call(self, inputs: Any) -> Any:
        rank = inputs.shape.ndims
        if rank is not None and rank > 2:
            outputs = linalg_ops.tensordot(inputs, self.kernel, [[rank - 1], [0]])
            outputs.set_shape(inputs.shape.as_list()[:-1] + [self.units])
        else:
            outputs = math_ops.matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = nn_ops.bias_add(outputs, self.bias)
        return self.activation(outputs)


class Activation(Layer):
    """Applies ``activations.get(activation)``."""

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)

    def call(self, inputs: Any) -> Any:
        return self.activation(inputs)


class Dropout(Layer):
    """Drops each element with probability ``rate`` (scaling the rest by 1 / (1 - rate)) when
    training: ``training`` if given, else ``tf.keras.backend.learning_phase()``."""

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rate, self.noise_shape, self.seed = float(rate), noise_shape, seed

    def call(self, inputs: Any, training: Any = None) -> Any:
        if self.rate == 0.0:
            return array_ops.identity(inputs)

        def dropped() -> Any:
            return composite_ops.dropout(inputs, rate=self.rate, noise_shape=self.noise_shape,
                                         seed=self.seed)

        return smart_cond(training_value(training), dropped, lambda: array_ops.identity(inputs))


class Flatten(Layer):
    """[batch, ...] -> [batch, product of the rest]; the batch may be unknown."""

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if data_format not in (None, "channels_last"):
            raise ValueError("Flatten in zmtf supports data_format='channels_last' only")

    def call(self, inputs: Any) -> Any:
        dims = inputs.shape.as_list() if inputs.shape.ndims is not None else None
        if dims is not None and len(dims) == 1:
            return array_ops.expand_dims(inputs, 1)
        if dims is not None and None not in dims[1:]:
            outputs = array_ops.reshape(inputs, [-1 if dims[0] is None else dims[0],
                                                 int(math.prod(dims[1:]))])
        else:
            outputs = array_ops.reshape(inputs, array_ops.stack([array_ops.shape(inputs)[0], -1]))
        return outputs


class Reshape(Layer):
    """[batch, ...] -> [batch, *target_shape]; one entry of target_shape may be -1."""

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1:
            raise ValueError("Can only specify one unknown dimension.")

    def call(self, inputs: Any) -> Any:
        batch = inputs.shape.as_list()[0] if inputs.shape.ndims else None
        if batch is not None:
            return array_ops.reshape(inputs, [batch, *self.target_shape])
        outputs = array_ops.reshape(
            inputs, array_ops.concat([array_ops.shape(inputs)[:1], list(self.target_shape)], 0))
        dims = inputs.shape.as_list()[1:] if inputs.shape.ndims else [None]
        known = [d for d in self.target_shape if d != -1]
        if -1 in self.target_shape and None not in dims:
            missing = math.prod(dims) // max(1, math.prod(known))
            outputs.set_shape([None, *(missing if d == -1 else d for d in self.target_shape)])
        elif -1 not in self.target_shape:
            outputs.set_shape([None, *self.target_shape])
        return outputs


class Lambda(Layer):
    """Wraps ``function(inputs, **arguments)`` as a layer (no weights)."""

    def __init__(self, function: Callable[..., Any], output_shape: Any = None, mask: Any = None,
                 arguments: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.function, self.arguments = function, dict(arguments or {})

    def call(self, inputs: Any) -> Any:
        return self.function(inputs, **self.arguments)


class Embedding(Layer):
    """Rows of "embeddings" [input_dim, output_dim] picked by integer ids (uniform in
    [-0.05, 0.05] by default)."""

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, activity_regularizer: Any = None,
                 embeddings_constraint: Any = None, mask_zero: bool = False,
                 input_length: Any = None, **kwargs: Any) -> None:
        if mask_zero:
            raise NotImplementedError("Embedding(mask_zero=True) is not built in zmtf (keras "
                                      "masks are not built)")
        if "input_shape" not in kwargs and input_length is not None:
            kwargs["input_shape"] = (input_length,)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.embeddings_regularizer = embeddings_regularizer
        self.embeddings_constraint = embeddings_constraint

    def _maybe_build(self, inputs: Any) -> None:
        if self.dtype is None:
            self.dtype = "float32"
        super()._maybe_build(inputs)

    def build(self, input_shape: Any) -> None:
        self.embeddings = self.add_weight("embeddings", [self.input_dim, self.output_dim],
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)

    def call(self, inputs: Any) -> Any:
        if inputs.dtype not in (dtypes.int32, dtypes.int64):
            inputs = math_ops.cast(inputs, dtypes.int32)
        return embedding_lookup(self.embeddings, inputs)

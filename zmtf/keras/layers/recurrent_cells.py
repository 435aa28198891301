"""Keras recurrent cells in graph mode: ``SimpleRNNCell``, ``LSTMCell`` and ``GRUCell``, one
time step each (``call(inputs, states) -> (output, new_states)``). Their weights are laid out
exactly as Keras lays them out (kernel [input_dim, n*units], recurrent_kernel [units, n*units],
gates i,f,c,o for LSTM and z,r,h for GRU), so weights trained in TF load and give TF's
outputs. The RNN layers in recurrent.py run a cell over time in a tf.while_loop."""

from __future__ import annotations

from typing import Any

from zmtf.ops import array_ops, composite_ops, math_ops
from zmtf.ops.selection_ops import split
from zmtf.keras import activations, initializers
from zmtf.keras.base_layer import Layer, smart_cond, training_value


def _gate_products(x: Any, weight: Any, masks: list[Any] | None, gates: int,
                   units: int) -> list[Any]:
    """``[(x * mask_k) @ weight[:, k*units:(k+1)*units] for each gate k]``: one matmul and a
    split when there is no dropout, a matmul per gate (each with its own mask) when there is."""
    if masks is None:
        return split(math_ops.matmul(x, weight), gates, axis=1)
    return [math_ops.matmul(x * mask, weight[:, k * units:(k + 1) * units])
            for k, mask in enumerate(masks)]


def _add_bias(products: list[Any], bias: Any) -> list[Any]:
    if bias is None:
        return products
    return [p + b for p, b in zip(products, split(bias, len(products), axis=0))]


class _KerasCell(Layer):
    """What the three cells share: units, activation, the three weights' initializers and
    regularizers, and dropout masks on the inputs and the recurrent state. Keras draws the
    masks once per sequence (the RNN layer calls ``prepare_masks`` before its loop) and one
    per gate, so each gate sees its own mask."""

    _GATES = 1

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, **kwargs: Any) -> None:
        self._config = {"units": units, "activation": activation, "use_bias": use_bias,
                        "kernel_initializer": kernel_initializer,
                        "recurrent_initializer": recurrent_initializer,
                        "bias_initializer": bias_initializer,
                        "kernel_regularizer": kernel_regularizer,
                        "recurrent_regularizer": recurrent_regularizer,
                        "bias_regularizer": bias_regularizer,
                        "kernel_constraint": kernel_constraint,
                        "recurrent_constraint": recurrent_constraint,
                        "bias_constraint": bias_constraint, "dropout": dropout,
                        "recurrent_dropout": recurrent_dropout, **kwargs}
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a "
                             f"positive integer, got {units}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = kernel_regularizer
        self.recurrent_regularizer, self.bias_regularizer = recurrent_regularizer, bias_regularizer
        self.kernel_constraint, self.recurrent_constraint = kernel_constraint, recurrent_constraint
        self.bias_constraint = bias_constraint
        self.dropout = min(1.0, max(0.0, float(dropout)))
        self.recurrent_dropout = min(1.0, max(0.0, float(recurrent_dropout)))
        self._prepared_masks: tuple[Any, Any] | None = None

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments (Bidirectional builds its backward copy from them)."""
        return {**self._config, "name": self.name}

    # ---- weights ---------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        input_dim = input_shape.as_list()[-1] if input_shape.ndims else None
        if input_dim is None:
            raise ValueError(f"{type(self).__name__}: the last dimension of the inputs must be "
                             f"defined, got shape {input_shape}")
        width = self._GATES * self.units
        self.kernel = self.add_weight("kernel", [input_dim, width],
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", [self.units, width],
                                                initializer=self.recurrent_initializer,
                                                regularizer=self.recurrent_regularizer,
                                                constraint=self.recurrent_constraint)
        self.bias = (self.add_weight("bias", self._bias_shape(), initializer=self._bias_init(),
                                     regularizer=self.bias_regularizer,
                                     constraint=self.bias_constraint)
                     if self.use_bias else None)
        self.built = True

    def _bias_shape(self) -> list[int]:
        return [self._GATES * self.units]

    def _bias_init(self) -> Any:
        return self.bias_initializer

    # ---- dropout masks -----------------------------------------------------------------
    def prepare_masks(self, step_input: Any, state: Any, training: Any) -> None:
        """Draw this sequence's dropout masks (shaped as one step's input and state)."""
        self._prepared_masks = self._draw_masks(step_input, state, training)

    def release_masks(self) -> None:
        self._prepared_masks = None

    def _masks(self, inputs: Any, state: Any, training: Any) -> tuple[Any, Any]:
        if self._prepared_masks is not None:
            return self._prepared_masks
        return self._draw_masks(inputs, state, training)

    def _draw_masks(self, inputs: Any, state: Any, training: Any) -> tuple[Any, Any]:
        return (self._dropout_masks(inputs, self.dropout, training),
                self._dropout_masks(state, self.recurrent_dropout, training))

    def _dropout_masks(self, like: Any, rate: float, training: Any) -> list[Any] | None:
        """One mask per gate when training (``training``, else the learning phase), ones
        otherwise; None when ``rate`` is 0."""
        if rate == 0.0:
            return None
        ones = array_ops.ones_like(like)

        def dropped() -> list[Any]:
            return [composite_ops.dropout(ones, rate=rate) for _ in range(self._GATES)]

        def kept() -> list[Any]:
            return [array_ops.identity(ones) for _ in range(self._GATES)]

        return list(smart_cond(training_value(training), dropped, kept))

    @property
    def state_size(self) -> Any:
        return self.units

    @property
    def output_size(self) -> int:
        return self.units


def _first_state(states: Any) -> Any:
    return states[0] if isinstance(states, (list, tuple)) else states


class SimpleRNNCell(_KerasCell):
    """``h = activation(x @ kernel + h_prev @ recurrent_kernel + bias)``."""

    def call(self, inputs: Any, states: Any, training: Any = None) -> tuple[Any, list[Any]]:
        h_prev = _first_state(states)
        input_masks, state_masks = self._masks(inputs, h_prev, training)
        (x_part,) = _add_bias(_gate_products(inputs, self.kernel, input_masks, 1, self.units),
                              self.bias)
        (h_part,) = _gate_products(h_prev, self.recurrent_kernel, state_masks, 1, self.units)
        h = self.activation(x_part + h_part)
        return h, [h]


class LSTMCell(_KerasCell):
    """The Keras LSTM step, gates i, f, c, o in that order along the weights' columns;
    ``unit_forget_bias`` starts the forget gate's bias at 1. The recurrent activation
    defaults to TF 1.15's 'hard_sigmoid' (TF2's LSTM uses 'sigmoid': pass it to match)."""

    _GATES = 4

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "hard_sigmoid", use_bias: bool = True,
                 unit_forget_bias: bool = True, implementation: int = 1, **kwargs: Any) -> None:
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self._config.update(recurrent_activation=recurrent_activation,
                            unit_forget_bias=unit_forget_bias, implementation=implementation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.implementation = _implementation(implementation)

    def _bias_init(self) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer
        units, base = self.units, self.bias_initializer

        def forget_bias_one(shape: Any, dtype: Any = None, partition_info: Any = None) -> Any:
            return array_ops.concat([base([units], dtype=dtype), array_ops.ones([units], dtype),
                                     base([2 * units], dtype=dtype)], 0)

        return forget_bias_one

    @property
    def state_size(self) -> list[int]:
        return [self.units, self.units]

    def call(self, inputs: Any, states: Any, training: Any = None) -> tuple[Any, list[Any]]:
        h_prev, c_prev = states
        input_masks, state_masks = self._masks(inputs, h_prev, training)
        x_i, x_f, x_c, x_o = _add_bias(
            _gate_products(inputs, self.kernel, input_masks, 4, self.units), self.bias)
        h_i, h_f, h_c, h_o = _gate_products(h_prev, self.recurrent_kernel, state_masks, 4,
                                            self.units)
        i = self.recurrent_activation(x_i + h_i)
        f = self.recurrent_activation(x_f + h_f)
        c = f * c_prev + i * self.activation(x_c + h_c)
        o = self.recurrent_activation(x_o + h_o)
        h = o * self.activation(c)
        return h, [h, c]


class GRUCell(_KerasCell):
    """The Keras GRU step, gates z, r, h in that order; ``h = z * h_prev + (1 - z) * h_cand``.
    ``reset_after=False`` (TF 1.15's default) applies the reset gate before the recurrent
    matmul, with one bias [3*units]; ``reset_after=True`` (TF2's default, cuDNN's form)
    applies it after, with an input and a recurrent bias, bias [2, 3*units]."""

    _GATES = 3

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "hard_sigmoid", use_bias: bool = True,
                 implementation: int = 1, reset_after: bool = False, **kwargs: Any) -> None:
        super().__init__(units, activation=activation, use_bias=use_bias, **kwargs)
        self._config.update(recurrent_activation=recurrent_activation,
                            implementation=implementation, reset_after=reset_after)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.implementation = _implementation(implementation)
        self.reset_after = bool(reset_after)

    def _bias_shape(self) -> list[int]:
        return [2, 3 * self.units] if self.reset_after else [3 * self.units]

    def call(self, inputs: Any, states: Any, training: Any = None) -> tuple[Any, list[Any]]:
        h_prev = _first_state(states)
        input_masks, state_masks = self._masks(inputs, h_prev, training)
        input_bias = recurrent_bias = None
        if self.bias is not None:
            input_bias, recurrent_bias = ((self.bias[0], self.bias[1]) if self.reset_after
                                          else (self.bias, None))
        x_z, x_r, x_h = _add_bias(
            _gate_products(inputs, self.kernel, input_masks, 3, self.units), input_bias)
        if self.reset_after:
            r_z, r_r, r_h = _add_bias(_gate_products(h_prev, self.recurrent_kernel, state_masks,
                                                     3, self.units), recurrent_bias)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            candidate = self.activation(x_h + r * r_h)
        else:
            width = 2 * self.units
            r_z, r_r = _gate_products(h_prev, self.recurrent_kernel[:, :width],
                                      None if state_masks is None else state_masks[:2], 2,
                                      self.units)
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            h_for_candidate = h_prev if state_masks is None else h_prev * state_masks[2]
            candidate = self.activation(
                x_h + math_ops.matmul(r * h_for_candidate, self.recurrent_kernel[:, width:]))
        h = z * h_prev + (1.0 - z) * candidate
        return h, [h]


def _implementation(mode: Any) -> int:
    """Keras's implementation 1 (many small matmuls) and 2 (few large ones) compute the same
    values; zmtf picks its own split, so both are accepted."""
    if mode not in (0, 1, 2):
        raise ValueError(f"implementation must be 1 or 2, got {mode!r}")
    return int(mode)


__all__ = ["GRUCell", "LSTMCell", "SimpleRNNCell"]

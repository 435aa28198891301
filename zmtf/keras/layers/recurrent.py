"""Keras recurrent layers in graph mode: ``RNN(cell)`` runs a cell over the time axis in a
tf.while_loop (so it runs in a Session, on a cluster, and has gradients through the loop),
and ``SimpleRNN``, ``LSTM``, ``GRU`` are RNN over the matching Keras cell. The cell's weights
are made in the layer's name scope, so they are named as TF 1.15 keras names them
("lstm/kernel:0", "lstm/recurrent_kernel:0", "lstm/bias:0")."""

from __future__ import annotations

import inspect
from typing import Any

from zmtf.framework import nest
from zmtf.framework.graph import Tensor
from zmtf.ops import array_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.image_ops import reverse
from zmtf.ops.selection_ops import gather
from zmtf.ops.while_ops import build_loop, loop_history
from zmtf.framework.tensor_shape import TensorShape
from zmtf.keras.base_layer import Layer
from zmtf.keras.layers.recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell

_MASKS_NOT_BUILT = ("keras masks (Masking, Embedding(mask_zero=True), mask=) are not built in "
                    "zmtf; pad sequences to one length, or use tf.nn.dynamic_rnn with "
                    "sequence_length")


def _state_sizes(cell: Any) -> list[int]:
    sizes = cell.state_size
    return [int(s) for s in (sizes if isinstance(sizes, (list, tuple)) else [sizes])]


class RNN(Layer):
    """Runs ``cell`` (an object with ``call(inputs, states)`` and ``state_size``, such as
    ``LSTMCell``) over inputs [batch, time, features] ([time, batch, features] when
    ``time_major``). Returns the last output, or every output with ``return_sequences``,
    followed by the final states with ``return_state``. ``go_backwards`` reads the sequence
    from its end and returns outputs in that (reversed) order, as Keras does. ``unroll`` is
    accepted and builds the same while loop (the values are the same)."""

    def __init__(self, cell: Any, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 time_major: bool = False, **kwargs: Any) -> None:
        if isinstance(cell, (list, tuple)):
            raise NotImplementedError("RNN over a list of cells (StackedRNNCells) is not built "
                                      "in zmtf; stack RNN layers with return_sequences=True")
        if not callable(getattr(cell, "call", None)):
            raise ValueError(f"`cell` should have a `call` method. The RNN was passed: {cell}")
        if not hasattr(cell, "state_size"):
            raise ValueError("The RNN cell should have an attribute `state_size` (tuple of "
                             "integers, one integer per RNN state).")
        if stateful:
            raise NotImplementedError("stateful keras RNNs are not built in zmtf; pass the "
                                      "previous final states as initial_state= instead")
        if "input_dim" in kwargs or "input_length" in kwargs:
            kwargs["input_shape"] = (kwargs.pop("input_length", None),
                                     kwargs.pop("input_dim", None))
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.time_major = bool(go_backwards), bool(time_major)
        self.stateful, self.unroll = False, bool(unroll)

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments, the cell as an object (Bidirectional copies it)."""
        return {"cell": self.cell, "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "unroll": self.unroll, "time_major": self.time_major, "name": self.name}

    # ---- weights: the cell's -------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        if input_shape.ndims is not None and input_shape.ndims != 3:
            raise ValueError(f"Input 0 of layer {self.name} is incompatible with the layer: "
                             f"expected ndim=3, found ndim={input_shape.ndims}. Full shape "
                             f"received: {input_shape}")
        dims = input_shape.as_list() if input_shape.ndims else [None, None, None]
        step_shape = TensorShape([dims[1] if self.time_major else dims[0], dims[2]])
        if isinstance(self.cell, Layer) and not self.cell.built:
            self.cell.dtype = self.cell.dtype or self.dtype
            self.cell.build(step_shape)
            self.cell.built = True
        self.built = True

    def _cell_weights(self, attribute: str) -> list[Any]:
        return list(getattr(self.cell, attribute, [])) if isinstance(self.cell, Layer) else []

    @property
    def trainable_weights(self) -> list[Any]:
        return self._cell_weights("trainable_weights") if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        if self.trainable:
            return self._cell_weights("non_trainable_weights")
        return self._cell_weights("trainable_weights") + self._cell_weights("non_trainable_weights")

    @property
    def losses(self) -> list[Any]:
        return list(self._losses) + self._cell_weights("losses")

    # ---- calling ----------------------------------------------------------------------
    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None, constants: Any = None) -> Any:
        if mask is not None:
            raise NotImplementedError(_MASKS_NOT_BUILT)
        if constants is not None:
            raise NotImplementedError("RNN(constants=...) is not built in zmtf")
        steps_first = inputs if self.time_major else array_ops.transpose(inputs, [1, 0, 2])
        if self.go_backwards:
            steps_first = reverse(steps_first, [0])
        states = self._initial_states(steps_first, initial_state)
        outputs, final_states = self._loop(steps_first, states, training)
        if self.return_sequences and not self.time_major:
            outputs = array_ops.transpose(outputs, [1, 0, 2])
        return [outputs] + final_states if self.return_state else outputs

    def _initial_states(self, steps_first: Tensor, initial_state: Any) -> list[Any]:
        sizes = _state_sizes(self.cell)
        if initial_state is not None:
            states = nest.flatten(initial_state)
            if len(states) != len(sizes):
                raise ValueError(f"Layer {self.name} expects {len(sizes)} initial state(s) "
                                 f"(cell.state_size={self.cell.state_size}), but it received "
                                 f"{len(states)} initial state(s).")
            return [convert_to_tensor(s, dtype=self.dtype) for s in states]
        return [self._zeros(steps_first, size) for size in sizes]

    def _zeros(self, steps_first: Tensor, size: int) -> Tensor:
        """Zeros [batch, size], the batch read at run time when it is not static."""
        batch = steps_first.shape.as_list()[1] if steps_first.shape.ndims else None
        dtype = self.dtype or steps_first.dtype
        if batch is None:
            return array_ops.zeros(array_ops.stack([array_ops.shape(steps_first)[1], size]), dtype)
        return array_ops.zeros([batch, size], dtype)

    def _step(self, step_input: Any, states: list[Any], training: Any) -> tuple[Any, list[Any]]:
        if "training" in inspect.signature(self.cell.call).parameters:
            output, new_states = self.cell.call(step_input, states, training=training)
        else:
            output, new_states = self.cell.call(step_input, states)
        new_states = nest.flatten(new_states)
        if len(new_states) != len(states):
            raise ValueError(f"{self.name}: the cell returned {len(new_states)} state(s) for "
                             f"its {len(states)} (cell.state_size={self.cell.state_size})")
        return output, new_states

    def _loop(self, steps_first: Tensor, states: list[Any], training: Any) -> tuple[Any, list[Any]]:
        """The while loop over time; returns (outputs [time, batch, units] or the last output,
        the final states)."""
        steps = array_ops.shape(steps_first)[0]
        prepare = getattr(self.cell, "prepare_masks", None)
        if prepare is not None:
            prepare(gather(steps_first, 0), states[0], training)
        try:
            output_size = getattr(self.cell, "output_size", _state_sizes(self.cell)[0])
            zero_output = self._zeros(steps_first, int(output_size))

            def body(t: Tensor, _output: Any, states: list[Any]) -> tuple[Any, ...]:
                output, new_states = self._step(gather(steps_first, t), states, training)
                return t + 1, output, new_states

            loop, pack = build_loop(lambda t, _o, _s: t < steps, body, [0, zero_output, states],
                                    name="while")
        finally:
            if prepare is not None:
                self.cell.release_masks()
        _, last_output, final_states = pack(list(loop.outputs[:len(loop._while_parts[1])]))
        if not self.return_sequences:
            return last_output, list(final_states)
        outputs = loop_history(loop, 1)
        static_time = steps_first.shape.as_list()[0] if steps_first.shape.ndims else None
        outputs.set_shape([static_time] + last_output.shape.as_list())
        return outputs, list(final_states)


_RNN_ARGUMENTS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
                  "time_major", "name", "trainable", "input_shape", "batch_input_shape",
                  "batch_size", "activity_regularizer", "weights", "input_dim", "input_length",
                  "autocast", "dynamic")


class _CellRNN(RNN):
    """An RNN layer that makes its own cell of ``_CELL`` from the cell's arguments."""

    _CELL: type = SimpleRNNCell

    def __init__(self, units: int, **kwargs: Any) -> None:
        self._config = {"units": units, **kwargs}
        layer_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in _RNN_ARGUMENTS}
        dtype = kwargs.pop("dtype", None)
        cell = self._CELL(units, dtype=dtype, trainable=layer_kwargs.get("trainable", True),
                          **kwargs)
        super().__init__(cell, dtype=dtype, **layer_kwargs)

    def get_config(self) -> dict[str, Any]:
        """The constructor's arguments (Bidirectional builds its backward copy from them)."""
        return {**self._config, "name": self.name}

    units = property(lambda self: self.cell.units)
    activation = property(lambda self: self.cell.activation)
    use_bias = property(lambda self: self.cell.use_bias)
    dropout = property(lambda self: self.cell.dropout)
    recurrent_dropout = property(lambda self: self.cell.recurrent_dropout)
    kernel = property(lambda self: self.cell.kernel)
    recurrent_kernel = property(lambda self: self.cell.recurrent_kernel)
    bias = property(lambda self: self.cell.bias)


class SimpleRNN(_CellRNN):
    """``RNN(SimpleRNNCell(units, ...))``: SimpleRNN(units, activation='tanh', use_bias=True,
    kernel_initializer='glorot_uniform', recurrent_initializer='orthogonal',
    bias_initializer='zeros', dropout=0., recurrent_dropout=0., return_sequences=False,
    return_state=False, go_backwards=False, time_major=False, ...)."""

    _CELL = SimpleRNNCell


class LSTM(_CellRNN):
    """``RNN(LSTMCell(units, ...))`` with TF 1.15's defaults (recurrent_activation=
    'hard_sigmoid', unit_forget_bias=True); weights kernel [in, 4*units], recurrent_kernel
    [units, 4*units], bias [4*units], gates i, f, c, o. Final states are [h, c]."""

    _CELL = LSTMCell
    recurrent_activation = property(lambda self: self.cell.recurrent_activation)
    unit_forget_bias = property(lambda self: self.cell.unit_forget_bias)


class GRU(_CellRNN):
    """``RNN(GRUCell(units, ...))`` with TF 1.15's defaults (recurrent_activation=
    'hard_sigmoid', reset_after=False); pass reset_after=True, recurrent_activation='sigmoid'
    for TF2's GRU. Gates z, r, h."""

    _CELL = GRUCell
    recurrent_activation = property(lambda self: self.cell.recurrent_activation)
    reset_after = property(lambda self: self.cell.reset_after)


__all__ = ["GRU", "LSTM", "RNN", "SimpleRNN"]

"""Keras layer wrappers in graph mode: ``TimeDistributed`` applies a layer to every time step
(by folding time into the batch), ``Bidirectional`` runs an RNN layer forwards and a copy of
it backwards and merges the two. Their weights are the wrapped layers', named as TF 1.15
keras names them ("time_distributed/kernel:0", "bidirectional/forward_lstm/kernel:0")."""

from __future__ import annotations

from typing import Any

from zmtf.ops import array_ops
from zmtf.ops.image_ops import reverse
from zmtf.framework.tensor_shape import TensorShape
from zmtf.keras.base_layer import Layer
from zmtf.keras.layers.recurrent import RNN


def _weights_of(layers: list[Layer], trainable: bool, attribute: str) -> list[Any]:
    """The wrapped layers' weights of one kind; a frozen wrapper's trainable weights count as
    non-trainable, as in Keras."""
    if attribute == "trainable_weights":
        return [w for layer in layers for w in layer.trainable_weights] if trainable else []
    own = [w for layer in layers for w in layer.non_trainable_weights]
    return own if trainable else [w for layer in layers for w in layer.trainable_weights] + own


class _Wrapper(Layer):
    def __init__(self, layer: Any, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `{type(self).__name__}` layer with a "
                             f"`Layer` instance. You passed: {layer}")
        super().__init__(**kwargs)
        self.layer = layer

    def _wrapped(self) -> list[Layer]:
        return [self.layer]

    @property
    def trainable_weights(self) -> list[Any]:
        return _weights_of(self._wrapped(), self.trainable, "trainable_weights")

    @property
    def non_trainable_weights(self) -> list[Any]:
        return _weights_of(self._wrapped(), self.trainable, "non_trainable_weights")

    @property
    def losses(self) -> list[Any]:
        return list(self._losses) + [loss for layer in self._wrapped() for loss in layer.losses]

    @property
    def updates(self) -> list[Any]:
        return list(self._updates) + [u for layer in self._wrapped() for u in layer.updates]


class TimeDistributed(_Wrapper):
    """Applies ``layer`` to each step of inputs [batch, time, ...]: the steps are folded into
    the batch ([batch * time, ...]), ``layer`` runs once, and the result is unfolded."""

    def build(self, input_shape: Any) -> None:
        if input_shape.ndims is not None and input_shape.ndims < 3:
            raise ValueError(f"`TimeDistributed` Layer should be passed an `input_shape ` with "
                             f"at least 3 dimensions, received: {input_shape}")
        if not self.layer.built:
            self.layer.dtype = self.layer.dtype or self.dtype
            self.layer.build(TensorShape([None] + input_shape.as_list()[2:]))
            self.layer.built = True
        self.built = True

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        if mask is not None:
            raise NotImplementedError("TimeDistributed(mask=...) is not built in zmtf (keras "
                                      "masks are not built)")
        dims = inputs.shape.as_list()
        inner = (array_ops.reshape(inputs, [-1] + dims[2:]) if None not in dims[2:] else
                 array_ops.reshape(inputs, array_ops.concat(
                     [[-1], array_ops.shape(inputs)[2:]], 0)))
        outputs = self.layer(inner, training=training)
        out_dims = outputs.shape.as_list()[1:]
        time = dims[1] if dims[1] is not None else array_ops.shape(inputs)[1]
        if isinstance(time, int) and None not in out_dims:
            return array_ops.reshape(outputs, [-1, time] + out_dims)
        folded = array_ops.reshape(outputs, array_ops.concat(
            [array_ops.stack([-1, time]), array_ops.shape(outputs)[1:]], 0))
        folded.set_shape([dims[0], dims[1]] + out_dims)
        return folded


_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


def _copy_rnn(layer: RNN, name: str, flip: bool) -> RNN:
    """A fresh, unbuilt copy of an RNN layer named ``name`` (reading backwards if ``flip``)."""
    if not hasattr(layer, "get_config"):
        raise ValueError(f"Bidirectional cannot copy {layer.name} ({type(layer).__name__}: no "
                         f"get_config); pass backward_layer= explicitly")
    config = {**layer.get_config(), "name": name}
    cell = config.get("cell")
    if cell is not None:
        if not hasattr(cell, "get_config"):
            raise ValueError(f"Bidirectional cannot copy the cell of {layer.name} "
                             f"({type(cell).__name__}: no get_config); pass backward_layer=")
        config["cell"] = type(cell)(**{**cell.get_config(), "name": None})
    if flip:
        config["go_backwards"] = not config.get("go_backwards", False)
    return type(layer)(**config)


class Bidirectional(_Wrapper):
    """Runs an RNN layer over the inputs forwards ("forward_<name>") and a copy of it
    backwards ("backward_<name>"), and merges their outputs with ``merge_mode`` ('concat',
    'sum', 'mul', 'ave', or None for the list [forward, backward]). With
    ``return_sequences`` the backward outputs are put back in time order first; with
    ``return_state`` the forward states follow the output, then the backward ones."""

    def __init__(self, layer: Any, merge_mode: str | None = "concat", weights: Any = None,
                 backward_layer: Any = None, **kwargs: Any) -> None:
        if not isinstance(layer, RNN):
            raise ValueError(f"Please initialize `Bidirectional` layer with a recurrent layer "
                             f"(SimpleRNN, LSTM, GRU, RNN). You passed: {layer}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should be "
                             f"one of {{'sum', 'mul', 'ave', 'concat', None}}")
        if weights is not None:
            raise NotImplementedError("Bidirectional(weights=...) is not built in zmtf; call "
                                      "set_weights after the layer is built")
        super().__init__(layer, **kwargs)
        self.forward_layer = _copy_rnn(layer, "forward_" + layer.name, flip=False)
        if backward_layer is None:
            backward_layer = _copy_rnn(layer, "backward_" + layer.name, flip=True)
        else:
            backward_layer.name = "backward_" + backward_layer.name
        self.backward_layer = backward_layer
        self.merge_mode = merge_mode
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state

    def _wrapped(self) -> list[Layer]:
        return [self.forward_layer, self.backward_layer]

    def call(self, inputs: Any, training: Any = None, mask: Any = None,
             initial_state: Any = None) -> Any:
        if mask is not None:
            raise NotImplementedError("Bidirectional(mask=...) is not built in zmtf (keras "
                                      "masks are not built)")
        forward_state = backward_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            forward_state, backward_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(inputs, training=training, initial_state=forward_state)
        y_rev = self.backward_layer(inputs, training=training, initial_state=backward_state)
        states: list[Any] = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = reverse(y_rev, [0 if self.forward_layer.time_major else 1])
        output = self._merge(y, y_rev)
        if not self.return_state:
            return output
        return (output if isinstance(output, list) else [output]) + states

    def _merge(self, y: Any, y_rev: Any) -> Any:
        if self.merge_mode == "concat":
            return array_ops.concat([y, y_rev], -1)
        if self.merge_mode == "sum":
            return y + y_rev
        if self.merge_mode == "ave":
            return (y + y_rev) / 2
        if self.merge_mode == "mul":
            return y * y_rev
        return [y, y_rev]


__all__ = ["Bidirectional", "TimeDistributed"]

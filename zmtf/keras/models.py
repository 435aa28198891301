"""``tf.keras.Input``, ``tf.keras.Sequential`` and the functional ``tf.keras.Model`` as graph
builders: calling a model on a tensor applies its layers (reusing their variables);
``compile``/``fit``/``evaluate``/``predict`` are not built in zmtf and say what to use instead."""

from __future__ import annotations

from typing import Any

from zmtf.framework import nest
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops
from zmtf.keras import backend
from zmtf.keras.base_layer import HISTORY, Layer, Node

_TRAINING_LOOP_HINT = ("zmtf builds keras models as graphs only: compute a loss on the model's "
                       "outputs, minimize it with a tf.train optimizer (run model.updates with "
                       "the train op), and run it in a tf.Session, tf.train."
                       "MonitoredTrainingSession or a tf.estimator.Estimator model_fn")


class InputLayer(Layer):
    """Holds the placeholder an ``Input`` made; its call returns that placeholder."""

    def __init__(self, input_shape: Any = None, batch_size: Any = None, dtype: Any = None,
                 input_tensor: Any = None, sparse: bool = False, name: str | None = None,
                 batch_input_shape: Any = None, **kwargs: Any) -> None:
        if sparse:
            raise NotImplementedError("sparse keras inputs are not built in zmtf")
        name = name or f"input_{backend.get_uid('input')}"
        super().__init__(name=name, dtype=dtype or backend.floatx(), input_shape=input_shape,
                         batch_size=batch_size, batch_input_shape=batch_input_shape, **kwargs)
        if input_tensor is None:
            with get_default_graph().name_scope(""):
                input_tensor = array_ops.placeholder(backend.dtype_of(self.dtype),
                                                     list(self._batch_input_shape or [None]),
                                                     name=self.name)
        self.input_tensor = input_tensor
        self.built = True
        HISTORY[input_tensor] = Node(self, None, {}, input_tensor)


def Input(shape: Any = None, batch_size: Any = None, name: str | None = None, dtype: Any = None,
          sparse: bool = False, tensor: Any = None, batch_shape: Any = None, **kwargs: Any) -> Any:
    """A placeholder [batch_size, *shape] ("input_1", "input_2", ... by default) that starts a
    functional model."""
    if shape is None and batch_shape is None and tensor is None:
        raise ValueError("Please provide to Input either a `shape` or a `tensor` argument. Note "
                         "that `shape` does not include the batch dimension.")
    layer = InputLayer(input_shape=shape, batch_size=batch_size, name=name, dtype=dtype,
                       sparse=sparse, input_tensor=tensor, batch_input_shape=batch_shape, **kwargs)
    return layer.input_tensor


class Model(Layer):
    """``Model(inputs, outputs)``: the layers between ``Input`` tensors and ``outputs``;
    ``model(x)`` replays them on ``x`` under the model's name scope."""

    def __init__(self, inputs: Any = None, outputs: Any = None, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self._layers: list[Layer] = []
        self.inputs, self.outputs = [], []
        if inputs is None and outputs is None:
            if type(self) is Model:
                raise NotImplementedError("subclassed keras Models (call() overrides) are not "
                                          "built in zmtf; pass inputs= and outputs=")
            return
        if inputs is None or outputs is None:
            raise ValueError("A functional Model needs both `inputs` and `outputs`")
        self._init_graph(inputs, outputs)

    def _init_graph(self, inputs: Any, outputs: Any) -> None:
        self._nested_inputs, self._nested_outputs = inputs, outputs
        self.inputs, self.outputs = nest.flatten(inputs), nest.flatten(outputs)
        self._nodes: list[Node] = []
        seen: set[int] = set()
        for out in self.outputs:
            self._trace(out, seen)
        self._layers = []
        for node in self._nodes:
            if node.layer not in self._layers:
                self._layers.append(node.layer)
        self.built = True

    def _trace(self, tensor: Any, seen: set[int]) -> None:
        if any(tensor is t for t in self.inputs):
            return
        node = HISTORY.get(tensor)
        if node is None or node.inputs is None:
            raise ValueError(f"Graph disconnected: cannot obtain value for tensor {tensor.name}: "
                             f"it is not an output of a keras layer reached from the model's "
                             f"inputs {[t.name for t in self.inputs]}")
        if id(node) in seen:
            return
        for upstream in nest.flatten(node.inputs):
            self._trace(upstream, seen)
        seen.add(id(node))
        self._nodes.append(node)

    # ---- calling ------------------------------------------------------------------------
    def call(self, inputs: Any, training: Any = None) -> Any:
        values = {id(t): v for t, v in zip(self.inputs, nest.flatten(inputs))}
        if len(values) != len(self.inputs):
            raise ValueError(f"Model {self.name} expects {len(self.inputs)} inputs, got "
                             f"{len(nest.flatten(inputs))}")
        for node in self._nodes:
            args = nest.map_structure(lambda t: values[id(t)], node.inputs)
            kwargs = dict(node.kwargs)
            if training is not None and node.layer._accepts("training"):
                kwargs["training"] = training
            outs = node.layer(args, **kwargs)
            for old, new in zip(nest.flatten(node.outputs), nest.flatten(outs)):
                values[id(old)] = new
        return nest.map_structure(lambda t: values[id(t)], self._nested_outputs)

    # ---- what the layers hold -----------------------------------------------------------
    @property
    def layers(self) -> list[Layer]:
        return [layer for layer in self._layers if not isinstance(layer, InputLayer)]

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        if index is not None:
            return self.layers[index]
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ValueError(f"No such layer: {name}")

    def _gather(self, attribute: str) -> list[Any]:
        gathered: list[Any] = []
        for layer in [self, *self.layers]:
            items = (getattr(Layer, attribute).fget(layer) if layer is self
                     else getattr(layer, attribute))
            gathered += [item for item in items if not any(item is g for g in gathered)]
        return gathered

    @property
    def trainable_weights(self) -> list[Any]:
        return self._gather("trainable_weights") if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        if not self.trainable:
            return self._gather("trainable_weights") + self._gather("non_trainable_weights")
        return self._gather("non_trainable_weights")

    @property
    def updates(self) -> list[Any]:
        return self._gather("updates")

    @property
    def losses(self) -> list[Any]:
        return self._gather("losses")

    def _tagged_updates(self) -> tuple[list[Any], list[list[Any]]]:
        updates: list[Any] = []
        tags: list[list[Any]] = []
        for layer in [self, *self.layers]:
            if layer is self:
                u, t = Layer._tagged_updates(self)
            else:
                u, t = layer._tagged_updates()
            updates += u
            tags += t
        return updates, tags

    # ---- the training loop keras would run: not built -----------------------------------
    def _not_built(self, what: str) -> Any:
        raise NotImplementedError(f"tf.keras Model.{what} is not built in zmtf. {_TRAINING_LOOP_HINT}")

    def compile(self, *args: Any, **kwargs: Any) -> None:
        self._not_built("compile")

    def fit(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_built("fit")

    def fit_generator(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_built("fit_generator")

    def evaluate(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_built("evaluate")

    def predict(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_built("predict")

    def train_on_batch(self, *args: Any, **kwargs: Any) -> Any:
        return self._not_built("train_on_batch")

    def save(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("tf.keras Model.save is not built in zmtf; save the variables "
                                  "with tf.train.Saver(model.variables)")

    save_weights = load_weights = save


class Sequential(Model):
    """A stack of layers, each called on the previous one's output. With an input shape on the
    first layer (or an ``InputLayer``) it is built at once, so variables are "dense/kernel:0";
    otherwise on its first call, inside its name scope ("sequential/dense/kernel:0")."""

    def __init__(self, layers: Any = None, name: str | None = None) -> None:
        super().__init__(name=name)
        self._stack: list[Layer] = []
        for layer in layers or []:
            self.add(layer)

    def add(self, layer: Any) -> None:
        if isinstance(layer, Tensor) and isinstance(getattr(HISTORY.get(layer), "layer", None), InputLayer):
            layer = HISTORY[layer].layer
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Found: {layer}")
        if isinstance(layer, InputLayer):
            if self._stack:
                raise ValueError("An InputLayer can only be the first layer of a Sequential model")
            self._stack.append(layer)
            self._init_graph(layer.input_tensor, layer.input_tensor)
            return
        self._stack.append(layer)
        if self.outputs:
            self._init_graph(self.inputs[0], layer(self.outputs[0]))
        elif len(self._stack) == 1 and layer._batch_input_shape is not None:
            start = Input(batch_shape=layer._batch_input_shape, dtype=layer.dtype,
                          name=f"{layer.name}_input")
            self._init_graph(start, layer(start))
        else:
            self._layers = list(self._stack)

    def pop(self) -> None:
        raise NotImplementedError("Sequential.pop is not built in zmtf")

    def call(self, inputs: Any, training: Any = None) -> Any:
        if self.outputs:
            return super().call(inputs, training)
        outputs = inputs
        for layer in self._stack:
            kwargs = {"training": training} if training is not None and layer._accepts("training") else {}
            outputs = layer(outputs, **kwargs)
        return outputs

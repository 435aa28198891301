"""The keras ``Layer`` in TF1 graph mode: a callable that makes its weights on the first call
(``build``) inside a name scope named after the layer ("dense", "dense_1", ... unique per
graph), so variables are "dense/kernel:0", and reuses them on later calls (ops then go under
"dense_1/", ... as TF1's name scopes do). Each call is recorded so a functional ``Model`` can
replay the layers on new inputs."""

from __future__ import annotations

import inspect
import math
import weakref
from typing import Any, Callable

from zmtf.framework import nest
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, cond_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.init_ops import Zeros
from zmtf.ops.variables import Variable
from zmtf.keras import backend, initializers, regularizers

#: output tensor -> the Node (a layer call) that made it; functional models trace these
HISTORY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
#: the inputs of the layer calls under way (a model's call, then its layers'): an update made
#: inside is tagged with all of them, so ``get_updates_for(x)`` finds it
_CALL_INPUTS: list[list[Any]] = []


class Node:
    """One call of a layer: its inputs (a nested structure of tensors), extra keyword
    arguments, and outputs."""

    def __init__(self, layer: Layer, inputs: Any, kwargs: dict[str, Any], outputs: Any) -> None:
        self.layer, self.inputs, self.kwargs, self.outputs = layer, inputs, kwargs, outputs


def _shapes(inputs: Any) -> Any:
    return nest.map_structure(lambda t: t.shape, inputs)


def smart_cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """A Python bool/int picks a branch now; a bool tensor builds a ``tf.cond``."""
    if isinstance(pred, (bool, int)):
        return true_fn() if pred else false_fn()
    return cond_ops.cond(convert_to_tensor(pred), true_fn, false_fn)


def training_value(training: Any) -> Any:
    """``training`` as given, else the graph's learning phase (0/1 or a bool placeholder)."""
    return backend.learning_phase() if training is None else training


class Layer:
    """Base of keras layers; subclasses define ``build(input_shape)`` and ``call(inputs)``."""

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 input_shape: Any = None, batch_input_shape: Any = None, batch_size: Any = None,
                 activity_regularizer: Any = None, **kwargs: Any) -> None:
        unknown = set(kwargs) - {"weights", "input_dim", "autocast", "dynamic"}
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]!r}")
        if "input_dim" in kwargs and input_shape is None:
            input_shape = (kwargs["input_dim"],)
        self.name = name or backend.unique_object_name(backend.to_snake_case(type(self).__name__))
        self.trainable = trainable
        self.dtype = None if dtype is None else backend.dtype_of(dtype).name
        self.built = False
        self.activity_regularizer = regularizers.get(activity_regularizer)
        if batch_input_shape is None and input_shape is not None:
            batch_input_shape = (batch_size, *tuple(input_shape))
        self._batch_input_shape = None if batch_input_shape is None else tuple(batch_input_shape)
        self._trainable_weights: list[Variable] = []
        self._non_trainable_weights: list[Variable] = []
        self._updates: list[Any] = []
        self._update_inputs: list[list[Any]] = []   # per update: the call inputs it was made under
        self._losses: list[Any] = []
        self._inbound_nodes: list[Node] = []

    # ---- to override ---------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        return inputs

    # ---- calling --------------------------------------------------------------------
    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        inputs = nest.map_structure(
            lambda t: t if isinstance(t, Tensor) else convert_to_tensor(t), inputs)
        if "training" in kwargs and not self._accepts("training"):
            kwargs.pop("training")
        _CALL_INPUTS.append(nest.flatten(inputs))
        try:
            with get_default_graph().name_scope(self.name):
                if not self.built:
                    self._maybe_build(inputs)
                outputs = self.call(inputs, *args, **kwargs)
                if self.activity_regularizer is not None:
                    self._add_activity_loss(outputs)
        finally:
            _CALL_INPUTS.pop()
        node = Node(self, inputs, dict(kwargs), outputs)
        self._inbound_nodes.append(node)
        for tensor in nest.flatten(outputs):
            if isinstance(tensor, Tensor):
                HISTORY[tensor] = node
        return outputs

    def _maybe_build(self, inputs: Any) -> None:
        if self.dtype is None:
            first = nest.flatten(inputs)[0]
            self.dtype = first.dtype.name if first.dtype.is_floating else backend.floatx()
        self.build(_shapes(inputs))
        self.built = True

    def _accepts(self, argument: str) -> bool:
        return argument in inspect.signature(self.call).parameters

    def _add_activity_loss(self, outputs: Any) -> None:
        with get_default_graph().name_scope("ActivityRegularizer"):
            for out in nest.flatten(outputs):
                loss = self.activity_regularizer(out)
                batch = math_ops.cast(array_ops.shape(out)[0], loss.dtype)
                self._losses.append(loss / batch)

    # ---- weights ---------------------------------------------------------------------
    def add_weight(self, name: str, shape: Any = None, dtype: Any = None, initializer: Any = None,
                   regularizer: Any = None, trainable: bool = True, constraint: Any = None,
                   **_unused: Any) -> Variable:
        """A variable "<scope>/<layer>/<name>" (glorot_uniform by default for floats, zeros
        otherwise); its regularizer's penalty joins ``layer.losses``."""
        if constraint is not None:
            raise NotImplementedError("keras weight constraints are not built in zmtf")
        dt = backend.dtype_of(dtype or self.dtype)
        init = initializers.get(initializer)
        if init is None:
            init = initializers.glorot_uniform() if dt.is_floating else Zeros()
        dims = [int(d) for d in (shape or [])]
        trainable = bool(trainable and self.trainable)
        variable = Variable(lambda: init(dims, dtype=dt), name=name, trainable=trainable, dtype=dt)
        (self._trainable_weights if trainable else self._non_trainable_weights).append(variable)
        regularizer = regularizers.get(regularizer)
        if regularizer is not None:
            with get_default_graph().name_scope(f"{name}/Regularizer"):
                self._losses.append(regularizer(variable.value()))
        return variable

    add_variable = add_weight

    def add_update(self, updates: Any, inputs: Any = None) -> None:
        tags = [t for call in _CALL_INPUTS for t in call]
        for update in nest.flatten(updates):
            self._updates.append(update)
            self._update_inputs.append(tags)

    def get_updates_for(self, inputs: Any) -> list[Any]:
        """The updates made by calls on ``inputs`` (a model's call included)."""
        wanted = nest.flatten(inputs)
        return [u for u, tags in zip(*self._tagged_updates())
                if any(t is w for t in tags for w in wanted)]

    def _tagged_updates(self) -> tuple[list[Any], list[list[Any]]]:
        return self._updates, self._update_inputs

    def add_loss(self, losses: Any, inputs: Any = None) -> None:
        self._losses.extend(nest.flatten(losses))

    @property
    def trainable_weights(self) -> list[Variable]:
        return list(self._trainable_weights) if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Variable]:
        if self.trainable:
            return list(self._non_trainable_weights)
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self) -> list[Variable]:
        return self.trainable_weights + self.non_trainable_weights

    # the TF2-style names, resolved on the instance so a Model's overrides apply
    variables = property(lambda self: self.weights)
    trainable_variables = property(lambda self: self.trainable_weights)
    non_trainable_variables = property(lambda self: self.non_trainable_weights)

    @property
    def updates(self) -> list[Any]:
        return list(self._updates)

    @property
    def losses(self) -> list[Any]:
        return list(self._losses)

    def count_params(self) -> int:
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on {self.name}, but the layer "
                             f"isn't built. Call it on an input first.")
        return sum(math.prod(v.shape.as_list()) for v in self.weights)

    def get_weights(self) -> list[Any]:
        """The weights' values, read with ``tf.keras.backend.get_session()``."""
        return backend.get_session().run(self.weights)

    def set_weights(self, values: list[Any]) -> None:
        if len(values) != len(self.weights):
            raise ValueError(f"You called `set_weights(weights)` on layer {self.name!r} with a "
                             f"weight list of length {len(values)}, but the layer was expecting "
                             f"{len(self.weights)} weights.")
        session = backend.get_session()
        for variable, value in zip(self.weights, values):
            variable.load(value, session)

    # ---- history -----------------------------------------------------------------------
    def _only_node(self, what: str) -> Node:
        if len(self._inbound_nodes) != 1:
            raise AttributeError(f"Layer {self.name} has {len(self._inbound_nodes)} inbound "
                                 f"nodes; `layer.{what}` needs exactly one call")
        return self._inbound_nodes[0]

    @property
    def input(self) -> Any:
        return self._only_node("input").inputs

    @property
    def output(self) -> Any:
        return self._only_node("output").outputs

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__name__} name={self.name}>"

"""``AttentionWrapper``: a cell that attends over an encoder's memory at every step.

Each step feeds ``concat([inputs, previous attention])`` to the wrapped cell, scores the
cell output against the memory (the mechanism's alignments), takes the alignment-weighted
sum of the memory (the context) and, with ``attention_layer_size``, projects
``concat([cell_output, context])`` through "attention_layer/kernel" to get the attention.
The state is an ``AttentionWrapperState``; start from ``zero_state(batch, dtype)``, or
``.clone(cell_state=encoder_state)`` of it. Follows TF1's tf.contrib.seq2seq (one or
several mechanisms, ``alignment_history`` in a TensorArray)."""

from __future__ import annotations

import collections
from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.graph import get_default_graph
from zmtf.framework.nest import flatten, map_structure
from zmtf.ops import array_ops, math_ops
from zmtf.ops.check_ops import assert_equal
from zmtf.ops.rnn_cell import RNNCell, zero_state_part, assert_like_rnncell
from zmtf.ops.tensor_array_ops import TensorArray
from zmtf.framework.tensor_shape import TensorShape
from zmtf.ops.layers import Dense


class AttentionWrapperState(collections.namedtuple(
        "AttentionWrapperState", ("cell_state", "attention", "time", "alignments",
                                  "alignment_history", "attention_state"))):
    """The wrapper's state: the wrapped cell's state, the last attention [batch, size], the
    step count, the last alignments (one per mechanism), their history (TensorArrays, or
    () when not kept) and the mechanisms' own states."""

    def clone(self, **kwargs: Any) -> "AttentionWrapperState":
        """A copy with the given fields replaced (as TF1, e.g. ``cell_state=encoder_state``);
        a replaced tensor takes the static shape of the one it replaces."""
        def with_same_shape(old: Any, new: Any) -> Any:
            if hasattr(old, "shape") and hasattr(new, "set_shape") and \
                    not isinstance(new, TensorArray):
                new.set_shape(old.shape)
            return new

        replaced = self._replace(**kwargs)
        return map_structure(with_same_shape, self, replaced)


def _concat_inputs(inputs: Any, attention: Any) -> Any:
    return array_ops.concat([inputs, attention], -1)


def _compute_attention(mechanism: Any, cell_output: Any, attention_state: Any,
                       attention_layer: Any) -> tuple[Any, Any, Any]:
    alignments, next_state = mechanism(cell_output, state=attention_state)
    context = math_ops.matmul(array_ops.expand_dims(alignments, 1), mechanism.values)
    context = array_ops.squeeze(context, [1])
    if attention_layer is None:
        return context, alignments, next_state
    return attention_layer(array_ops.concat([cell_output, context], 1)), alignments, next_state


class AttentionWrapper(RNNCell):
    """Wrap ``cell`` with ``attention_mechanism`` (one or a list/tuple of them)."""

    def __init__(self, cell: Any, attention_mechanism: Any, attention_layer_size: Any = None,
                 alignment_history: bool = False,
                 cell_input_fn: Callable[[Any, Any], Any] | None = None,
                 output_attention: bool = True, initial_cell_state: Any = None,
                 name: str | None = None, attention_layer: Any = None) -> None:
        super().__init__(name=name)
        assert_like_rnncell("cell", cell)
        self._is_multi = isinstance(attention_mechanism, (list, tuple))
        mechanisms = list(attention_mechanism) if self._is_multi else [attention_mechanism]
        if not mechanisms:
            raise ValueError("attention_mechanism must contain at least one mechanism")
        if cell_input_fn is not None and not callable(cell_input_fn):
            raise TypeError(f"cell_input_fn must be callable, saw type: "
                            f"{type(cell_input_fn).__name__}")
        if attention_layer_size is not None and attention_layer is not None:
            raise ValueError("Only one of attention_layer_size and attention_layer should be "
                             "set")
        self._layers = self._attention_layers(mechanisms, attention_layer_size, attention_layer)
        if self._layers is None:
            self._attention_size = sum(m.values.shape.as_list()[-1] for m in mechanisms)
        else:
            self._attention_size = sum(layer.units for layer in self._layers)
        self._cell, self._mechanisms = cell, mechanisms
        self._cell_input_fn = cell_input_fn or _concat_inputs
        self._output_attention = output_attention
        self._alignment_history = alignment_history
        self._initial_cell_state = None if initial_cell_state is None else map_structure(
            lambda s: array_ops.identity(s, name="check_initial_cell_state"), initial_cell_state)

    def _attention_layers(self, mechanisms: list, size: Any, layer: Any) -> list | None:
        if layer is not None:
            layers = list(layer) if isinstance(layer, (list, tuple)) else [layer]
        elif size is not None:
            sizes = list(size) if isinstance(size, (list, tuple)) else [size]
            layers = [Dense(s, name="attention_layer", use_bias=False) for s in sizes]
        else:
            return None
        if len(layers) != len(mechanisms):
            raise ValueError(f"If provided, attention_layer_size must contain exactly one integer "
                             f"per attention_mechanism, saw: {len(layers)} vs "
                             f"{len(mechanisms)}")
        return layers

    def _item_or_tuple(self, items: list) -> Any:
        return tuple(items) if self._is_multi else items[0]

    @property
    def output_size(self) -> Any:
        return self._attention_size if self._output_attention else self._cell.output_size

    @property
    def state_size(self) -> AttentionWrapperState:
        sizes = [m.alignments_size for m in self._mechanisms]
        return AttentionWrapperState(
            cell_state=self._cell.state_size, time=TensorShape([]),
            attention=self._attention_size, alignments=self._item_or_tuple(sizes),
            attention_state=self._item_or_tuple([m.state_size for m in self._mechanisms]),
            alignment_history=self._item_or_tuple(sizes) if self._alignment_history else ())

    @property
    def variables(self) -> list[Any]:
        own = [v for layer in self._layers or [] for v in layer.variables]
        return list(self._cell.variables) + own + super().variables

    def _batch_checks(self, batch_size: Any, message: str) -> list:
        return [assert_equal(batch_size, m.batch_size, message=message) for m in self._mechanisms]

    def zero_state(self, batch_size: Any, dtype: Any) -> AttentionWrapperState:
        """The start state: the cell's zero state (or ``initial_cell_state``), zero
        attention and alignments, time 0, empty alignment histories."""
        graph = get_default_graph()
        with graph.name_scope(type(self).__name__ + "ZeroState"):
            cell_state = self._initial_cell_state if self._initial_cell_state is not None \
                else self._cell.zero_state(batch_size, dtype)
            message = (f"When calling zero_state of AttentionWrapper {self._base_name}: "
                       f"Non-matching batch sizes between the memory (encoder output) and the "
                       f"requested batch size. Are you using the BeamSearchDecoder? If so, make "
                       f"sure your encoder output has been tiled to beam_width via "
                       f"tf.contrib.seq2seq.tile_batch, and the batch_size= argument passed to "
                       f"zero_state is batch_size * beam_width.")
            with graph.control_dependencies(self._batch_checks(batch_size, message)):
                cell_state = map_structure(
                    lambda s: array_ops.identity(s, name="checked_cell_state"), cell_state)
            alignments = [m.initial_alignments(batch_size, dtype) for m in self._mechanisms]
            return AttentionWrapperState(
                cell_state=cell_state, time=array_ops.zeros([], dtypes.int32),
                attention=zero_state_part(batch_size, self._attention_size, dtype),
                alignments=self._item_or_tuple(alignments),
                attention_state=self._item_or_tuple(
                    [m.initial_state(batch_size, dtype) for m in self._mechanisms]),
                alignment_history=self._item_or_tuple(
                    [TensorArray(dtype, size=0, dynamic_size=True, element_shape=a.shape)
                     for a in alignments]) if self._alignment_history else ())

    def __call__(self, inputs: Any, state: Any, scope: Any = None) -> tuple[Any, Any]:
        if not isinstance(state, AttentionWrapperState):
            raise TypeError(f"Expected state to be instance of AttentionWrapperState. Received "
                            f"type {type(state)} instead.")
        with self._entered(scope):
            self.built = True
            return self.call(inputs, state)

    def call(self, inputs: Any, state: Any) -> tuple[Any, Any]:
        cell_inputs = self._cell_input_fn(inputs, state.attention)
        cell_output, next_cell_state = self._cell(cell_inputs, state.cell_state)
        batch = cell_output.shape.as_list()[0] if cell_output.shape.ndims else None
        message = (f"When applying AttentionWrapper {self._base_name}: Non-matching batch sizes "
                   f"between the memory (encoder output) and the query (decoder output).  Are "
                   f"you using the BeamSearchDecoder?  You may need to tile your memory input "
                   f"via the tf.contrib.seq2seq.tile_batch function with argument multiple="
                   f"beam_width.")
        batch = batch if batch is not None else array_ops.shape(cell_output)[0]
        with get_default_graph().control_dependencies(self._batch_checks(batch, message)):
            cell_output = array_ops.identity(cell_output, name="checked_cell_output")
        previous_states = flatten(state.attention_state) if self._is_multi else \
            [state.attention_state]
        histories = list(state.alignment_history) if self._is_multi else \
            [state.alignment_history]
        attentions, alignments, states, next_histories = [], [], [], []
        for i, mechanism in enumerate(self._mechanisms):
            layer = self._layers[i] if self._layers else None
            attention, alignment, next_state = _compute_attention(
                mechanism, cell_output, previous_states[i], layer)
            attentions.append(attention)
            alignments.append(alignment)
            states.append(next_state)
            next_histories.append(histories[i].write(state.time, alignment)
                                  if self._alignment_history else ())
        attention = array_ops.concat(attentions, 1)
        next_state = AttentionWrapperState(
            time=state.time + 1, cell_state=next_cell_state, attention=attention,
            attention_state=self._item_or_tuple(states),
            alignments=self._item_or_tuple(alignments),
            alignment_history=self._item_or_tuple(next_histories)
            if self._alignment_history else ())
        return (attention if self._output_attention else cell_output), next_state


__all__ = ["AttentionWrapper", "AttentionWrapperState"]

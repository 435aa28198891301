"""``BasicDecoder``: one cell step per decode step, an optional output layer (projection
to the vocabulary), and a Helper that picks the sample ids and the next inputs."""

from __future__ import annotations

import collections
from typing import Any

from zmtf.contrib.seq2seq.decoder import Decoder
from zmtf.contrib.seq2seq.helper import Helper
from zmtf.framework.graph import get_default_graph
from zmtf.framework.nest import flatten, map_structure
from zmtf.ops.rnn_cell import assert_like_rnncell
from zmtf.framework.tensor_shape import TensorShape, as_shape


class BasicDecoderOutput(collections.namedtuple("BasicDecoderOutput",
                                                ("rnn_output", "sample_id"))):
    """One decode step's output: the (projected) cell output and the helper's sample ids."""


class BasicDecoder(Decoder):
    """Decode with ``cell`` from ``initial_state``, as ``helper`` directs; ``output_layer``
    (e.g. a tf.layers.Dense) maps each cell output before sampling."""

    def __init__(self, cell: Any, helper: Helper, initial_state: Any,
                 output_layer: Any = None) -> None:
        assert_like_rnncell("cell", cell)
        if not isinstance(helper, Helper):
            raise TypeError(f"helper must be a Helper, received: {type(helper)}")
        if output_layer is not None and not (callable(output_layer) and
                                             hasattr(output_layer, "compute_output_shape")):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer)}")
        self._cell, self._helper = cell, helper
        self._initial_state = initial_state
        self._output_layer = output_layer

    @property
    def batch_size(self) -> Any:
        return self._helper.batch_size

    def _rnn_output_size(self) -> Any:
        size = self._cell.output_size
        if self._output_layer is None:
            return size
        return map_structure(
            lambda s: self._output_layer.compute_output_shape(
                TensorShape([None]).concatenate(as_shape(s)))[1:], size)

    @property
    def output_size(self) -> BasicDecoderOutput:
        return BasicDecoderOutput(self._rnn_output_size(), self._helper.sample_ids_shape)

    @property
    def output_dtype(self) -> BasicDecoderOutput:
        dtype = flatten(self._initial_state)[0].dtype
        return BasicDecoderOutput(map_structure(lambda _: dtype, self._rnn_output_size()),
                                  self._helper.sample_ids_dtype)

    def initialize(self, name: str | None = None) -> tuple[Any, Any, Any]:
        return tuple(self._helper.initialize()) + (self._initial_state,)

    def step(self, time: Any, inputs: Any, state: Any, name: str | None = None) -> tuple:
        with get_default_graph().name_scope(name or "BasicDecoderStep"):
            cell_outputs, cell_state = self._cell(inputs, state)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            sample_ids = self._helper.sample(time=time, outputs=cell_outputs, state=cell_state)
            finished, next_inputs, next_state = self._helper.next_inputs(
                time=time, outputs=cell_outputs, state=cell_state, sample_ids=sample_ids)
        return BasicDecoderOutput(cell_outputs, sample_ids), next_state, next_inputs, finished


__all__ = ["BasicDecoder", "BasicDecoderOutput"]

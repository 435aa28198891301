"""``BeamSearchDecoder`` and ``tile_batch``: TF1's beam search for inference.

The decoder keeps ``beam_width`` hypotheses per batch entry. Its cell runs on
[batch * beam_width, ...] tensors (so an encoder's memory and state must be tiled with
``tile_batch``, and an AttentionWrapper's zero_state taken for batch * beam_width); the
beam bookkeeping works on [batch, beam_width, ...]. At the start only beam 0 is live, so
the first step does not pick the same word beam_width times. ``finalize`` follows the
parent pointers back (``gather_tree``) to give ``FinalBeamSearchDecoderOutput.predicted_ids``
[time, batch, beam] (batch-major after dynamic_decode), best beam first."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from zmtf.contrib.seq2seq.beam_search_step import (
    BeamSearchDecoderOutput, BeamSearchDecoderState, attention_probs, beam_search_step,
    static_value,
)
from zmtf.contrib.seq2seq.beam_tensor_arrays import sort_array_beams
from zmtf.contrib.seq2seq.decoder import Decoder
from zmtf.framework import dtypes
from zmtf.framework.graph import get_default_graph
from zmtf.framework.nest import flatten, map_structure
from zmtf.ops import array_ops, math_ops
from zmtf.ops.cond_ops import cond
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.embedding_ops import embedding_lookup
from zmtf.ops.gather_tree_ops import gather_tree
from zmtf.ops.rnn_cell import assert_like_rnncell
from zmtf.ops.selection_ops import tile
from zmtf.ops.tensor_array_ops import TensorArray
from zmtf.framework.tensor_shape import TensorShape, as_shape


class FinalBeamSearchDecoderOutput(collections.namedtuple(
        "FinalBeamDecoderOutput", ("predicted_ids", "beam_search_decoder_output"))):
    """What dynamic_decode returns: the backtracked ids and the per-step outputs."""


def _tile_one(t: Any, multiplier: int) -> Any:
    t = convert_to_tensor(t, name="t")
    if t.shape.ndims is None or t.shape.ndims < 1:
        raise ValueError("t must have statically known rank")
    batch = t.shape.as_list()[0]
    shape = array_ops.shape(t)
    tiled = tile(array_ops.expand_dims(t, 1), [1, multiplier] + [1] * (t.shape.ndims - 1))
    tiled = array_ops.reshape(tiled, array_ops.concat(
        [array_ops.reshape(shape[0] * multiplier, [1]), shape[1:]], 0))
    tiled.set_shape(TensorShape([None if batch is None else batch * multiplier])
                    .concatenate(t.shape[1:]))
    return tiled


def tile_batch(t: Any, multiplier: int, name: str | None = None) -> Any:
    """Repeat each batch entry ``multiplier`` times in place: [b0, b0, ..., b1, b1, ...],
    shape [batch * multiplier, ...]; ``t`` may be a nest of tensors (TensorArrays are
    refused, as in TF)."""
    for leaf in flatten(t):
        if isinstance(leaf, TensorArray):
            raise TypeError("tile_batch does not support TensorArrays in t; tile the tensors "
                            "before they are written to it")
    with get_default_graph().name_scope(name or "tile_batch"):
        return map_structure(lambda leaf: _tile_one(leaf, multiplier), t)


class BeamSearchDecoder(Decoder):
    """Beam search with ``cell`` (an RNNCell whose batch is batch * beam_width) from
    ``initial_state``, embedding each chosen id with ``embedding`` (params or a callable),
    starting from ``start_tokens`` [batch] and stopping a beam at ``end_token``."""

    def __init__(self, cell: Any, embedding: Any, start_tokens: Any, end_token: Any,
                 initial_state: Any, beam_width: int, output_layer: Any = None,
                 length_penalty_weight: Any = 0.0, coverage_penalty_weight: Any = 0.0,
                 reorder_tensor_arrays: bool = True) -> None:
        assert_like_rnncell("cell", cell)
        if output_layer is not None and not (callable(output_layer) and
                                             hasattr(output_layer, "compute_output_shape")):
            raise TypeError(f"output_layer must be a Layer, received: {type(output_layer)}")
        if not isinstance(beam_width, (int, np.integer)) or beam_width < 1:
            raise ValueError(f"beam_width must be a Python int >= 1, got {beam_width!r}")
        self._cell, self._output_layer = cell, output_layer
        self._reorder_tensor_arrays = reorder_tensor_arrays
        self._embedding_fn = embedding if callable(embedding) else \
            (lambda ids: embedding_lookup(embedding, ids))
        start_tokens = convert_to_tensor(start_tokens, dtype=dtypes.int32, name="start_tokens")
        if start_tokens.shape.ndims != 1:
            raise ValueError("start_tokens must be a vector")
        self._end_token = convert_to_tensor(end_token, dtype=dtypes.int32, name="end_token")
        if self._end_token.shape.ndims != 0:
            raise ValueError("end_token must be a scalar")
        static_batch = start_tokens.shape.as_list()[0]
        self._batch_size = static_batch if static_batch is not None else \
            array_ops.size(start_tokens)
        self._beam_width = int(beam_width)
        self._length_penalty_weight = length_penalty_weight
        self._coverage_penalty_weight = coverage_penalty_weight
        self._initial_cell_state = map_structure(self._maybe_split_batch_beams, initial_state,
                                                 self._cell.state_size)
        self._start_tokens = tile(array_ops.expand_dims(start_tokens, 1), [1, self._beam_width])
        self._start_inputs = self._embedding_fn(self._start_tokens)
        self._finished = array_ops.one_hot(array_ops.zeros(self._batch_vector(), dtypes.int32),
                                           depth=self._beam_width, on_value=False,
                                           off_value=True, dtype=dtypes.bool_)
        self._finished.set_shape(self._static_batch_beam())

    def _batch_vector(self) -> Any:
        if isinstance(self._batch_size, int):
            return [self._batch_size]
        return array_ops.reshape(self._batch_size, [1])

    def _static_batch_beam(self) -> TensorShape:
        return TensorShape([static_value(self._batch_size), self._beam_width])

    def _batch_beam_shape(self) -> Any:
        if isinstance(self._batch_size, int):
            return [self._batch_size, self._beam_width]
        return array_ops.stack([self._batch_size, self._beam_width])

    @property
    def batch_size(self) -> Any:
        return self._batch_size

    @property
    def tracks_own_finished(self) -> bool:
        """True: the beams (and their finished flags) are reordered every step."""
        return True

    @property
    def output_size(self) -> BeamSearchDecoderOutput:
        beams = TensorShape([self._beam_width])
        return BeamSearchDecoderOutput(scores=beams, predicted_ids=beams, parent_ids=beams)

    @property
    def output_dtype(self) -> BeamSearchDecoderOutput:
        dtype = flatten(self._initial_cell_state)[0].dtype
        return BeamSearchDecoderOutput(scores=dtype, predicted_ids=dtypes.int32,
                                       parent_ids=dtypes.int32)

    def initialize(self, name: str | None = None) -> tuple[Any, Any, Any]:
        """``(finished, start_inputs, initial_state)``: beam 0 live with log probability 0,
        the others finished at -inf so the first step expands beam 0 only."""
        dtype = flatten(self._initial_cell_state)[0].dtype
        log_probs = array_ops.one_hot(array_ops.zeros(self._batch_vector(), dtypes.int32),
                                      depth=self._beam_width, on_value=0.0,
                                      off_value=-np.inf, dtype=dtype)
        lengths = array_ops.zeros(self._batch_beam_shape(), dtypes.int64)
        for t in (log_probs, lengths):
            t.set_shape(self._static_batch_beam())
        probs = attention_probs(self._initial_cell_state, self._coverage_penalty_weight)
        state = BeamSearchDecoderState(
            cell_state=self._initial_cell_state, log_probs=log_probs, finished=self._finished,
            lengths=lengths,
            accumulated_attention_probs=() if probs is None else probs)
        return self._finished, self._start_inputs, state

    def _split_batch_beams(self, t: Any, s: Any) -> Any:
        """[batch * beam, ...] -> [batch, beam, ...]."""
        shape = array_ops.shape(t)
        split = array_ops.reshape(t, array_ops.concat(
            [array_ops.reshape(convert_to_tensor(self._batch_size), [1]), [self._beam_width],
             shape[1:]], 0))
        expected = TensorShape([static_value(self._batch_size), self._beam_width]).concatenate(
            as_shape(s))
        if not split.shape.is_compatible_with(expected):
            raise ValueError(f"Unexpected behavior when reshaping between beam width and batch "
                             f"size.  The reshaped tensor has shape: {split.shape}.  We expected "
                             f"it to have shape (batch_size, beam_width, depth) == {expected}.  "
                             f"Perhaps you forgot to create a zero_state with "
                             f"batch_size=encoder_batch_size * beam_width?")
        if t.shape.ndims is not None:
            static = t.shape.as_list()[0]
            batch = static_value(self._batch_size)
            if static is not None and batch is not None and static != batch * self._beam_width:
                raise ValueError(f"Unexpected behavior when reshaping between beam width and "
                                 f"batch size.  The tensor {t.name} has shape {t.shape}, "
                                 f"expected batch_size * beam_width == {batch} * "
                                 f"{self._beam_width} rows.  Perhaps you forgot to create a "
                                 f"zero_state with batch_size=encoder_batch_size * beam_width?")
        split.set_shape(expected)
        return split

    def _merge_batch_beams(self, t: Any, s: Any) -> Any:
        """[batch, beam, ...] -> [batch * beam, ...]."""
        shape = array_ops.shape(t)
        merged = array_ops.reshape(t, array_ops.concat([[-1], shape[2:]], 0))
        batch = static_value(self._batch_size)
        merged.set_shape(TensorShape([None if batch is None else batch * self._beam_width])
                         .concatenate(as_shape(s)))
        return merged

    def _checked_rank(self, t: Any) -> int | None:
        if isinstance(t, TensorArray):
            return None
        if t.shape.ndims is None:
            raise ValueError(f"Expected tensor ({t.name}) to have known rank, but ndims == None.")
        return t.shape.ndims

    def _maybe_split_batch_beams(self, t: Any, s: Any) -> Any:
        rank = self._checked_rank(t)
        return t if rank is None or rank < 1 else self._split_batch_beams(t, s)

    def _maybe_merge_batch_beams(self, t: Any, s: Any) -> Any:
        rank = self._checked_rank(t)
        return t if rank is None or rank < 2 else self._merge_batch_beams(t, s)

    def step(self, time: Any, inputs: Any, state: BeamSearchDecoderState,
             name: str | None = None) -> tuple:
        """One beam step: run the cell on every beam, keep the best beam_width extensions."""
        with get_default_graph().name_scope(name or "BeamSearchDecoderStep"):
            merged_inputs = map_structure(lambda x: self._merge_batch_beams(x, x.shape[2:]),
                                          inputs)
            cell_state = map_structure(self._maybe_merge_batch_beams, state.cell_state,
                                       self._cell.state_size)
            cell_outputs, next_cell_state = self._cell(merged_inputs, cell_state)
            cell_outputs = map_structure(lambda x: self._split_batch_beams(x, x.shape[1:]),
                                         cell_outputs)
            next_cell_state = map_structure(self._maybe_split_batch_beams, next_cell_state,
                                            self._cell.state_size)
            if self._output_layer is not None:
                cell_outputs = self._output_layer(cell_outputs)
            output, next_state = beam_search_step(
                time, cell_outputs, next_cell_state, state, self._batch_size, self._beam_width,
                self._end_token, self._length_penalty_weight, self._coverage_penalty_weight)
            finished = next_state.finished
            next_inputs = cond(math_ops.reduce_all(finished), lambda: self._start_inputs,
                               lambda: self._embedding_fn(output.predicted_ids))
        return output, next_state, next_inputs, finished

    def finalize(self, outputs: BeamSearchDecoderOutput, final_state: BeamSearchDecoderState,
                 sequence_lengths: Any) -> tuple[FinalBeamSearchDecoderOutput, Any]:
        """Backtrack the time-major ``outputs`` into whole beams; with
        ``reorder_tensor_arrays`` the cell state's TensorArrays (e.g. an alignment history)
        are stacked and put in the same beam order."""
        max_lengths = math_ops.cast(math_ops.reduce_max(final_state.lengths, axis=1),
                                    dtypes.int32)
        predicted_ids = gather_tree(outputs.predicted_ids, outputs.parent_ids,
                                    max_sequence_lengths=max_lengths,
                                    end_token=self._end_token)
        if self._reorder_tensor_arrays:
            final_state = final_state._replace(cell_state=map_structure(
                lambda t: sort_array_beams(t, outputs.parent_ids, final_state.lengths,
                                           self._batch_size, self._beam_width),
                final_state.cell_state))
        return FinalBeamSearchDecoderOutput(predicted_ids=predicted_ids,
                                            beam_search_decoder_output=outputs), final_state


__all__ = ["BeamSearchDecoder", "BeamSearchDecoderOutput", "BeamSearchDecoderState",
           "FinalBeamSearchDecoderOutput", "tile_batch"]

"""One step of TF1's beam search, as pure graph functions of [batch, beam, ...] tensors.

Each live beam adds the log-softmax of its logits to its running log probability; a
finished beam may only emit ``end_token`` at no cost. The scores (log probability over a
GNMT length penalty ``((5 + length) / 6) ** weight``, plus an optional coverage penalty for
finished beams) of all ``beam * vocab`` continuations are ranked per batch entry and the
best ``beam_width`` kept: each keeps its word id and the beam it came from (its parent),
whose cell state, length and finished flag it inherits."""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from zmtf.contrib.seq2seq.attention_wrapper import AttentionWrapperState
from zmtf.framework import dtypes
from zmtf.framework.nest import map_structure
from zmtf.ops import array_ops, math_ops
from zmtf.ops.composite_ops import range_
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.nn_ops import log_softmax
from zmtf.ops.selection_ops import gather, where
from zmtf.ops.tensor_array_ops import TensorArray
from zmtf.ops.topk_ops import top_k
from zmtf.framework.sparse_tensor import constant_value
from zmtf.framework.tensor_shape import TensorShape


class BeamSearchDecoderState(collections.namedtuple(
        "BeamSearchDecoderState", ("cell_state", "log_probs", "finished", "lengths",
                                   "accumulated_attention_probs"))):
    """The loop state: the cell state [batch, beam, ...], each beam's log probability,
    finished flag and length (int64), and the summed attention (coverage penalty only)."""


class BeamSearchDecoderOutput(collections.namedtuple(
        "BeamSearchDecoderOutput", ("scores", "predicted_ids", "parent_ids"))):
    """One step's output, each [batch, beam]: the ranking scores, the chosen word ids and
    the beams they extend."""


def static_value(t: Any) -> Any:
    """A Python number when ``t`` is one or a constant tensor; else None."""
    if isinstance(t, (int, float, np.number)):
        return t
    value = constant_value(t)
    return None if value is None else value.item()


def length_penalty(lengths: Any, weight: Any, dtype: Any) -> Any:
    """GNMT's ``((5 + length) / 6) ** weight``; the number 1.0 when ``weight`` is 0."""
    weight = convert_to_tensor(weight, dtype=dtype, name="penalty_factor")
    if weight.shape.ndims not in (None, 0):
        raise ValueError(f"length_penalty_weight must be a scalar, but saw shape: {weight.shape}")
    if static_value(weight) == 0:
        return 1.0
    return math_ops.truediv(math_ops.pow(5.0 + math_ops.cast(lengths, dtype), weight),
                            math_ops.pow(convert_to_tensor(6.0, dtype=dtype), weight))


def _coverage_penalty(accumulated: Any, finished: Any) -> Any:
    """Sum over source steps of log(min(attention so far, 1)), for finished beams only;
    source steps never attended (zero, e.g. padding) count as fully covered."""
    covered = where(math_ops.equal(accumulated, 0.0), array_ops.ones_like(accumulated),
                    accumulated)
    penalty = math_ops.reduce_sum(math_ops.log(math_ops.minimum(covered, 1.0)), 2)
    return where(finished, penalty, array_ops.zeros_like(penalty))


def beam_scores(log_probs: Any, lengths: Any, length_penalty_weight: Any,
                coverage_penalty_weight: Any, finished: Any, accumulated_attention: Any) -> Any:
    """What the beams are ranked by: log_probs [batch, beam, vocab] over the length penalty,
    plus ``coverage_penalty_weight`` times the coverage penalty."""
    scores = log_probs / length_penalty(lengths, length_penalty_weight, log_probs.dtype)
    weight = convert_to_tensor(coverage_penalty_weight, dtype=log_probs.dtype,
                               name="coverage_penalty_weight")
    if weight.shape.ndims not in (None, 0):
        raise ValueError(f"coverage_penalty_weight should be a scalar, but saw shape: "
                         f"{weight.shape}")
    if static_value(weight) == 0:
        return scores
    if accumulated_attention is None:
        raise ValueError("accumulated_attention_probs can be None only if coverage penalty is "
                         "disabled.")
    penalty = _coverage_penalty(accumulated_attention, finished) * weight
    return scores + array_ops.expand_dims(penalty, 2)


def attention_probs(cell_state: Any, coverage_penalty_weight: Any) -> Any:
    """The alignments [batch, beam, memory_time] of the attentional cells in
    ``cell_state`` (averaged over several), or None when the coverage penalty is off."""
    if static_value(coverage_penalty_weight) == 0:
        return None
    states = [cell_state] if isinstance(cell_state, AttentionWrapperState) else \
        [s for s in cell_state if isinstance(s, AttentionWrapperState)] \
        if isinstance(cell_state, tuple) else []
    if not states:
        raise ValueError("coverage_penalty_weight must be 0.0 if no cell is attentional.")
    per_cell = [_mean_of(s.alignments) for s in states]
    return _mean_of(tuple(per_cell)) if len(per_cell) > 1 else per_cell[0]


def _mean_of(probs: Any) -> Any:
    if not isinstance(probs, tuple):
        return probs
    return math_ops.reduce_mean(array_ops.concat([array_ops.expand_dims(p, -1)
                                                  for p in probs], -1), -1)


def mask_finished(step_log_probs: Any, end_token: Any, finished: Any) -> Any:
    """A finished beam's next-word log probabilities: 0 for ``end_token``, the dtype's
    lowest value for every other word (so it can only stay finished, at no cost)."""
    lowest = float(np.finfo(step_log_probs.dtype.as_numpy_dtype).min)
    vocab = array_ops.shape(step_log_probs)[2]
    row = math_ops.cast(math_ops.not_equal(range_(vocab), end_token), step_log_probs.dtype)
    finished_probs = array_ops.zeros_like(step_log_probs) + row * lowest
    mask = math_ops.logical_and(array_ops.expand_dims(finished, 2),
                                array_ops.ones_like(step_log_probs, dtype=dtypes.bool_))
    return where(mask, finished_probs, step_log_probs)


def gather_beams(t: Any, indices: Any, batch_size: Any, range_size: Any) -> Any:
    """``t[b, indices[b, k], ...]`` for every b, k, with t [batch, range_size, ...]: e.g.
    each new beam's parent entry. TensorArrays and tensors of rank < 2 (such as the
    attention step count) pass through."""
    if isinstance(t, TensorArray):
        return t
    if t.shape.ndims is None:
        raise ValueError(f"Expected tensor ({t.name}) to have known rank, but ndims == None.")
    if t.shape.ndims < 2:
        return t
    offsets = array_ops.expand_dims(range_(batch_size) * range_size, 1)
    flat_index = array_ops.reshape(indices + offsets, [-1])
    shape = array_ops.shape(t)
    merged = array_ops.reshape(t, array_ops.concat([[-1], shape[2:]], 0))
    picked = array_ops.reshape(gather(merged, flat_index),
                               array_ops.concat([array_ops.shape(indices), shape[2:]], 0))
    picked.set_shape(TensorShape([static_value(batch_size), indices.shape.as_list()[1]])
                     .concatenate(t.shape[2:]))
    return picked


def beam_search_step(time: Any, logits: Any, next_cell_state: Any, state: BeamSearchDecoderState,
                     batch_size: Any, beam_width: int, end_token: Any,
                     length_penalty_weight: Any, coverage_penalty_weight: Any) -> tuple:
    """``(BeamSearchDecoderOutput, BeamSearchDecoderState)`` after one step, given the
    cell's logits [batch, beam, vocab] and its next state (both still per parent beam)."""
    static_batch = static_value(batch_size)
    previously_finished = state.finished
    not_finished = math_ops.logical_not(previously_finished)
    step_log_probs = mask_finished(log_softmax(logits), end_token, previously_finished)
    total = array_ops.expand_dims(state.log_probs, 2) + step_log_probs
    vocab = logits.shape.as_list()[-1]
    vocab = vocab if vocab is not None else array_ops.shape(logits)[-1]
    grows = math_ops.logical_and(
        array_ops.expand_dims(not_finished, 2),
        math_ops.not_equal(range_(vocab), end_token))   # an end token adds no length
    new_lengths = array_ops.expand_dims(state.lengths, 2) + math_ops.cast(grows, dtypes.int64)
    accumulated = None
    probs = attention_probs(next_cell_state, coverage_penalty_weight)
    if probs is not None:
        probs = probs * array_ops.expand_dims(math_ops.cast(not_finished, probs.dtype), 2)
        accumulated = state.accumulated_attention_probs + probs
    scores = beam_scores(total, new_lengths, length_penalty_weight, coverage_penalty_weight,
                         previously_finished, accumulated)
    scores_flat = array_ops.reshape(scores, array_ops.stack([batch_size, -1])
                                    if not isinstance(batch_size, int) else [batch_size, -1])
    next_scores, word_indices = top_k(scores_flat, k=beam_width)
    next_scores.set_shape([static_batch, beam_width])
    word_indices.set_shape([static_batch, beam_width])
    next_word_ids = math_ops.cast(math_ops.floormod(word_indices, vocab), dtypes.int32,
                                  name="next_beam_word_ids")
    parents = math_ops.cast(math_ops.floordiv(word_indices, vocab), dtypes.int32,
                            name="next_beam_parent_ids")
    next_log_probs = gather_beams(array_ops.reshape(total, array_ops.shape(scores_flat)),
                                  word_indices, batch_size, beam_width * vocab)
    was_finished = gather_beams(previously_finished, parents, batch_size, beam_width)
    next_finished = math_ops.logical_or(was_finished, math_ops.equal(next_word_ids, end_token),
                                        name="next_beam_finished")
    next_lengths = gather_beams(state.lengths, parents, batch_size, beam_width) + \
        math_ops.cast(math_ops.logical_not(was_finished), dtypes.int64)
    next_accumulated = () if accumulated is None else \
        gather_beams(accumulated, parents, batch_size, beam_width)
    next_cell_state = map_structure(
        lambda t: gather_beams(t, parents, batch_size, beam_width), next_cell_state)
    next_state = BeamSearchDecoderState(
        cell_state=next_cell_state, log_probs=next_log_probs, finished=next_finished,
        lengths=next_lengths, accumulated_attention_probs=next_accumulated)
    output = BeamSearchDecoderOutput(scores=next_scores, predicted_ids=next_word_ids,
                                     parent_ids=parents)
    return output, next_state

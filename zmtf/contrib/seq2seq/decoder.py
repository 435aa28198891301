"""``dynamic_decode``: run a Decoder step by step in one tf.while_loop until every batch
entry is finished (or ``maximum_iterations``), writing each step's outputs to a
TensorArray. The outputs, the final state and the sequence lengths are loop results, so
gradients flow back through every step (training with a TrainingHelper is differentiable)."""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.nest import assert_same_structure, map_structure
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.selection_ops import where
from zmtf.ops.tensor_array_ops import TensorArray
from zmtf.ops.while_ops import while_loop
from zmtf.framework.tensor_shape import TensorShape, as_shape
from zmtf.ops.variable_scope import variable_scope


class Decoder:
    """TF1's abstract Decoder: ``batch_size``, ``output_size``, ``output_dtype``,
    ``initialize() -> (finished, inputs, state)`` and
    ``step(time, inputs, state) -> (outputs, next_state, next_inputs, finished)``."""

    @property
    def batch_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_size(self) -> Any:
        raise NotImplementedError

    @property
    def output_dtype(self) -> Any:
        raise NotImplementedError

    @property
    def tracks_own_finished(self) -> bool:
        return False

    def initialize(self, name: str | None = None) -> tuple[Any, Any, Any]:
        raise NotImplementedError

    def step(self, time: Any, inputs: Any, state: Any, name: str | None = None) -> tuple:
        raise NotImplementedError

    def finalize(self, outputs: Any, final_state: Any, sequence_lengths: Any) -> tuple[Any, Any]:
        raise NotImplementedError


def _static_batch(finished: Any) -> int | None:
    return finished.shape.as_list()[0] if finished.shape.ndims == 1 else None


def _zero_output(batch: Any, size: Any, dtype: Any) -> Any:
    dims = as_shape(size).as_list()
    if isinstance(batch, int):
        return array_ops.zeros([batch] + dims, dtype)
    return array_ops.zeros(array_ops.concat([array_ops.reshape(batch, [1]),
                                             convert_to_tensor(dims, dtype=dtypes.int32)], 0),
                           dtype)


def _batch_major(t: Any) -> Any:
    rank = t.shape.ndims
    if rank is None or rank < 2:
        return t
    return array_ops.transpose(t, [1, 0] + list(range(2, rank)))


def dynamic_decode(decoder: Decoder, output_time_major: bool = False, impute_finished: bool = False,
                   maximum_iterations: Any = None, parallel_iterations: int = 32,
                   swap_memory: bool = False, scope: Any = None) -> tuple[Any, Any, Any]:
    """Decode in variable scope ``scope`` (default "decoder"); return ``(final_outputs,
    final_state, final_sequence_lengths)``, the outputs [batch, time, ...] (or time-major).
    With ``impute_finished`` a finished entry's outputs are zeros and its state is copied
    through. ``parallel_iterations`` and ``swap_memory`` are accepted for compatibility."""
    if not isinstance(decoder, Decoder):
        raise TypeError(f"Expected decoder to be type Decoder, but saw: {type(decoder)}")
    with variable_scope(scope, default_name="decoder"):
        if maximum_iterations is not None:
            maximum_iterations = convert_to_tensor(maximum_iterations, dtype=dtypes.int32)
            if maximum_iterations.shape.ndims != 0:
                raise ValueError("maximum_iterations must be a scalar")
        initial_finished, initial_inputs, initial_state = decoder.initialize()
        initial_finished = convert_to_tensor(initial_finished, dtype=dtypes.bool_)
        if maximum_iterations is not None:
            initial_finished = math_ops.logical_or(initial_finished,
                                                   math_ops.greater_equal(0, maximum_iterations))
        static_batch = _static_batch(initial_finished)
        batch = static_batch if static_batch is not None else array_ops.size(initial_finished)
        zero_outputs = map_structure(lambda size, dtype: _zero_output(batch, size, dtype),
                                     decoder.output_size, decoder.output_dtype)
        outputs_ta = map_structure(
            lambda size, dtype: TensorArray(dtype, size=0, dynamic_size=True,
                                            element_shape=TensorShape([static_batch]).concatenate(
                                                as_shape(size))),
            decoder.output_size, decoder.output_dtype)
        lengths = array_ops.zeros_like(initial_finished, dtype=dtypes.int32)

        def condition(_time: Any, _outputs_ta: Any, _state: Any, _inputs: Any, finished: Any,
                      _lengths: Any) -> Any:
            return math_ops.logical_not(math_ops.reduce_all(finished))

        def body(time: Any, outputs_ta: Any, state: Any, inputs: Any, finished: Any,
                 lengths: Any) -> tuple[Any, ...]:
            outputs, decoder_state, next_inputs, decoder_finished = decoder.step(time, inputs,
                                                                                state)
            assert_same_structure(state, decoder_state)
            assert_same_structure(outputs_ta, outputs)
            if decoder.tracks_own_finished:   # e.g. beam search, which reorders its beams
                next_finished = convert_to_tensor(decoder_finished)
            else:
                next_finished = math_ops.logical_or(decoder_finished, finished)
            next_lengths = where(finished, lengths,
                                 array_ops.fill(array_ops.shape(lengths), time + 1))
            if maximum_iterations is not None:
                next_finished = math_ops.logical_or(
                    next_finished, math_ops.greater_equal(time + 1, maximum_iterations))
            if impute_finished:
                outputs = map_structure(lambda out, zero: where(finished, zero, out),
                                        outputs, zero_outputs)

                def copy_state(new: Any, current: Any) -> Any:
                    if isinstance(current, TensorArray) or current.shape.ndims == 0:
                        return new
                    return where(finished, current, new)

                decoder_state = map_structure(copy_state, decoder_state, state)
            outputs_ta = map_structure(lambda ta, out: ta.write(time, out), outputs_ta, outputs)
            return time + 1, outputs_ta, decoder_state, next_inputs, next_finished, next_lengths

        loop_vars = [convert_to_tensor(0, dtype=dtypes.int32), outputs_ta, initial_state,
                     initial_inputs, initial_finished, lengths]
        _, final_ta, final_state, _, _, final_lengths = while_loop(
            condition, body, loop_vars, maximum_iterations=maximum_iterations)
        final_outputs = map_structure(lambda ta: ta.stack(), final_ta)
        try:
            final_outputs, final_state = decoder.finalize(final_outputs, final_state,
                                                          final_lengths)
        except NotImplementedError:
            pass
        if not output_time_major:
            final_outputs = map_structure(_batch_major, final_outputs)
    return final_outputs, final_state, final_lengths


__all__ = ["Decoder", "dynamic_decode"]

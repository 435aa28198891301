"""``tf.nn.raw_rnn``: an RNN whose every step is decided by the caller's ``loop_fn``.

TF1's protocol: ``loop_fn(time, cell_output, cell_state, loop_state)`` returns
``(finished, next_input, next_cell_state, emit_output, next_loop_state)``. It is called
once before the loop (time 0, with ``cell_output``, ``cell_state`` and ``loop_state`` all
None) to give the first input, the initial state, the emit structure and the initial loop
state; then once after every cell step. The loop (one tf.while_loop) runs until every
batch entry is finished. Once an entry is finished its emitted values are zeros and its
state is copied through (tf.where on the ``finished`` vector), as TF1 does; scalars and
TensorArrays pass through unchanged. Each step's emit is written to a dynamic-size
TensorArray, so gradients flow back through the emits, the final state and the loop
state like any loop variable's (see zmtf/training/while_grad.py).
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework import dtypes
from zmtf.framework.nest import assert_same_structure, flatten, map_structure, pack_sequence_as
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.rnn_cell import assert_like_rnncell
from zmtf.ops.selection_ops import where
from zmtf.ops.tensor_array_ops import TensorArray
from zmtf.ops.while_ops import while_loop
from zmtf.framework.tensor_shape import TensorShape, as_shape
from zmtf.ops.variable_scope import variable_scope


def _static_batch(flat_input: list[Any]) -> int | None:
    """The batch size all inputs agree on statically, or None; ValueError if they disagree."""
    batch = None
    for x in flat_input:
        dim = x.shape.dims[0] if x.shape.ndims else None
        if dim is not None and batch is not None and dim != batch:
            raise ValueError(f"raw_rnn: the inputs from loop_fn disagree on the batch size: "
                             f"{batch} and {dim} ({x.name})")
        batch = dim if batch is None else batch
    return batch


def _emit_specs(emit_structure: Any, cell: Any, state_dtype: Any) -> tuple[Any, list, list]:
    """(structure, per-leaf sizes, per-leaf dtypes) of what each step emits: loop_fn's
    emit_structure (tensors shaped as one batch entry's emit) or else the cell's output."""
    if emit_structure is not None:
        flat = [convert_to_tensor(e) for e in flatten(emit_structure)]
        sizes = [e.shape if e.shape.is_fully_defined() else array_ops.shape(e) for e in flat]
        return emit_structure, sizes, [e.dtype for e in flat]
    sizes = flatten(cell.output_size)
    return cell.output_size, sizes, [state_dtype] * len(sizes)


def _zeros_emit(batch: Any, size: Any, dtype: Any) -> Any:
    """Zeros [batch] + size; ``batch`` an int or a scalar tensor, ``size`` a static shape
    (an int or TensorShape) or an int vector known at run time."""
    static = isinstance(size, (TensorShape, int))
    if static and isinstance(batch, int):
        return array_ops.zeros([batch] + as_shape(size).as_list(), dtype)
    dims = convert_to_tensor(as_shape(size).as_list() if static else size, dtype=dtypes.int32)
    first = array_ops.reshape(convert_to_tensor(batch, dtype=dtypes.int32), [1])
    return array_ops.zeros(array_ops.concat([first, dims], 0), dtype)


def _element_shape(batch: int | None, size: Any) -> TensorShape:
    if isinstance(size, (TensorShape, int)):
        return TensorShape([batch]).concatenate(as_shape(size))
    return TensorShape(None)


def raw_rnn(cell: Any, loop_fn: Callable[..., Any], parallel_iterations: Any = None,
            swap_memory: bool = False, scope: Any = None) -> tuple[Any, Any, Any]:
    """Run ``cell`` under ``loop_fn``'s control in variable scope ``scope`` (default "rnn");
    return ``(emit_ta, final_state, final_loop_state)``: ``emit_ta`` a (nest of)
    TensorArray holding each step's emit ([batch, ...] per step), ``final_loop_state`` None
    when loop_fn's first loop state was None. ``parallel_iterations`` and ``swap_memory``
    are accepted for compatibility (iterations run one after the other)."""
    assert_like_rnncell("cell", cell)
    if not callable(loop_fn):
        raise TypeError(f"Argument `loop_fn` must be a callable. Received: {loop_fn}.")
    with variable_scope(scope or "rnn"):
        time = convert_to_tensor(0, dtype=dtypes.int32)
        finished, next_input, initial_state, emit_structure, init_loop_state = loop_fn(
            time, None, None, None)
        finished = convert_to_tensor(finished, dtype=dtypes.bool_)
        next_input = map_structure(convert_to_tensor, next_input)
        flat_input = flatten(next_input)
        static_batch = _static_batch(flat_input)
        batch = static_batch if static_batch is not None else array_ops.shape(flat_input[0])[0]
        assert_same_structure(initial_state, cell.state_size)
        state = map_structure(convert_to_tensor, initial_state)
        loop_state = init_loop_state if init_loop_state is not None else \
            convert_to_tensor(0, dtype=dtypes.int32)

        emit_structure, sizes, emit_dtypes = _emit_specs(emit_structure, cell,
                                                         flatten(state)[0].dtype)
        emit_ta = pack_sequence_as(emit_structure, [
            TensorArray(dtype, size=0, dynamic_size=True, name=f"rnn_output_{i}",
                        element_shape=_element_shape(static_batch, size))
            for i, (size, dtype) in enumerate(zip(sizes, emit_dtypes))])
        zero_emit = pack_sequence_as(emit_structure, [
            _zeros_emit(batch, size, dtype) for size, dtype in zip(sizes, emit_dtypes)])

        def condition(_time: Any, finished: Any, *_rest: Any) -> Any:
            return math_ops.logical_not(math_ops.reduce_all(finished))

        def body(time: Any, finished: Any, current_input: Any, emit_ta: Any, state: Any,
                 loop_state: Any) -> tuple[Any, ...]:
            output, cell_state = cell(current_input, state)
            assert_same_structure(state, cell_state)
            assert_same_structure(cell.output_size, output)
            next_time = time + 1
            next_finished, next_input, next_state, emit, next_loop_state = loop_fn(
                next_time, output, cell_state, loop_state)
            assert_same_structure(state, next_state)
            assert_same_structure(current_input, next_input)
            assert_same_structure(emit_ta, emit)
            loop_state = loop_state if next_loop_state is None else next_loop_state

            def copy_through(current: Any, candidate: Any) -> Any:
                """Finished entries keep ``current``; TensorArrays and scalars pass through."""
                if isinstance(current, TensorArray) or current.shape.ndims == 0:
                    return candidate
                return where(finished, current, candidate)

            emit = map_structure(copy_through, zero_emit, emit)
            next_state = map_structure(copy_through, state, next_state)
            emit_ta = map_structure(lambda ta, value: ta.write(time, value), emit_ta, emit)
            finished = math_ops.logical_or(finished, convert_to_tensor(next_finished))
            return next_time, finished, next_input, emit_ta, next_state, loop_state

        returned = while_loop(condition, body,
                              [time, finished, next_input, emit_ta, state, loop_state])
        emit_ta, final_state, final_loop_state = returned[-3:]
    return emit_ta, final_state, (None if init_loop_state is None else final_loop_state)


__all__ = ["raw_rnn"]

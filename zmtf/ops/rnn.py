"""RNNs over time: ``static_rnn`` unrolls a cell over a Python list of time steps;
``dynamic_rnn`` runs it in a tf.while_loop over a [batch, time, depth] tensor, and takes its
outputs from the loop's history of the output (see while_ops.py), so their gradient flows
back through the loop; the ``bidirectional`` variants add a reversed pass."""

from __future__ import annotations

from typing import Any, Sequence

from zmtf.framework.graph import Tensor
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.image_ops import reverse
from zmtf.ops.selection_ops import gather, unstack
from zmtf.ops.sequence_ops import reverse_sequence
from zmtf.ops.while_ops import build_loop, loop_history
from zmtf.framework.nest import assert_same_structure, flatten, map_structure, pack_sequence_as
from zmtf.ops.rnn_cell import RNNCell, assert_like_rnncell
from zmtf.framework.tensor_shape import as_shape
from zmtf.ops.variable_scope import variable_scope


def _batch_size(first_input: Tensor) -> Any:
    """The static batch size if known, else a scalar tensor read at run time."""
    if first_input.shape.ndims is None or first_input.shape.ndims < 2:
        raise ValueError(f"static_rnn: each input must be [batch, depth], got {first_input.shape} "
                         f"({first_input.name})")
    static = first_input.shape.as_list()[0]
    return static if static is not None else array_ops.shape(first_input)[0]


def _masked_step(time: int, sequence_length: Tensor, output: Any, new_state: Any,
                 state: Any) -> tuple[Any, Any]:
    """TF1's _rnn_step: past an example's length its output is zero and its state is carried."""
    live = math_ops.less(convert_to_tensor(time, dtype=sequence_length.dtype), sequence_length)

    def keep(like: Tensor) -> Tensor:
        """1 for live entries, 0 past their length, shaped [batch, 1, ...] to scale ``like``."""
        rank = like.shape.ndims if like.shape.ndims is not None else 2
        return array_ops.reshape(math_ops.cast(live, like.dtype), [-1] + [1] * (rank - 1))

    outputs = [o * keep(o) for o in flatten(output)]
    states = [new * keep(new) + old * (1 - keep(old))
              for new, old in zip(flatten(new_state), flatten(state))]
    return pack_sequence_as(output, outputs), pack_sequence_as(new_state, states)


def static_rnn(cell: RNNCell, inputs: Sequence[Any], initial_state: Any = None, dtype: Any = None,
               sequence_length: Any = None, scope: Any = None) -> tuple[list[Any], Any]:
    """Run ``cell`` over ``inputs`` (a list of [batch, depth] tensors) in variable scope
    ``scope`` (default "rnn"); return ``(outputs, final_state)``.

    Without ``initial_state`` the state starts at ``cell.zero_state(batch, dtype)``, so
    ``dtype`` is then required. With ``sequence_length`` (an int vector [batch]) the outputs
    past an example's length are zeros and its final state is the one at its last step.
    """
    if not isinstance(inputs, (list, tuple)):
        raise TypeError("static_rnn: inputs must be a sequence (a list of [batch, depth] tensors)")
    if not inputs:
        raise ValueError("static_rnn: inputs must not be empty")
    xs = [convert_to_tensor(x) for x in inputs]
    with variable_scope(scope or "rnn") as varscope:
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If no initial_state is provided, dtype must be specified")
            state = cell.zero_state(_batch_size(xs[0]), dtype)
        lengths = None
        if sequence_length is not None:
            lengths = math_ops.cast(convert_to_tensor(sequence_length), "int32")
            if lengths.shape.ndims not in (None, 1):
                raise ValueError(f"sequence_length must be a vector of length batch_size, got "
                                 f"shape {lengths.shape}")
        outputs = []
        for time, x in enumerate(xs):
            if time > 0:
                varscope.reuse_variables()
            output, new_state = cell(x, state)
            if lengths is not None:
                output, new_state = _masked_step(time, lengths, output, new_state, state)
            state = new_state
            outputs.append(output)
        return outputs, state


def static_bidirectional_rnn(cell_fw: RNNCell, cell_bw: RNNCell, inputs: Sequence[Any],
                             initial_state_fw: Any = None, initial_state_bw: Any = None,
                             dtype: Any = None, sequence_length: Any = None,
                             scope: Any = None) -> tuple[list[Any], Any, Any]:
    """``cell_fw`` over ``inputs`` and ``cell_bw`` over them reversed, in scopes
    "<scope>/fw" and "<scope>/bw" (default scope "bidirectional_rnn"); returns
    ``(outputs, output_state_fw, output_state_bw)``, each output the concatenation
    [fw, bw] of the two directions at that time step. With ``sequence_length`` each
    example is reversed within its own length, as TF1 does."""
    if not isinstance(inputs, (list, tuple)) or not inputs:
        raise TypeError("static_bidirectional_rnn: inputs must be a non-empty list of tensors")
    lengths = _lengths(sequence_length)

    def backwards(steps: list[Any]) -> list[Any]:
        if lengths is None:
            return list(steps)[::-1]
        stacked = array_ops.stack([convert_to_tensor(s) for s in steps])   # [time, batch, ...]
        flipped = reverse_sequence(stacked, lengths, seq_axis=0, batch_axis=1)
        return unstack(flipped, num=len(steps))

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = static_rnn(cell_fw, inputs, initial_state_fw, dtype,
                                             sequence_length=lengths, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_bw, state_bw = static_rnn(cell_bw, backwards(inputs), initial_state_bw,
                                               dtype, sequence_length=lengths, scope=bw_scope)
    outputs = [array_ops.concat([fw, bw], 1) for fw, bw in zip(output_fw, backwards(reversed_bw))]
    return outputs, state_fw, state_bw


def _lengths(sequence_length: Any) -> Tensor | None:
    if sequence_length is None:
        return None
    lengths = math_ops.cast(convert_to_tensor(sequence_length), "int32")
    if lengths.shape.ndims not in (None, 1):
        raise ValueError(f"sequence_length must be a vector of length batch_size, got shape "
                         f"{lengths.shape}")
    return lengths


def dynamic_rnn(cell: RNNCell, inputs: Any, sequence_length: Any = None, initial_state: Any = None,
                dtype: Any = None, parallel_iterations: Any = None, swap_memory: bool = False,
                time_major: bool = False, scope: Any = None) -> tuple[Tensor, Any]:
    """Run ``cell`` over ``inputs`` ([batch, time, depth], or [time, batch, depth] when
    ``time_major``) in a tf.while_loop, in variable scope ``scope`` (default "rnn"); return
    ``(outputs, final_state)`` with outputs laid out as the inputs. The time length may be
    unknown until run time. ``sequence_length`` works as in static_rnn. A cell whose output
    is a nest (a tuple, a namedtuple) gives outputs of that structure, each leaf laid out
    as the inputs and masked by ``sequence_length``."""
    assert_like_rnncell("cell", cell)
    x = convert_to_tensor(inputs)
    if x.shape.ndims is not None and x.shape.ndims < 3:
        raise ValueError(f"dynamic_rnn: inputs must be [batch, time, depth] (or time-major), got "
                         f"{x.shape} ({x.name})")
    if not time_major:
        x = array_ops.transpose(x, [1, 0, 2])
    with variable_scope(scope or "rnn"):
        static_batch = x.shape.as_list()[1] if x.shape.ndims is not None else None
        batch = static_batch if static_batch is not None else array_ops.shape(x)[1]
        if initial_state is not None:
            state = initial_state
        else:
            if dtype is None:
                raise ValueError("If no initial_state is provided, dtype must be specified")
            state = cell.zero_state(batch, dtype)
        out_dtype = flatten(state)[0].dtype
        zero_output = map_structure(lambda size: _zeros_like_output(batch, size, out_dtype),
                                    cell.output_size)
        lengths = _lengths(sequence_length)
        steps = array_ops.shape(x)[0]

        def body(t: Tensor, _output: Any, state: Any) -> tuple[Any, ...]:
            output, new_state = cell(gather(x, t), state)
            assert_same_structure(cell.output_size, output)
            if lengths is not None:
                output, new_state = _masked_step(t, lengths, output, new_state, state)
            return t + 1, output, new_state

        loop, pack = build_loop(lambda t, _o, _s: t < steps, body, (0, zero_output, state),
                                name="while")
        _, _, final_state = pack(list(loop.outputs[:len(loop._while_parts[1])]))
        count = len(flatten(zero_output))   # the outputs' leaves are loop variables 1 .. count
        outputs = pack_sequence_as(zero_output, [loop_history(loop, 1 + i) for i in range(count)])
    static_time = x.shape.as_list()[0] if x.shape.ndims is not None else None
    outputs = map_structure(lambda o: _time_first(o, static_time), outputs)
    if not time_major:
        outputs = map_structure(_swap_batch_and_time, outputs)
    return outputs, final_state


def _zeros_like_output(batch: Any, size: Any, dtype: Any) -> Tensor:
    """Zeros [batch] + size for one leaf of a cell's output_size (an int or a shape)."""
    dims = as_shape(size).as_list()
    if None in dims:
        raise ValueError(f"dynamic_rnn: the cell's output_size {size} must be fully defined")
    if isinstance(batch, Tensor):
        return array_ops.zeros(array_ops.stack([batch] + dims), dtype)
    return array_ops.zeros([batch] + dims, dtype)


def _time_first(history: Tensor, static_time: int | None) -> Tensor:
    """The loop's history [T, batch, ...] with T set from the inputs' static time length."""
    if static_time is not None and history.shape.ndims is not None:
        history.set_shape([static_time] + history.shape.as_list()[1:])
    return history


def _swap_batch_and_time(t: Tensor) -> Tensor:
    rank = t.shape.ndims
    if rank is None:
        raise ValueError(f"dynamic_rnn: an output of unknown rank cannot be made batch-major "
                         f"({t.name})")
    return array_ops.transpose(t, [1, 0] + list(range(2, rank)))


def bidirectional_dynamic_rnn(cell_fw: RNNCell, cell_bw: RNNCell, inputs: Any,
                              sequence_length: Any = None, initial_state_fw: Any = None,
                              initial_state_bw: Any = None, dtype: Any = None,
                              parallel_iterations: Any = None, swap_memory: bool = False,
                              time_major: bool = False, scope: Any = None) -> tuple[Any, Any]:
    """``cell_fw`` over ``inputs`` and ``cell_bw`` over each sequence reversed (within its
    ``sequence_length``), in scopes "<scope>/fw" and "<scope>/bw" (default
    "bidirectional_rnn"); returns ``((output_fw, output_bw), (state_fw, state_bw))`` with
    output_bw put back in time order, as TF1 (leaf by leaf for a nested output)."""
    assert_like_rnncell("cell_fw", cell_fw)
    assert_like_rnncell("cell_bw", cell_bw)
    x = convert_to_tensor(inputs)
    time_axis, batch_axis = (0, 1) if time_major else (1, 0)
    lengths = _lengths(sequence_length)

    def backwards(t: Tensor) -> Tensor:
        if lengths is None:
            return reverse(t, [time_axis])
        return reverse_sequence(t, lengths, seq_axis=time_axis, batch_axis=batch_axis)

    with variable_scope(scope or "bidirectional_rnn"):
        with variable_scope("fw") as fw_scope:
            output_fw, state_fw = dynamic_rnn(cell_fw, x, lengths, initial_state_fw, dtype,
                                              time_major=time_major, scope=fw_scope)
        with variable_scope("bw") as bw_scope:
            reversed_bw, state_bw = dynamic_rnn(cell_bw, backwards(x), lengths, initial_state_bw,
                                                dtype, time_major=time_major, scope=bw_scope)
    return (output_fw, map_structure(backwards, reversed_bw)), (state_fw, state_bw)


__all__ = ["bidirectional_dynamic_rnn", "dynamic_rnn", "static_bidirectional_rnn", "static_rnn"]

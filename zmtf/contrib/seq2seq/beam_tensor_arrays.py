"""Put a beam search's per-step TensorArrays (e.g. an AttentionWrapper's alignment history)
in final-beam order. During decoding a TensorArray in the cell state is written as beams
come and go, so entry (t, b, k) belongs to whatever beam k was at step t; following the
parent pointers back (gather_tree on the beam indices) tells which to read for each final
beam. TF1 does the same in BeamSearchDecoder.finalize when reorder_tensor_arrays is set."""

from __future__ import annotations

import warnings
from typing import Any

from zmtf.contrib.seq2seq.beam_search_step import static_value
from zmtf.framework import dtypes
from zmtf.framework.graph import get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.check_ops import assert_equal
from zmtf.ops.composite_ops import range_
from zmtf.ops.gather_tree_ops import gather_tree
from zmtf.ops.selection_ops import tile, where
from zmtf.ops.sequence_ops import gather_nd, sequence_mask
from zmtf.ops.tensor_array_ops import TensorArray


def gather_tree_from_array(t: Any, parent_ids: Any, sequence_length: Any) -> Any:
    """Reorder ``t`` [max_time, batch * beam, ...] along the beams' parent pointers
    ``parent_ids`` [max_time, batch, beam]; steps past a beam's length keep their order."""
    shape = array_ops.shape(parent_ids)
    max_time, batch, beam = shape[0], shape[1], shape[2]
    beam_ids = tile(array_ops.reshape(range_(beam), [1, 1, -1]),
                    array_ops.stack([max_time, batch, 1]))
    max_lengths = math_ops.cast(math_ops.reduce_max(sequence_length, axis=1), dtypes.int32)
    sorted_ids = gather_tree(beam_ids, parent_ids, max_lengths, end_token=beam + 1)
    in_bounds = array_ops.transpose(sequence_mask(sequence_length, maxlen=max_time), [2, 0, 1])
    sorted_ids = where(in_bounds, sorted_ids, beam_ids)
    time_ind = tile(array_ops.reshape(range_(max_time), [-1, 1, 1]),
                    array_ops.stack([1, batch, beam]))
    batch_ind = array_ops.transpose(tile(array_ops.reshape(range_(batch), [-1, 1, 1]),
                                         array_ops.stack([1, max_time, beam])), [1, 0, 2])
    indices = array_ops.stack([time_ind, batch_ind, sorted_ids], -1)
    values = array_ops.reshape(t, array_ops.stack([max_time, batch, beam, -1]))
    ordered = array_ops.reshape(gather_nd(values, indices), array_ops.shape(t))
    ordered.set_shape(t.shape)
    return ordered


def sort_array_beams(t: Any, parent_ids: Any, sequence_length: Any, batch_size: Any,
                     beam_width: int) -> Any:
    """A TensorArray of [batch * beam, ...] elements stacked and reordered; anything else
    (and a TensorArray whose element shape does not show the beams) is returned as is."""
    if not isinstance(t, TensorArray):
        return t
    shape = t.element_shape
    batch = static_value(batch_size)
    rows = None if shape.ndims is None or shape.ndims < 1 else shape.as_list()[0]
    if rows is None or (batch is not None and rows != batch * beam_width):
        warnings.warn(f"A TensorArray in the cell state is not "
                      f"[batch * beam_width, ...] (element shape {shape}); it is returned "
                      f"unsorted, in decoding order.")
        return t
    stacked = t.stack()
    check = assert_equal(array_ops.shape(stacked)[1],
                         math_ops.cast(batch_size, dtypes.int32) * beam_width,
                         message="TensorArray reordering expects elements to be reshapable "
                                 "to [batch_size, beam_size, -1] which is incompatible with "
                                 "the dynamic shape of the TensorArray elements")
    with get_default_graph().control_dependencies([check]):
        return gather_tree_from_array(stacked, parent_ids, sequence_length)

"""GatherTree(step_ids, parent_ids, max_sequence_lengths, end_token): backtrack each final
beam through its parent pointers (TF1's beam search kernel). A parent id outside
[0, beam_width) is an InvalidArgumentError naming (batch, time, beam); TF checks
``parent > beam_width`` and so reads one past the end for parent == beam_width, which zmtf
refuses instead."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str
from zmtf.kernels.registry import register


def _check_shapes(step_ids: np.ndarray, parent_ids: np.ndarray, lengths: np.ndarray,
                  end_token: np.ndarray, node: str) -> None:
    if step_ids.ndim != 3:
        raise InvalidArgumentError(f"step_ids must be a 3-tensor, saw shape: "
                                   f"{shape_str(step_ids.shape)} (node '{node}')")
    if lengths.ndim != 1:
        raise InvalidArgumentError(f"max_sequence_lengths must be a vector, saw shape: "
                                   f"{shape_str(lengths.shape)} (node '{node}')")
    if end_token.ndim != 0:
        raise InvalidArgumentError(f"end_token must be a scalar, saw shape: "
                                   f"{shape_str(end_token.shape)} (node '{node}')")
    if step_ids.shape != parent_ids.shape:
        raise InvalidArgumentError(f"step_ids.shape must match parent_ids.shape.  but shapes "
                                   f"are: {shape_str(step_ids.shape)} and "
                                   f"{shape_str(parent_ids.shape)} (node '{node}')")
    if step_ids.shape[1] != lengths.shape[0]:
        raise InvalidArgumentError(f"batch size dimensions step_ids.shape[1] and "
                                   f"max_sequence_lengths.shape[0] must match.  but shapes are: "
                                   f"{shape_str(step_ids.shape)} and {shape_str(lengths.shape)} "
                                   f"(node '{node}')")


def _backtrack(step_ids: np.ndarray, parent_ids: np.ndarray, batch: int, beam: int,
               length: int, out: np.ndarray, node: str) -> None:
    """Fill out[:length, batch, beam] with the path that ends at (length - 1, beam)."""
    width = step_ids.shape[2]
    out[length - 1, batch, beam] = step_ids[length - 1, batch, beam]
    parent = int(parent_ids[length - 1, batch, beam])
    for level in range(length - 2, -1, -1):
        if not 0 <= parent < width:
            raise InvalidArgumentError(f"Saw invalid parent id {parent} at (batch, time, beam) "
                                       f"== ({batch}, {level}, {beam}); parent ids must be in "
                                       f"[0, {width}) (node '{node}')")
        out[level, batch, beam] = step_ids[level, batch, parent]
        parent = int(parent_ids[level, batch, parent])


@register("GatherTree")
def gather_tree(ctx: Any, inputs: list, attrs: dict) -> list:
    step_ids, parent_ids, lengths, end_token = (np.asarray(x) for x in inputs)
    node = attrs["_node_name"]
    _check_shapes(step_ids, parent_ids, lengths, end_token, node)
    max_time, batch_size, width = step_ids.shape
    out = np.full(step_ids.shape, -1, np.int32)
    for batch in range(batch_size):
        length = min(max_time, int(lengths[batch]))
        for beam in range(width if length > 0 else 0):
            _backtrack(step_ids, parent_ids, batch, beam, length, out, node)
    ended = np.cumsum(out == int(end_token), axis=0)      # ends seen up to and including t
    after_end = (ended - (out == int(end_token))) > 0     # strictly after the first end
    out[after_end] = -1
    return [out]

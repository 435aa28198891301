"""ReverseSequence, GatherNd and ScatterNd on CPU (numpy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, NUMERIC, shape_input, shape_str
from zmtf.kernels.registry import register


@register("ReverseSequence", dtypes=ALL)
def reverse_sequence(ctx: Any, inputs: list, attrs: dict) -> list:
    """Row b of ``batch_axis`` has its first ``seq_lengths[b]`` entries along ``seq_axis`` reversed."""
    x, lengths = np.asarray(inputs[0]), np.asarray(inputs[1])
    seq_axis, batch_axis, node = attrs["seq_dim"], attrs["batch_dim"], attrs["_node_name"]
    if lengths.shape != (x.shape[batch_axis],):
        raise InvalidArgumentError(f"ReverseSequence (node '{node}'): seq_lengths must be a vector of "
                                   f"length {x.shape[batch_axis]}, got shape {shape_str(lengths.shape)}")
    if np.any(lengths < 0) or np.any(lengths > x.shape[seq_axis]):
        raise InvalidArgumentError(f"ReverseSequence (node '{node}'): seq_lengths must be in "
                                   f"[0, {x.shape[seq_axis]}], got {lengths.tolist()}")
    out = x.copy()
    for b, n in enumerate(lengths.tolist()):
        index: list[Any] = [slice(None)] * x.ndim
        index[batch_axis] = b
        index[seq_axis] = slice(0, n)
        source = list(index)
        source[seq_axis] = slice(n - 1, None, -1) if n else slice(0, 0)
        out[tuple(index)] = x[tuple(source)]
    return [out]


def _nd_index(indices: np.ndarray, shape: tuple[int, ...], node: str, op: str) -> tuple:
    """The numpy index of ``indices`` (last axis: a position in the first dims of ``shape``)."""
    depth = indices.shape[-1]
    if depth > len(shape):
        raise InvalidArgumentError(f"{op} (node '{node}'): index depth {depth} exceeds the rank "
                                   f"{len(shape)} of shape {shape_str(shape)}")
    flat = indices.reshape(-1, depth)
    bad = np.flatnonzero(np.any((flat < 0) | (flat >= np.array(shape[:depth])), axis=1))
    if bad.size:
        raise InvalidArgumentError(f"{op} (node '{node}'): indices{list(np.unravel_index(bad[0], indices.shape[:-1]))}"
                                   f" = {flat[bad[0]].tolist()} does not index into {shape_str(shape)}")
    return tuple(indices[..., k].astype(np.intp) for k in range(depth))


@register("GatherNd", dtypes=ALL)
def gather_nd(ctx: Any, inputs: list, attrs: dict) -> list:
    params, indices = np.asarray(inputs[0]), np.asarray(inputs[1])
    return [np.ascontiguousarray(params[_nd_index(indices, params.shape, attrs["_node_name"], "GatherNd")])]


@register("ScatterNd", dtypes=NUMERIC)
def scatter_nd(ctx: Any, inputs: list, attrs: dict) -> list:
    """Zeros of ``shape`` with ``updates`` added at ``indices`` (repeated indices add up)."""
    indices, updates, shape = np.asarray(inputs[0]), np.asarray(inputs[1]), inputs[2]
    node = attrs["_node_name"]
    dims = shape_input(shape, node, updates.dtype)
    expected = indices.shape[:-1] + tuple(dims[indices.shape[-1]:])
    if updates.shape != expected:
        raise InvalidArgumentError(f"ScatterNd (node '{node}'): updates must have shape "
                                   f"{shape_str(expected)}, got {shape_str(updates.shape)}")
    out = np.zeros(dims, updates.dtype)
    np.add.at(out, _nd_index(indices, dims, node, "ScatterNd"), updates)
    return [out]

"""PURE index arithmetic for the GPU kernels: broadcasting and reduction plans.

Kernels see flat C-contiguous arrays. A plan maps a flat output index to flat input
offsets: decompose the index over ``dims`` (row-major) and dot it with each input's
element ``strides`` (0 where the input is broadcast). Plans drop size-1 dims and merge
neighbours that index memory as one dim, so ``[64, 32] + [32]`` is a 2-dim plan and
``[64, 32] + [64, 32]`` a 1-dim one, which the kernels run without any division.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Shape = tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BroadcastPlan:
    """How each input of an elementwise op is indexed from the flat output index."""

    shape: Shape  #: the output shape
    dims: Shape  #: coalesced output dims; () when the output has one element
    strides: tuple[Shape, ...]  #: per input, its element stride along each of ``dims``

    @property
    def is_flat(self) -> bool:
        """At most one dim: each input is either the whole output (stride 1) or a scalar."""
        return len(self.dims) <= 1


def contiguous_strides(shape: Sequence[int]) -> Shape:
    """Element strides of a C-contiguous array of ``shape``."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def _coalesce(dims: Sequence[int], strides: Sequence[Shape]) -> tuple[Shape, tuple[Shape, ...]]:
    """Drop size-1 dims; merge dim d into the previous one p when, for every input,
    stride[p] == stride[d] * dims[d] (then (ip, id) and ip * dims[d] + id address alike)."""
    out_dims: list[int] = []
    out_strides: list[list[int]] = [[] for _ in strides]
    for d, size in enumerate(dims):
        if size == 1:
            continue
        if out_dims and all(s[-1] == st[d] * size for s, st in zip(out_strides, strides)):
            out_dims[-1] *= size
            for s, st in zip(out_strides, strides):
                s[-1] = st[d]
        else:
            out_dims.append(size)
            for s, st in zip(out_strides, strides):
                s.append(st[d])
    return tuple(out_dims), tuple(tuple(s) for s in out_strides)


def broadcast_plan(
    shapes: Sequence[Sequence[int]], out_shape: Sequence[int] | None = None
) -> BroadcastPlan:
    """The plan for inputs of ``shapes`` broadcast numpy-style (to ``out_shape`` if given).

    Raises ValueError when the shapes do not broadcast (to ``out_shape``).
    """
    shapes = [tuple(int(d) for d in s) for s in shapes]
    if out_shape is None:
        ndim = max((len(s) for s in shapes), default=0)
        out: list[int] = []
        for axis in range(ndim):
            sizes = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0}
            sizes.discard(1)
            if len(sizes) > 1:
                raise ValueError(f"shapes {shapes} do not broadcast")
            out.append(sizes.pop() if sizes else 1)
        target: Shape = tuple(out)
    else:
        target = tuple(int(d) for d in out_shape)
    ndim = len(target)
    strides = []
    for s in shapes:
        if len(s) > ndim:
            raise ValueError(f"shape {list(s)} does not broadcast to {list(target)}")
        padded = (1,) * (ndim - len(s)) + s
        if any(p not in (1, t) for p, t in zip(padded, target)):
            raise ValueError(f"shape {list(s)} does not broadcast to {list(target)}")
        contiguous = contiguous_strides(padded)
        strides.append(tuple(0 if p == 1 else c for p, c in zip(padded, contiguous)))
    dims, merged = _coalesce(target, strides)
    return BroadcastPlan(target, dims, merged)


@dataclass(frozen=True, slots=True)
class ReducePlan:
    """A reduction of a C-contiguous array: output o reads x at offset
    ``offset(o, out_dims, out_strides) + offset(j, red_dims, red_strides)`` for each j."""

    out_dims: Shape  #: kept dims, coalesced; (1,) when nothing is kept
    out_strides: Shape
    red_dims: Shape  #: reduced dims, coalesced; (1,) when nothing is reduced
    red_strides: Shape
    out_count: int  #: number of outputs
    red_count: int  #: number of elements reduced into each output


def _padded(dims: Shape, strides: Shape) -> tuple[Shape, Shape]:
    # NOTE: never hand a kernel an empty index array (zero-size device allocations)
    return (dims, strides) if dims else ((1,), (0,))


def reduce_plan(shape: Sequence[int], axes: Sequence[int]) -> ReducePlan:
    """The plan reducing an array of ``shape`` over ``axes`` (non-negative, any order)."""
    shape = tuple(int(d) for d in shape)
    strides = contiguous_strides(shape)
    reduced = set(axes)
    kept = [d for d in range(len(shape)) if d not in reduced]
    gone = [d for d in range(len(shape)) if d in reduced]
    out_dims, (out_strides,) = _coalesce(
        [shape[d] for d in kept], [tuple(strides[d] for d in kept)]
    )
    red_dims, (red_strides,) = _coalesce(
        [shape[d] for d in gone], [tuple(strides[d] for d in gone)]
    )
    out_dims, out_strides = _padded(out_dims, out_strides)
    red_dims, red_strides = _padded(red_dims, red_strides)
    return ReducePlan(
        out_dims,
        out_strides,
        red_dims,
        red_strides,
        math.prod(shape[d] for d in kept),
        math.prod(shape[d] for d in gone),
    )


def chunking(out_count: int, red_count: int, width: int, min_chunk: int = 32) -> tuple[int, int]:
    """(chunks, chunk_len): split each output's ``red_count`` elements into chunks so about
    ``width`` threads have work, each chunk at least ``min_chunk`` long. One chunk means a
    single pass; more mean a second pass that reduces the chunks' partial results."""
    if red_count <= min_chunk or out_count >= width:
        return 1, max(red_count, 1)
    chunks = min(math.ceil(width / out_count), math.ceil(red_count / min_chunk))
    chunk_len = math.ceil(red_count / chunks)
    return math.ceil(red_count / chunk_len), chunk_len


def contiguous_reduction(shape: Sequence[int], axes: Sequence[int]) -> tuple[int, int, int] | None:
    """(A, R, B) when reducing ``shape`` over ``axes`` is reducing the middle axis of the
    array seen as [A, R, B] (the reduced axes are adjacent once size-1 axes are dropped):
    a loss, a batch mean, a bias gradient, a softmax row. None for scattered axes."""
    reduced = set(axes)
    run: list[int] = []     # positions (among the size>1 dims) of reduced dims
    sizes = [(int(d), i in reduced) for i, d in enumerate(shape) if int(d) != 1]
    for position, (_, is_reduced) in enumerate(sizes):
        if is_reduced:
            if run and run[-1] != position - 1:
                return None
            run.append(position)
    if not run:
        return math.prod(d for d, _ in sizes), 1, 1
    before = math.prod(d for d, _ in sizes[: run[0]])
    middle = math.prod(d for d, _ in sizes[run[0] : run[-1] + 1])
    after = math.prod(d for d, _ in sizes[run[-1] + 1 :])
    return before, middle, after


"""zmtf's StridedSlice spec <-> TensorFlow's begin/end/strides and masks.

Shared by the op builder (``tf.strided_slice`` in selection_ops.py) and the GraphDef mapping
(interop/graph_def_ops.py); it sits in the op layer so that the op builder needs nothing above it.
"""

from __future__ import annotations

from typing import Any

MASKS = ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask")
_MASKS = MASKS


def spec_to_strided_slice(spec: list[list[Any]]) -> tuple[list[list[Any]], dict[str, int]]:
    """([begin, end, strides], masks) of a zmtf StridedSlice spec. A bound is an int, a
    ``["in", k, ...]`` reference to a tensor input, or None where TF ignores the value (a
    masked bound, the end of a tensor index, newaxis / ellipsis); TF writes 0 there (stride 1)."""
    rows: list[list[Any]] = [[], [], []]
    masks = dict.fromkeys(_MASKS, 0)
    for i, entry in enumerate(spec):
        kind = entry[0]
        begin = end = stride = None
        if kind == "n":
            masks["new_axis_mask"] |= 1 << i
        elif kind == "e":
            masks["ellipsis_mask"] |= 1 << i
        elif kind == "i":
            begin = entry[1]
            end = begin + 1 if isinstance(begin, int) else None   # TF takes begin + 1 anyway
            masks["shrink_axis_mask"] |= 1 << i
        else:
            begin, end, step = entry[1:]
            stride = 1 if step is None else step
            masks["begin_mask"] |= (begin is None) << i
            masks["end_mask"] |= (end is None) << i
        for row, value in zip(rows, (begin, end, stride)):
            row.append(value)
    return rows, masks


def strided_slice_to_spec(begin: list[int], end: list[int], strides: list[int],
                          masks: dict[str, int]) -> list[list[Any]]:
    """A zmtf StridedSlice spec of TF's bounds and masks (TF's mask precedence)."""
    if not len(begin) == len(end) == len(strides):
        raise ValueError(f"begin {begin}, end {end} and strides {strides} differ in length")
    spec: list[list[Any]] = []
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if masks["ellipsis_mask"] >> i & 1:
            spec.append(["e"])
        elif masks["new_axis_mask"] >> i & 1:
            spec.append(["n"])
        elif masks["shrink_axis_mask"] >> i & 1:
            spec.append(["i", b])
        else:
            if s == 0:
                raise ValueError("strides must be non-zero")
            spec.append(["s", None if masks["begin_mask"] >> i & 1 else b,
                         None if masks["end_mask"] >> i & 1 else e, s])
    return spec


__all__ = ["MASKS", "spec_to_strided_slice", "strided_slice_to_spec"]

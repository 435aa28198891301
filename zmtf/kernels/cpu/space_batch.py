"""SpaceToDepth / DepthToSpace and SpaceToBatchND / BatchToSpaceND on CPU: reshapes and
transposes in numpy (the data only moves)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import ALL, check_output_size, shape_str
from zmtf.kernels.registry import register


def _rank4(x: np.ndarray, op: str, node: str) -> None:
    if x.ndim != 4:
        raise InvalidArgumentError(f"{op} (node '{node}'): input rank should be 4 instead of "
                                   f"{x.ndim} (shape {shape_str(x.shape)})")


@register("SpaceToDepth", dtypes=ALL)
def space_to_depth(ctx: Any, inputs: list, attrs: dict) -> list:
    x, block, node = inputs[0], int(attrs["block_size"]), attrs["_node_name"]
    _rank4(x, "SpaceToDepth", node)
    b, h, w, c = x.shape
    if h % block or w % block:
        raise InvalidArgumentError(f"SpaceToDepth (node '{node}'): Image width {w} and height {h} "
                                   f"should be divisible by block_size: {block}")
    blocks = x.reshape(b, h // block, block, w // block, block, c).transpose(0, 1, 3, 2, 4, 5)
    return [np.ascontiguousarray(blocks).reshape(b, h // block, w // block, block * block * c)]


@register("DepthToSpace", dtypes=ALL)
def depth_to_space(ctx: Any, inputs: list, attrs: dict) -> list:
    x, block, node = inputs[0], int(attrs["block_size"]), attrs["_node_name"]
    _rank4(x, "DepthToSpace", node)
    b, h, w, c = x.shape
    if c % (block * block):
        raise InvalidArgumentError(f"DepthToSpace (node '{node}'): Input depth dimension {c} should "
                                   f"be divisible by: {block * block}")
    depth = c // (block * block)
    blocks = x.reshape(b, h, w, block, block, depth).transpose(0, 1, 3, 2, 4, 5)
    return [np.ascontiguousarray(blocks).reshape(b, h * block, w * block, depth)]


def _checked_blocks(x: np.ndarray, block_shape: np.ndarray, pads: np.ndarray, op: str,
                    node: str) -> tuple[list[int], np.ndarray]:
    block = [int(v) for v in np.asarray(block_shape).reshape(-1)]
    pads = np.asarray(pads, np.int64)
    if pads.shape != (len(block), 2):
        raise InvalidArgumentError(f"{op} (node '{node}'): paddings/crops should have shape "
                                   f"[{len(block)}, 2] instead of {shape_str(pads.shape)}")
    if x.ndim < 1 + len(block):
        raise InvalidArgumentError(f"{op} (node '{node}'): input rank should be >= "
                                   f"{1 + len(block)} instead of {x.ndim}")
    if any(v < 1 for v in block) or (pads < 0).any():
        raise InvalidArgumentError(f"{op} (node '{node}'): block_shape must be positive and "
                                   f"paddings/crops non-negative, got {block} and {pads.tolist()}")
    return block, pads


@register("SpaceToBatchND", dtypes=ALL)
def space_to_batch_nd(ctx: Any, inputs: list, attrs: dict) -> list:
    x, node = inputs[0], attrs["_node_name"]
    block, pads = _checked_blocks(x, inputs[1], inputs[2], "SpaceToBatchND", node)
    m = len(block)
    padded_shape = [x.shape[0]] + [d + a + b for d, (a, b) in zip(x.shape[1:], pads.tolist())]
    check_output_size(padded_shape + list(x.shape[1 + m:]), x.dtype, node)
    padded = np.pad(x, [(0, 0), *pads.tolist(), *[(0, 0)] * (x.ndim - 1 - m)])
    spatial = padded.shape[1:1 + m]
    for axis, (size, step) in enumerate(zip(spatial, block)):
        if size % step:
            raise InvalidArgumentError(f"SpaceToBatchND (node '{node}'): padded_shape[{axis}]={size} "
                                       f"is not divisible by block_shape[{axis}]={step}")
    rest = padded.shape[1 + m:]
    split = [x.shape[0]] + [v for size, step in zip(spatial, block) for v in (size // step, step)]
    moved = padded.reshape(split + list(rest))
    order = [2 + 2 * i for i in range(m)] + [0] + [1 + 2 * i for i in range(m)]
    order += list(range(1 + 2 * m, 1 + 2 * m + len(rest)))
    out_shape = [x.shape[0] * int(np.prod(block))] + [s // b for s, b in zip(spatial, block)]
    return [np.ascontiguousarray(moved.transpose(order)).reshape(out_shape + list(rest))]


@register("BatchToSpaceND", dtypes=ALL)
def batch_to_space_nd(ctx: Any, inputs: list, attrs: dict) -> list:
    x, node = inputs[0], attrs["_node_name"]
    block, crops = _checked_blocks(x, inputs[1], inputs[2], "BatchToSpaceND", node)
    m, blocks = len(block), int(np.prod(block))
    if x.shape[0] % blocks:
        raise InvalidArgumentError(f"BatchToSpaceND (node '{node}'): input batch dimension "
                                   f"({x.shape[0]}) is not divisible by product of block sizes "
                                   f"({blocks})")
    spatial, rest = x.shape[1:1 + m], x.shape[1 + m:]
    batch = x.shape[0] // blocks
    moved = x.reshape(list(block) + [batch] + list(spatial) + list(rest))
    order = [m] + [v for i in range(m) for v in (m + 1 + i, i)]
    order += list(range(2 * m + 1, 2 * m + 1 + len(rest)))
    full = [s * b for s, b in zip(spatial, block)]
    out = np.ascontiguousarray(moved.transpose(order)).reshape([batch] + full + list(rest))
    for axis, (lo, hi) in enumerate(crops.tolist()):
        if lo + hi > full[axis]:
            raise InvalidArgumentError(f"BatchToSpaceND (node '{node}'): crops {crops.tolist()} "
                                       f"exceed the size {full[axis]} of spatial dim {axis}")
    window = tuple([slice(None)] + [slice(lo, full[i] - hi) for i, (lo, hi) in
                                    enumerate(crops.tolist())])
    return [np.ascontiguousarray(out[window])]

"""Moving spatial blocks into depth or batch and back: SpaceToDepth / DepthToSpace and
SpaceToBatchND / BatchToSpaceND (with TF1's space_to_batch / batch_to_space wrappers).

Each pair is the other's gradient, as in TF. Static output shapes are computed when the
block sizes and paddings (crops) are constants, with TF's divisibility errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.static_dims import static_dims
from zmtf.framework.tensor_shape import TensorShape


def _const_value(t: Tensor) -> np.ndarray | None:
    return np.asarray(t.op.get_attr("value")) if t.op.type == "Const" else None


def _divided(size: int | None, block: int, what: str) -> int | None:
    if size is None:
        return None
    if size % block:
        raise ValueError(f"Dimension size must be evenly divisible by {block} but is {size} "
                         f"for '{what}'")
    return size // block


# ---- SpaceToDepth / DepthToSpace -------------------------------------------------------------
def _nhwc_dims(x: Tensor, attrs: dict[str, Any], op_type: str) -> list[int | None]:
    if attrs["block_size"] < 2:
        raise ValueError(f"Attr 'block_size' of '{op_type}' Op passed {attrs['block_size']} less "
                         f"than minimum 2.")
    if attrs["data_format"] != "NHWC":
        raise ValueError(f"{op_type}: zmtf's CPU kernel supports data_format='NHWC' only, got "
                         f"{attrs['data_format']!r}; transpose NCHW input to NHWC first")
    return static_dims(x, 4, op_type)


@op_def("SpaceToDepth")
def _space_to_depth_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    batch, height, width, depth = _nhwc_dims(x, attrs, "SpaceToDepth")
    block = attrs["block_size"]
    out_depth = None if depth is None else depth * block * block
    return [(x.dtype, TensorShape([batch, _divided(height, block, "SpaceToDepth"),
                                   _divided(width, block, "SpaceToDepth"), out_depth]))]


@op_def("DepthToSpace")
def _depth_to_space_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x = inputs[0]
    batch, height, width, depth = _nhwc_dims(x, attrs, "DepthToSpace")
    block = attrs["block_size"]
    return [(x.dtype, TensorShape([batch, None if height is None else height * block,
                                   None if width is None else width * block,
                                   _divided(depth, block * block, "DepthToSpace")]))]


def _block_op(op_type: str, input: Any, block_size: int, name: str | None,  # noqa: A002
              data_format: str) -> Tensor:
    with get_default_graph().name_scope(name or op_type) as scope:
        x = convert_to_tensor(input, name="input")
        attrs = {"block_size": int(block_size), "data_format": data_format}
        return apply_op(op_type, [x], attrs, name=scope).outputs[0]


def space_to_depth(input: Any, block_size: int, name: str | None = None,  # noqa: A002
                   data_format: str = "NHWC") -> Tensor:
    """[b, h, w, c] -> [b, h/bs, w/bs, c*bs*bs]: each bs x bs block becomes depth
    (row-major over the block, then channels)."""
    return _block_op("SpaceToDepth", input, block_size, name, data_format)


def depth_to_space(input: Any, block_size: int, name: str | None = None,  # noqa: A002
                   data_format: str = "NHWC") -> Tensor:
    """The inverse of space_to_depth: [b, h, w, c] -> [b, h*bs, w*bs, c/(bs*bs)]."""
    return _block_op("DepthToSpace", input, block_size, name, data_format)


@gradient("SpaceToDepth")
def _space_to_depth_grad(op: Operation, grad: Tensor) -> list:
    return [depth_to_space(grad, op.get_attr("block_size"))]


@gradient("DepthToSpace")
def _depth_to_space_grad(op: Operation, grad: Tensor) -> list:
    return [space_to_depth(grad, op.get_attr("block_size"))]


# ---- SpaceToBatchND / BatchToSpaceND ---------------------------------------------------------
def _block_args(x: Tensor, block_shape: Tensor, pads: Tensor, op_type: str) -> tuple:
    """(input dims or None, block list or None, [M, 2] pads array or None), checked."""
    if block_shape.shape.ndims not in (None, 1):
        raise ValueError(f"{op_type}: block_shape must be 1-D, got shape {block_shape.shape}")
    block = _const_value(block_shape)
    pairs = _const_value(pads)
    if block is not None:
        if (block < 1).any():
            raise ValueError(f"{op_type}: block_shape must be positive, got {block.tolist()}")
        if pairs is not None and pairs.shape != (block.size, 2):
            raise ValueError(f"{op_type}: paddings/crops must have shape [{block.size}, 2], got "
                             f"{list(pairs.shape)}")
    if pairs is not None and (pairs < 0).any():
        raise ValueError(f"{op_type}: paddings/crops must be non-negative, got {pairs.tolist()}")
    dims = x.shape.as_list() if x.shape.ndims is not None else None
    if dims is not None and block is not None and len(dims) < 1 + block.size:
        raise ValueError(f"{op_type}: input rank {len(dims)} must be at least 1 + "
                         f"len(block_shape) = {1 + block.size}")
    return dims, block, pairs


@op_def("SpaceToBatchND")
def _space_to_batch_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, block_shape, paddings = inputs
    dims, block, pads = _block_args(x, block_shape, paddings, "SpaceToBatchND")
    if dims is None or block is None:
        return [(x.dtype, TensorShape(None if dims is None else [None] * len(dims)))]
    blocks = int(np.prod(block))
    out = [None if dims[0] is None else dims[0] * blocks]
    for axis, size in enumerate(block.tolist()):
        dim = dims[1 + axis]
        padded = None if dim is None or pads is None else dim + int(pads[axis].sum())
        out.append(_divided(padded, size, "SpaceToBatchND"))
    return [(x.dtype, TensorShape(out + dims[1 + block.size:]))]


@op_def("BatchToSpaceND")
def _batch_to_space_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, block_shape, crops = inputs
    dims, block, crop = _block_args(x, block_shape, crops, "BatchToSpaceND")
    if dims is None or block is None:
        return [(x.dtype, TensorShape(None if dims is None else [None] * len(dims)))]
    out = [_divided(dims[0], int(np.prod(block)), "BatchToSpaceND")]
    for axis, size in enumerate(block.tolist()):
        dim = dims[1 + axis]
        full = None if dim is None or crop is None else dim * size - int(crop[axis].sum())
        if full is not None and full < 0:
            raise ValueError(f"BatchToSpaceND: crops {crop.tolist()} are larger than the "
                             f"uncropped size {dim * size} of dimension {1 + axis}")
        out.append(full)
    return [(x.dtype, TensorShape(out + dims[1 + block.size:]))]


def _int_tensor(value: Any, name: str) -> Tensor:
    if isinstance(value, Tensor):
        return value
    return convert_to_tensor(np.asarray(value, np.int32), name=name)


def _nd_op(op_type: str, input: Any, block_shape: Any, pads: Any, pads_name: str,  # noqa: A002
           name: str | None) -> Tensor:
    with get_default_graph().name_scope(name or op_type) as scope:
        x = convert_to_tensor(input, name="input")
        block_t = _int_tensor(block_shape, "block_shape")
        pads_t = _int_tensor(pads, pads_name)
        for arg, t in (("block_shape", block_t), (pads_name, pads_t)):
            if t.dtype not in (dtypes.int32, dtypes.int64):
                raise TypeError(f"{op_type}: {arg} must be int32 or int64, got {t.dtype.name}")
        return apply_op(op_type, [x, block_t, pads_t], name=scope).outputs[0]


def space_to_batch_nd(input: Any, block_shape: Any, paddings: Any,  # noqa: A002
                      name: str | None = None) -> Tensor:
    """Zero-pad the M spatial dims after the batch, then move each block_shape block of them
    into the batch: [b, *spatial, *rest] -> [b * prod(block), *(padded / block), *rest]."""
    return _nd_op("SpaceToBatchND", input, block_shape, paddings, "paddings", name)


def batch_to_space_nd(input: Any, block_shape: Any, crops: Any,  # noqa: A002
                      name: str | None = None) -> Tensor:
    """The inverse of space_to_batch_nd, then ``crops`` cut from each spatial dim."""
    return _nd_op("BatchToSpaceND", input, block_shape, crops, "crops", name)


def _square_block(block_size: Any, block_shape: Any, fn: str) -> np.ndarray:
    size = block_size if block_size is not None else block_shape
    if size is None:
        raise TypeError(f"{fn}() needs block_size")
    return np.array([int(size), int(size)], np.int64)


def space_to_batch(input: Any, paddings: Any, block_size: Any = None,  # noqa: A002
                   name: str | None = None, block_shape: Any = None) -> Tensor:
    """TF1's 4-D space_to_batch: space_to_batch_nd with a square block over height and width."""
    block = _square_block(block_size, block_shape, "space_to_batch")
    return space_to_batch_nd(input, block, paddings, name=name)


def batch_to_space(input: Any, crops: Any, block_size: Any = None,  # noqa: A002
                   name: str | None = None, block_shape: Any = None) -> Tensor:
    """TF1's 4-D batch_to_space: batch_to_space_nd with a square block over height and width."""
    block = _square_block(block_size, block_shape, "batch_to_space")
    return batch_to_space_nd(input, block, crops, name=name)


@gradient("SpaceToBatchND")
def _space_to_batch_grad(op: Operation, grad: Tensor) -> list:
    return [batch_to_space_nd(grad, op.inputs[1], op.inputs[2]), None, None]


@gradient("BatchToSpaceND")
def _batch_to_space_grad(op: Operation, grad: Tensor) -> list:
    return [space_to_batch_nd(grad, op.inputs[1], op.inputs[2]), None, None]

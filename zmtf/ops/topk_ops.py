"""tf.nn.top_k and tf.nn.in_top_k: the k largest entries along the last axis.

Both take ``k`` as an int input, as TF's TopKV2 and InTopKV2 do, so a fed ``k`` works. When
``k`` is a constant, the shape functions check it against the static last dimension (a
ValueError at graph construction, as in TF); otherwise the kernel checks it at run time.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.tensor_shape import TensorShape


def _constant_k(k: Tensor) -> int | None:
    """k's value when it is a Const node, else None (decided at run time)."""
    if k.op.type != "Const":
        return None
    return int(k.op.attrs["value"])


@op_def("TopKV2")
def _top_k_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    x, k_tensor = inputs
    if k_tensor.shape.ndims not in (None, 0):
        raise ValueError(f"tf.nn.top_k: k must be a scalar, got shape {k_tensor.shape}")
    if x.shape.ndims == 0:
        raise ValueError(f"tf.nn.top_k: input must be at least 1-D, got {x.name} of shape []")
    k = _constant_k(k_tensor)
    if k is not None and k < 0:
        raise ValueError(f"tf.nn.top_k: Need k >= 0, got {k}")
    if x.shape.ndims is None:
        return [(x.dtype, TensorShape(None)), (dtypes.int32, TensorShape(None))]
    dims = x.shape.as_list()
    if k is not None and dims[-1] is not None and dims[-1] < k:
        raise ValueError(f"tf.nn.top_k: input must have last dimension >= k = {k} but is "
                         f"{dims[-1]} ({x.name} of shape {x.shape})")
    shape = TensorShape(dims[:-1] + [k])
    return [(x.dtype, shape), (dtypes.int32, shape)]


def top_k(input: Any, k: Any = 1, sorted: bool = True,  # noqa: A002 (TF's names)
          name: str | None = None) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of the k largest entries along the last axis, largest first;
    equal values keep their order (the lower index first), as TF's CPU kernel. indices are
    int32. ``sorted=False`` is accepted and returns the sorted order too (TF leaves the
    order unspecified then)."""
    x = convert_to_tensor(input)
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"tf.nn.top_k: input must be a real number type, got {x.dtype.name}")
    k_tensor = convert_to_tensor(k, dtype=dtypes.int32, name="k")
    op = apply_op("TopKV2", [x, k_tensor], {"sorted": bool(sorted)}, name=name or "TopKV2")
    return op.outputs[0], op.outputs[1]


@op_def("InTopKV2")
def _in_top_k_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    predictions, targets, k = inputs
    if predictions.dtype != dtypes.float32:
        raise TypeError(f"tf.nn.in_top_k: predictions must be float32, got "
                        f"{predictions.dtype.name} ({predictions.name}); cast them with tf.cast")
    if targets.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"tf.nn.in_top_k: targets must be int32 or int64, got {targets.dtype.name}")
    if predictions.shape.ndims not in (None, 2):
        raise ValueError(f"tf.nn.in_top_k: predictions must be 2-dimensional, got "
                         f"{predictions.shape}")
    if targets.shape.ndims not in (None, 1):
        raise ValueError(f"tf.nn.in_top_k: targets must be 1-dimensional, got {targets.shape}")
    if k.shape.ndims not in (None, 0):
        raise ValueError(f"tf.nn.in_top_k: k must be a scalar, got shape {k.shape}")
    batch = predictions.shape[:1] if predictions.shape.ndims is not None else TensorShape([None])
    if targets.shape.ndims is not None:
        if not batch.is_compatible_with(targets.shape):
            raise ValueError(f"tf.nn.in_top_k: First dimension of predictions {predictions.shape} "
                             f"must match length of targets {targets.shape}")
        batch = batch.merge_with(targets.shape)
    return [(dtypes.bool_, batch)]


def in_top_k(predictions: Any, targets: Any, k: Any, name: str | None = None) -> Tensor:
    """bool [batch]: whether ``predictions[i, targets[i]]`` is among the k largest of row i.
    Ties count in the target's favour (true when fewer than k entries are strictly greater);
    a non-finite target prediction gives False."""
    p = convert_to_tensor(predictions)
    t = convert_to_tensor(targets)
    k_dtype = t.dtype if t.dtype in (dtypes.int32, dtypes.int64) else dtypes.int32
    k_tensor = convert_to_tensor(k, dtype=k_dtype, name="k")
    return apply_op("InTopKV2", [p, t, k_tensor], name=name or "in_top_k").outputs[0]


@op_def("TopKGrad")
def _top_k_grad_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    known = attrs.get("_static_shape")
    return [(inputs[0].dtype, TensorShape(known) if known is not None else TensorShape(None))]

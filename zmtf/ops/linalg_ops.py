"""Linear-algebra helpers TF1 scripts use, built from existing ops so that their gradients
come for free: ``tf.tensordot``, ``tf.norm``, ``tf.matrix_transpose``."""

from __future__ import annotations

import math
from typing import Any, Sequence

from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor


def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Swap the last two axes (of a rank >= 2 tensor with a known rank)."""
    with get_default_graph().name_scope(name):
        t = convert_to_tensor(a)
        rank = t.shape.ndims
        if rank is None or rank < 2:
            raise ValueError(f"matrix_transpose needs a tensor of known rank >= 2, got shape {t.shape}")
        return array_ops.transpose(t, list(range(rank - 2)) + [rank - 1, rank - 2])


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Sum over ``axes`` of a and b (an int: a's last n with b's first n; or two lists):
    the free axes of a, then b's, as TF does, through one matmul (static shapes)."""
    with get_default_graph().name_scope(name or "Tensordot"):
        a, b = convert_to_tensor(a), convert_to_tensor(b)
        a_shape, b_shape = a.shape.as_list(), b.shape.as_list()
        if None in a_shape or None in b_shape:
            raise ValueError(f"tensordot needs fully known shapes in zmtf, got {a.shape} and {b.shape}")
        if isinstance(axes, int):
            a_axes, b_axes = list(range(len(a_shape) - axes, len(a_shape))), list(range(axes))
        else:
            a_axes, b_axes = (_axis_list(x, n) for x, n in zip(axes, (len(a_shape), len(b_shape))))
        if [a_shape[i] for i in a_axes] != [b_shape[i] for i in b_axes]:
            raise ValueError(f"tensordot: summed axes {a_axes} of {a_shape} and {b_axes} of "
                             f"{b_shape} differ in size")
        a_free = [i for i in range(len(a_shape)) if i not in a_axes]
        b_free = [i for i in range(len(b_shape)) if i not in b_axes]
        summed = math.prod(a_shape[i] for i in a_axes)
        left = array_ops.reshape(array_ops.transpose(a, a_free + a_axes),
                                 [math.prod(a_shape[i] for i in a_free), summed])
        right = array_ops.reshape(array_ops.transpose(b, b_axes + b_free),
                                  [summed, math.prod(b_shape[i] for i in b_free)])
        product = math_ops.matmul(left, right)
        return array_ops.reshape(product, [a_shape[i] for i in a_free] + [b_shape[i] for i in b_free])


def _axis_list(axes: Any, rank: int) -> list[int]:
    axes = [axes] if isinstance(axes, int) else list(axes)
    return [a + rank if a < 0 else a for a in axes]


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None, keepdims: bool | None = None,  # noqa: A002
         name: str | None = None, keep_dims: bool | None = None) -> Tensor:
    """Vector norms (``ord`` "euclidean"/2, 1, np.inf, or any p > 0) over ``axis`` (None: the
    whole tensor as one vector), and the Frobenius norm over a pair of axes."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    with get_default_graph().name_scope(name or "norm"):
        x = convert_to_tensor(tensor)
        axes: Sequence[int] | None = None if axis is None else _axis_list(axis, x.shape.ndims or 0)
        if axes is not None and len(axes) == 2 and ord not in ("euclidean", "fro"):
            raise ValueError(f"matrix norm ord={ord!r} is not built in zmtf: use 'euclidean' (Frobenius)")
        if ord in ("euclidean", "fro", 2):
            return math_ops.sqrt(math_ops.reduce_sum(math_ops.square(x), axes, keepdims=keep))
        if ord == 1:
            return math_ops.reduce_sum(math_ops.abs(x), axes, keepdims=keep)
        if ord == math.inf:
            return math_ops.reduce_max(math_ops.abs(x), axes, keepdims=keep)
        if isinstance(ord, (int, float)) and ord > 0:
            powered = math_ops.reduce_sum(math_ops.pow(math_ops.abs(x), float(ord)), axes, keepdims=keep)
            return math_ops.pow(powered, 1.0 / float(ord))
        raise ValueError(f"norm: ord must be 'euclidean', 'fro', 1, 2, np.inf or a positive number, "
                         f"got {ord!r}")

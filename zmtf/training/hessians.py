"""tf.hessians: the second derivatives of the sum of ``ys`` with respect to each x.

TF builds one gradient per element of x inside a tf.while_loop; zmtf unrolls that loop in
Python over the elements, so x's shape must be fully known when the graph is built.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops
from zmtf.training.gradients import gradients


def hessians(ys: Any, xs: Any, name: str = "hessians", colocate_gradients_with_ops: bool = False,
             gate_gradients: bool = False, aggregation_method: Any = None) -> list[Tensor | None]:
    """For each x in ``xs``, the Hessian of ``sum(ys)``: a tensor of shape x.shape + x.shape
    (None where ys do not depend on x)."""
    xs_list = list(xs) if isinstance(xs, (list, tuple)) else [xs]
    with get_default_graph().name_scope(name):
        first = gradients(ys, xs_list)
        return [None if g is None else _second_derivatives(g, x) for g, x in zip(first, xs_list)]


def _second_derivatives(grad: Tensor, x: Tensor) -> Tensor:
    if not x.shape.is_fully_defined():
        raise ValueError(f"tf.hessians in zmtf needs the shape of {x.name} to be fully defined, "
                         f"got {x.shape}")
    n = x.shape.num_elements() or 0
    rows = []
    for i in range(n):   # row i: the gradient of grad's element i, a vector-Jacobian product
        pick = array_ops.reshape(array_ops.one_hot(i, n, dtype=grad.dtype), grad.shape.as_list())
        row = gradients(grad, x, grad_ys=pick)[0]
        rows.append(array_ops.zeros_like(x) if row is None else row)
    stacked = array_ops.stack(rows) if rows else array_ops.zeros([0] + x.shape.as_list(), x.dtype)
    return array_ops.reshape(stacked, x.shape.as_list() * 2)

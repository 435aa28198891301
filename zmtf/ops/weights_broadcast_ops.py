"""TF's weights_broadcast_ops: losses and metrics take ``weights`` that are a scalar or of the
values' rank with every dimension 1 or equal to the values' (stricter than numpy broadcasting,
so a [batch] weight never silently broadcasts along the last axis of [batch, d] values)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.check_ops import assert_
from zmtf.ops.composite_ops import range_
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.control_flow_ops import no_op
from zmtf.ops.selection_ops import gather

_PREFIX = "weights can not be broadcast to values."


def assert_broadcastable(weights: Any, values: Any) -> Operation:
    """A no-op when the shapes are known to fit (ValueError now when known not to), else an
    Assert that fails the step with InvalidArgumentError when they do not."""
    graph = get_default_graph()
    with graph.name_scope("assert_broadcastable"):
        weights, values = convert_to_tensor(weights), convert_to_tensor(values)
        w_rank, v_rank = weights.shape.ndims, values.shape.ndims
        if w_rank is not None and v_rank is not None:
            if w_rank == 0:
                return no_op(name="static_scalar_check_success")
            if w_rank != v_rank:
                raise ValueError(f"{_PREFIX} values.rank={v_rank}. weights.rank={w_rank}. "
                                 f"values.shape={values.shape}. weights.shape={weights.shape}. "
                                 f"Received weights={weights}, values={values}")
            if weights.shape.is_fully_defined() and values.shape.is_fully_defined():
                _check_static_dims(weights, values)
                return no_op(name="static_dims_check_success")
        return _runtime_check(weights, values)


def _check_static_dims(weights: Tensor, values: Tensor) -> None:
    w_dims, v_dims = weights.shape.as_list(), values.shape.as_list()
    for i, (w, v) in enumerate(zip(w_dims, v_dims)):
        if w not in (1, v):
            raise ValueError(f"{_PREFIX} Mismatch at dim {i}. values.shape={np.array(v_dims)}, "
                             f"weights.shape={np.array(w_dims)}. Received weights={weights}, values={values}")


def _runtime_check(weights: Tensor, values: Tensor) -> Operation:
    """Assert: weights are a scalar, or of the values' rank with each dimension 1 or equal."""
    w_shape, v_shape = array_ops.shape(weights), array_ops.shape(values)
    w_rank, v_rank = array_ops.rank(weights), array_ops.rank(values)
    # The first rank(values) entries of [weights' dims, values' dims]: the weights' own dims
    # when the ranks agree, and never an out-of-range read when they do not.
    w_dims = gather(array_ops.concat([w_shape, v_shape], 0), range_(v_rank))
    dims_fit = math_ops.reduce_all(math_ops.logical_or(math_ops.equal(w_dims, 1),
                                                       math_ops.equal(w_dims, v_shape)))
    is_scalar = math_ops.equal(w_rank, 0, name="is_scalar")
    valid = math_ops.logical_or(is_scalar,
                                math_ops.logical_and(math_ops.equal(w_rank, v_rank), dims_fit))
    data = [_PREFIX, "weights.shape=", weights.name, w_shape, "values.shape=", values.name,
            v_shape, "is_scalar=", is_scalar]
    return assert_(valid, data)


def broadcast_weights(weights: Any, values: Any) -> Tensor:
    """``weights`` as the values' shape (weights * ones_like(values)), checked as above."""
    with get_default_graph().name_scope("broadcast_weights"):
        values = convert_to_tensor(values)
        weights = convert_to_tensor(weights, dtype=values.dtype.base_dtype)
        if (weights.shape.is_fully_defined() and values.shape.is_fully_defined()
                and weights.shape.is_compatible_with(values.shape)):
            return weights
        with get_default_graph().control_dependencies([assert_broadcastable(weights, values)]):
            return math_ops.multiply(weights, array_ops.ones_like(values))

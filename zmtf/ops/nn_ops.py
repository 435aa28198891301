"""Neural-network ops under TF's ``tf.nn`` names."""

from __future__ import annotations

from typing import Any

from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops.constant_op import convert_pair, convert_to_tensor
from zmtf.ops.math_ops import matmul
from zmtf.framework.tensor_shape import TensorShape


def relu(features: Any, name: str | None = None) -> Tensor:
    return apply_op("Relu", [convert_to_tensor(features)], name=name).outputs[0]


def relu6(features: Any, name: str | None = None) -> Tensor:
    return apply_op("Relu6", [convert_to_tensor(features)], name=name).outputs[0]


def softplus(features: Any, name: str | None = None) -> Tensor:
    return apply_op("Softplus", [convert_to_tensor(features)], name=name).outputs[0]


@op_def("Softmax", "LogSoftmax")
def _softmax_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def softmax(logits: Any, axis: int | None = None, name: str | None = None, dim: int | None = None) -> Tensor:
    axis = axis if axis is not None else dim
    logits = convert_to_tensor(logits)
    if axis not in (None, -1) and axis != (logits.shape.ndims or 0) - 1:
        raise ValueError("zmtf's softmax supports the last axis only (axis=-1)")
    return apply_op("Softmax", [logits], name=name).outputs[0]


def log_softmax(logits: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    return apply_op("LogSoftmax", [convert_to_tensor(logits)], name=name).outputs[0]


@op_def("SoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits")
def _xent_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    features = inputs[0]
    batch = features.shape[:-1] if features.shape.ndims is not None else TensorShape(None)
    return [(features.dtype, batch), (features.dtype, features.shape)]


def softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                      dim: int = -1, name: str | None = None, axis: int | None = None) -> Tensor:
    """Per-example cross-entropy of softmax(logits) against a distribution ``labels``."""
    _require_named(_sentinel, "softmax_cross_entropy_with_logits")
    logits, labels = convert_pair(logits, labels)
    op = apply_op("SoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return op.outputs[0]


softmax_cross_entropy_with_logits_v2 = softmax_cross_entropy_with_logits


def sparse_softmax_cross_entropy_with_logits(_sentinel: Any = None, labels: Any = None, logits: Any = None,
                                             name: str | None = None) -> Tensor:
    """Per-example cross-entropy of softmax(logits) against integer class ``labels``."""
    _require_named(_sentinel, "sparse_softmax_cross_entropy_with_logits")
    logits = convert_to_tensor(logits)
    labels = convert_to_tensor(labels)
    if labels.dtype.name not in ("int32", "int64"):
        raise ValueError(f"labels must be int32 or int64, got {labels.dtype.name}")
    op = apply_op("SparseSoftmaxCrossEntropyWithLogits", [logits, labels], name=name)
    return op.outputs[0]


def _require_named(sentinel: Any, fn: str) -> None:
    if sentinel is not None:
        raise ValueError(f"Only call `{fn}` with named arguments (labels=..., logits=..., ...)")


@op_def("BiasAdd")
def _bias_add_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(inputs[0].dtype, inputs[0].shape)]


def bias_add(value: Any, bias: Any, data_format: Any = None, name: str | None = None) -> Tensor:
    value, bias = convert_pair(value, bias)
    return apply_op("BiasAdd", [value, bias], name=name).outputs[0]


def xw_plus_b(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """``matmul(x, weights) + biases`` (TF1's tf.nn.xw_plus_b), under scope "xw_plus_b"."""
    with get_default_graph().name_scope(name or "xw_plus_b"):
        return bias_add(matmul(x, weights), biases)


def relu_layer(x: Any, weights: Any, biases: Any, name: str | None = None) -> Tensor:
    """``relu(matmul(x, weights) + biases)`` (TF1's tf.nn.relu_layer)."""
    with get_default_graph().name_scope(name or "relu_layer"):
        return relu(xw_plus_b(x, weights, biases))

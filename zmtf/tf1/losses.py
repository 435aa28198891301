"""``tf.losses``: TF1's loss functions (framework/ops/losses_impl.py), which add themselves to
``GraphKeys.LOSSES`` as TF1's do, ``Reduction``, and the collections' helpers: ``get_losses``,
``get_regularization_losses`` (what get_variable's regularizers made),
``get_regularization_loss`` and ``get_total_loss``."""

from __future__ import annotations

from zmtf.framework.graph import GraphKeys, Tensor, get_default_graph
from zmtf.ops import math_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.losses_impl import (
    Reduction, absolute_difference, add_loss, compute_weighted_loss, cosine_distance, hinge_loss,
    huber_loss, log_loss, mean_pairwise_squared_error, mean_squared_error, sigmoid_cross_entropy,
    softmax_cross_entropy, sparse_softmax_cross_entropy,
)


def get_losses(scope: str | None = None, loss_collection: str = GraphKeys.LOSSES) -> list[Tensor]:
    return get_default_graph().get_collection(loss_collection, scope)


def get_regularization_losses(scope: str | None = None) -> list[Tensor]:
    return get_default_graph().get_collection(GraphKeys.REGULARIZATION_LOSSES, scope)


def get_regularization_loss(scope: str | None = None, name: str = "total_regularization_loss") -> Tensor:
    """The sum of the regularization losses (0.0 when there are none)."""
    losses = get_regularization_losses(scope)
    if not losses:
        return constant(0.0, name=name)
    return math_ops.add_n(losses, name=name)


def get_total_loss(add_regularization_losses: bool = True, name: str = "total_loss",
                   scope: str | None = None) -> Tensor:
    """The sum of the collected losses, plus the regularization losses by default."""
    losses = get_losses(scope) + (get_regularization_losses(scope) if add_regularization_losses else [])
    if not losses:
        raise ValueError("No losses found: build them with tf.losses.* (or tf.losses.add_loss) first")
    return math_ops.add_n(losses, name=name)


__all__ = ["Reduction", "absolute_difference", "add_loss", "compute_weighted_loss", "cosine_distance",
           "get_losses", "get_regularization_loss", "get_regularization_losses", "get_total_loss",
           "hinge_loss", "huber_loss", "log_loss", "mean_pairwise_squared_error", "mean_squared_error",
           "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy"]

"""``tf.losses``: TF1's loss functions (ops/losses_impl.py), which add themselves to
``GraphKeys.LOSSES`` as TF1's do, ``Reduction``, and the collections' helpers: ``get_losses``,
``get_regularization_losses`` (what get_variable's regularizers made),
``get_regularization_loss`` and ``get_total_loss``."""

from zmtf.ops.losses_impl import (
    Reduction, absolute_difference, add_loss, compute_weighted_loss, cosine_distance, get_losses,
    get_regularization_loss, get_regularization_losses, get_total_loss, hinge_loss,
    huber_loss, log_loss, mean_pairwise_squared_error, mean_squared_error, sigmoid_cross_entropy,
    softmax_cross_entropy, sparse_softmax_cross_entropy,
)


__all__ = ["Reduction", "absolute_difference", "add_loss", "compute_weighted_loss", "cosine_distance",
           "get_losses", "get_regularization_loss", "get_regularization_losses", "get_total_loss",
           "hinge_loss", "huber_loss", "log_loss", "mean_pairwise_squared_error", "mean_squared_error",
           "sigmoid_cross_entropy", "softmax_cross_entropy", "sparse_softmax_cross_entropy"]

"""``tf.losses``: TF1's loss functions (scalar weights; the mean over all elements)."""

from zmtf.framework.ops.composite_ops import (
    mean_squared_error, sigmoid_cross_entropy, softmax_cross_entropy, sparse_softmax_cross_entropy,
)

__all__ = ["mean_squared_error", "sigmoid_cross_entropy", "softmax_cross_entropy",
           "sparse_softmax_cross_entropy"]

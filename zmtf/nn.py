"""``tf.nn``: neural-network ops under TF1's names."""

from zmtf.framework.ops.composite_ops import (
    dropout, elu, l2_loss, l2_normalize, leaky_relu, moments, sigmoid_cross_entropy_with_logits,
)
from zmtf.framework.ops.embedding_ops import embedding_lookup
from zmtf.framework.ops.math_ops import sigmoid, tanh
from zmtf.framework.ops.nn_ops import (
    bias_add,
    log_softmax,
    relu,
    relu6,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    softplus,
    sparse_softmax_cross_entropy_with_logits,
)

__all__ = ["bias_add", "dropout", "elu", "embedding_lookup", "l2_loss", "l2_normalize",
           "leaky_relu", "moments", "sigmoid_cross_entropy_with_logits", "log_softmax", "relu", "relu6", "sigmoid", "softmax",
           "softmax_cross_entropy_with_logits", "softmax_cross_entropy_with_logits_v2", "softplus",
           "sparse_softmax_cross_entropy_with_logits", "tanh"]

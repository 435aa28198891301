"""``tf.nn``: neural-network ops under TF1's names."""

from zmtf.ops.composite_ops import (
    batch_normalization, dropout, elu, l2_loss, l2_normalize, leaky_relu, moments, sigmoid_cross_entropy_with_logits,
    softsign,
)
from zmtf.ops.conv_ops import (
    avg_pool, avg_pool2d, conv2d, conv2d_backprop_filter, conv2d_backprop_input, conv2d_transpose,
    max_pool, max_pool2d,
)
from zmtf.ops.conv3d_ops import (
    avg_pool3d, conv3d, conv3d_backprop_filter_v2, conv3d_transpose, max_pool3d,
    max_pool_with_argmax,
)
from zmtf.ops.conv_nd_ops import (
    avg_pool1d, conv1d_transpose, convolution, max_pool1d, pool,
)
from zmtf.ops.conv_variant_ops import (
    atrous_conv2d, conv1d, depthwise_conv2d, depthwise_conv2d_native,
    depthwise_conv2d_native_backprop_filter, depthwise_conv2d_native_backprop_input,
    separable_conv2d,
)
from zmtf.ops.candidate_sampling_ops import (
    compute_accidental_hits, log_uniform_candidate_sampler, uniform_candidate_sampler,
)
from zmtf.ops.ctc_ops import ctc_greedy_decoder, ctc_loss
from zmtf.ops.embedding_ops import embedding_lookup
from zmtf.ops.fused_batch_norm_ops import (
    batch_norm_with_global_normalization, fused_batch_norm,
)
from zmtf.ops.embedding_sparse_ops import embedding_lookup_sparse, safe_embedding_lookup_sparse
from zmtf.ops.sampled_losses import nce_loss, sampled_softmax_loss
from zmtf.ops.sequence_ops import swish
from zmtf.ops.space_batch_ops import depth_to_space, space_to_batch, space_to_depth
from zmtf.ops import rnn_cell
from zmtf.ops.math_ops import sigmoid, tanh
from zmtf.ops.raw_rnn import raw_rnn
from zmtf.ops.rnn import (
    bidirectional_dynamic_rnn, dynamic_rnn, static_bidirectional_rnn, static_rnn,
)
from zmtf.ops.topk_ops import in_top_k, top_k
from zmtf.ops.nn_extras import (
    crelu, local_response_normalization, log_poisson_loss, lrn, normalize_moments, selu,
    sufficient_statistics, weighted_cross_entropy_with_logits, weighted_moments, zero_fraction,
)
from zmtf.ops.nn_ops import (
    bias_add,
    log_softmax,
    relu,
    relu6,
    softmax,
    softmax_cross_entropy_with_logits,
    softmax_cross_entropy_with_logits_v2,
    relu_layer,
    softplus,
    sparse_softmax_cross_entropy_with_logits,
    xw_plus_b,
)

silu = swish  # TF 2.x's name for swish, also under tf.compat.v1.nn

__all__ = [
    "atrous_conv2d", "conv1d", "depthwise_conv2d", "depthwise_conv2d_native",
    "depthwise_conv2d_native_backprop_filter", "depthwise_conv2d_native_backprop_input",
    "separable_conv2d",
    "crelu", "local_response_normalization", "log_poisson_loss", "lrn", "normalize_moments",
    "selu", "sufficient_statistics", "weighted_cross_entropy_with_logits", "weighted_moments",
    "zero_fraction", "relu_layer", "xw_plus_b", "softsign", "avg_pool", "avg_pool2d", "batch_normalization", "bias_add", "conv2d", "conv2d_backprop_filter",
    "conv2d_backprop_input", "conv2d_transpose", "dropout", "elu", "embedding_lookup", "embedding_lookup_sparse", "safe_embedding_lookup_sparse", "in_top_k",
    "bidirectional_dynamic_rnn", "dynamic_rnn", "l2_loss", "l2_normalize", "leaky_relu", "rnn_cell",
    "raw_rnn", "static_bidirectional_rnn", "static_rnn",
    "log_softmax", "max_pool", "max_pool2d", "moments", "relu", "relu6", "sigmoid",
    "sigmoid_cross_entropy_with_logits", "softmax", "softmax_cross_entropy_with_logits",
    "softmax_cross_entropy_with_logits_v2", "softplus", "sparse_softmax_cross_entropy_with_logits",
    "tanh", "top_k", "compute_accidental_hits", "log_uniform_candidate_sampler",
    "uniform_candidate_sampler", "nce_loss", "sampled_softmax_loss", "swish",
    "batch_norm_with_global_normalization", "fused_batch_norm", "silu",
    "depth_to_space", "space_to_batch", "space_to_depth",
    "avg_pool3d", "conv3d", "conv3d_backprop_filter_v2", "conv3d_transpose", "max_pool3d", "max_pool_with_argmax",
    "avg_pool1d", "conv1d_transpose", "convolution", "max_pool1d", "pool",
    "ctc_greedy_decoder", "ctc_loss",
]

"""tf.nn.nce_loss and tf.nn.sampled_softmax_loss, built as TF's ``_compute_sampled_logits``.

The true and sampled classes' rows of ``weights`` (a tensor, a list of shards or a
PartitionedVariable) and ``biases`` are looked up with ``embedding_lookup``, so on a ps each
shard gathers its own rows and the gradient of ``weights`` is an IndexedSlices of those rows
only. Logits have log(expected count) subtracted (the "log Q" correction); sampled classes
that equal a true class of the row can be masked with -FLT_MAX (``remove_accidental_hits``).

Unlike TF, the true and the sampled rows are two lookups rather than one lookup split in two
(the batch may be dynamic and zmtf's Slice takes static bounds); the values are the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops, nn_ops
from zmtf.ops.candidate_sampling_ops import (
    compute_accidental_hits, log_uniform_candidate_sampler,
)
from zmtf.ops.composite_ops import sigmoid_cross_entropy_with_logits
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.embedding_ops import embedding_lookup
from zmtf.ops.sequence_ops import scatter_nd


def _shards(weights: Any) -> list[Any]:
    if isinstance(weights, (list, tuple)) or hasattr(weights, "_get_variable_list"):
        return list(weights)
    return [weights]


def _true_logits(inputs: Tensor, true_w: Tensor, true_b: Tensor, num_true: int) -> Tensor:
    """[batch, num_true]: the dot product of each input row with its true classes' rows."""
    dim = inputs.shape.as_list()[-1] if inputs.shape.ndims == 2 else None
    shape: Any = [-1, num_true, dim] if dim is not None else \
        array_ops.concat([[-1, num_true], array_ops.shape(true_w)[1:2]], 0)
    rows = array_ops.reshape(true_w, shape)
    rows.set_shape([None, num_true, dim])
    dots = math_ops.reduce_sum(array_ops.expand_dims(inputs, 1) * rows, axis=2)
    return dots + array_ops.reshape(true_b, [-1, num_true])


def _hits_mask(labels: Tensor, sampled: Tensor, num_true: int, num_sampled: int,
               like: Tensor) -> Tensor:
    """-FLT_MAX where a row's sampled class is one of its true classes, 0 elsewhere."""
    rows, ids, weights = compute_accidental_hits(labels, sampled, num_true=num_true)
    positions = array_ops.concat([array_ops.reshape(rows, [-1, 1]),
                                  array_ops.reshape(math_ops.cast(ids, dtypes.int32), [-1, 1])], 1)
    shape = array_ops.concat([array_ops.shape(labels)[:1], [num_sampled]], 0)
    mask = scatter_nd(positions, math_ops.cast(weights, like.dtype), shape)
    mask.set_shape([None, num_sampled])
    lowest = convert_to_tensor(np.finfo(like.dtype.np).min, dtype=like.dtype)
    return math_ops.maximum(mask, lowest)  # a class repeated among the true ones adds twice


def _compute_sampled_logits(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                            num_classes: int, num_true: int, sampled_values: Any,
                            remove_accidental_hits: bool, partition_strategy: str,
                            seed: int | None = None) -> tuple[Tensor, Tensor]:
    """(logits [batch, num_true + num_sampled], labels of the same shape), as TF builds them."""
    shards = _shards(weights)
    inputs = convert_to_tensor(inputs)
    labels = math_ops.cast(convert_to_tensor(labels), dtypes.int64)
    labels_flat = array_ops.reshape(labels, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True,
                                                       num_classes, seed=seed)
    sampled, true_expected, sampled_expected = (array_ops.stop_gradient(convert_to_tensor(v))
                                                for v in sampled_values)
    sampled = math_ops.cast(sampled, dtypes.int64)
    true_w = embedding_lookup(shards, labels_flat, partition_strategy=partition_strategy)
    sampled_w = embedding_lookup(shards, sampled, partition_strategy=partition_strategy)
    true_b = embedding_lookup(biases, labels_flat)
    sampled_b = embedding_lookup(biases, sampled)
    true_logits = _true_logits(inputs, true_w, true_b, num_true)
    sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True) + sampled_b
    sampled_logits.set_shape([None, num_sampled])
    if remove_accidental_hits:
        sampled_logits = sampled_logits + _hits_mask(labels, sampled, num_true, num_sampled,
                                                     sampled_logits)
    true_logits = true_logits - math_ops.log(math_ops.cast(true_expected, true_logits.dtype))
    sampled_logits = sampled_logits - math_ops.log(math_ops.cast(sampled_expected, sampled_logits.dtype))
    logits = array_ops.concat([true_logits, sampled_logits], 1)
    targets = array_ops.concat([array_ops.ones_like(true_logits) / float(num_true),
                                array_ops.zeros_like(sampled_logits)], 1)
    return logits, targets


def nce_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int, num_classes: int,
             num_true: int = 1, sampled_values: Any = None, remove_accidental_hits: bool = False,
             partition_strategy: str = "mod", name: str = "nce_loss") -> Tensor:
    """Noise-contrastive estimation loss per example, [batch]: the sum over the true and the
    sampled classes of the logistic loss of telling them apart."""
    with get_default_graph().name_scope(name):
        logits, targets = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled,
                                                  num_classes, num_true, sampled_values,
                                                  remove_accidental_hits, partition_strategy)
        losses = sigmoid_cross_entropy_with_logits(labels=targets, logits=logits,
                                                   name="sampled_losses")
        return math_ops.reduce_sum(losses, axis=1)


def sampled_softmax_loss(weights: Any, biases: Any, labels: Any, inputs: Any, num_sampled: int,
                         num_classes: int, num_true: int = 1, sampled_values: Any = None,
                         remove_accidental_hits: bool = True, partition_strategy: str = "mod",
                         name: str = "sampled_softmax_loss", seed: int | None = None) -> Tensor:
    """Softmax cross entropy per example, [batch], over the true and the sampled classes only."""
    with get_default_graph().name_scope(name):
        logits, targets = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled,
                                                  num_classes, num_true, sampled_values,
                                                  remove_accidental_hits, partition_strategy, seed)
        return nn_ops.softmax_cross_entropy_with_logits_v2(labels=array_ops.stop_gradient(targets),
                                                           logits=logits)

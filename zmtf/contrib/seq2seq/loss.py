"""``sequence_loss``: the weighted per-token cross-entropy of a decoder's logits, averaged or
summed over time and batch as TF1's tf.contrib.seq2seq.sequence_loss does (the averages
divide by the summed weights, the sums by the count of nonzero weights; 0/0 is 0)."""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework.graph import get_default_graph
from zmtf.ops import array_ops, composite_ops, math_ops, nn_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.division_ops import div_no_nan


def _check_ranks(logits: Any, targets: Any, weights: Any) -> None:
    for tensor, rank, layout in ((logits, 3, "[batch_size x sequence_length x logits]"),
                                 (targets, 2, "[batch_size x sequence_length]"),
                                 (weights, 2, "[batch_size x sequence_length]")):
        if tensor.shape.ndims != rank:
            what = {3: "Logits"}.get(rank, "Targets" if tensor is targets else "Weights")
            raise ValueError(f"{what} must be a {layout} tensor")


def sequence_loss(logits: Any, targets: Any, weights: Any, average_across_timesteps: bool = True,
                  average_across_batch: bool = True, sum_over_timesteps: bool = False,
                  sum_over_batch: bool = False,
                  softmax_loss_function: Callable[..., Any] | None = None,
                  name: str | None = None) -> Any:
    """Cross-entropy of ``logits`` [batch, time, classes] against ``targets`` [batch, time]
    (int ids), each token scaled by ``weights`` [batch, time]; a scalar when both the time
    and batch axes are reduced, else [batch] or [time] or [batch, time]."""
    logits, targets, weights = (convert_to_tensor(t) for t in (logits, targets, weights))
    _check_ranks(logits, targets, weights)
    if average_across_timesteps and sum_over_timesteps:
        raise ValueError("average_across_timesteps and sum_over_timesteps cannot be set to True "
                         "at same time.")
    if average_across_batch and sum_over_batch:
        raise ValueError("average_across_batch and sum_over_batch cannot be set to True at same "
                         "time.")
    with get_default_graph().name_scope(name or "sequence_loss"):
        num_classes = array_ops.shape(logits)[2]
        logits_flat = array_ops.reshape(logits, array_ops.stack([-1, num_classes]))
        flat_targets = array_ops.reshape(targets, [-1])
        if softmax_loss_function is None:
            crossent = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=flat_targets,
                                                                       logits=logits_flat)
        else:
            crossent = softmax_loss_function(labels=flat_targets, logits=logits_flat)
        crossent = crossent * array_ops.reshape(weights, [-1])
        if average_across_timesteps and average_across_batch:
            return div_no_nan(math_ops.reduce_sum(crossent), math_ops.reduce_sum(weights))
        if sum_over_timesteps and sum_over_batch:
            count = math_ops.cast(composite_ops.count_nonzero(weights), crossent.dtype)
            return div_no_nan(math_ops.reduce_sum(crossent), count)
        crossent = array_ops.reshape(crossent, array_ops.shape(logits)[0:2])
        crossent.set_shape(logits.shape.as_list()[:2] if logits.shape.ndims else None)
        if average_across_timesteps or average_across_batch:
            axis = [0] if average_across_batch else [1]
            return div_no_nan(math_ops.reduce_sum(crossent, axis=axis),
                              math_ops.reduce_sum(weights, axis=axis))
        if sum_over_timesteps or sum_over_batch:
            axis = [0] if sum_over_batch else [1]
            count = math_ops.cast(composite_ops.count_nonzero(weights, axis=axis), crossent.dtype)
            return div_no_nan(math_ops.reduce_sum(crossent, axis=axis), count)
        return crossent


__all__ = ["sequence_loss"]

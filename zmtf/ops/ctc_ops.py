"""``tf.nn.ctc_loss`` (TF1's signature: SparseTensor labels, time-major logits) over the
CTCLoss op, whose second output is the loss gradient with respect to the logits (as TF's
kernel computes it in the same forward-backward pass), and ``tf.nn.ctc_greedy_decoder``.

The blank is the last class (``num_classes - 1``), as TF1's CTCLoss has it.
"""

from __future__ import annotations

from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import gradient, not_differentiable
from zmtf.framework.graph import Operation, Tensor, get_default_graph
from zmtf.framework.op_def import apply_op, op_def
from zmtf.ops import array_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.static_dims import static_dims
from zmtf.framework.sparse_tensor import SparseTensor
from zmtf.framework.tensor_shape import TensorShape

not_differentiable("CTCGreedyDecoder")


def _time_batch_classes(logits: Tensor, op_type: str) -> list[int | None]:
    if logits.dtype not in (dtypes.float32, dtypes.float64):
        raise TypeError(f"{op_type}: inputs must be float32 or float64, got {logits.dtype.name}")
    return static_dims(logits, 3, f"{op_type} inputs [max_time, batch_size, num_classes]")


@op_def("CTCLoss")
def _ctc_loss_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    logits = inputs[0]
    dims = _time_batch_classes(logits, "CTCLoss")
    return [(logits.dtype, TensorShape([dims[1]])), (logits.dtype, TensorShape(dims))]


@op_def("CTCGreedyDecoder")
def _ctc_greedy_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    logits = inputs[0]
    batch = _time_batch_classes(logits, "CTCGreedyDecoder")[1]
    return [(dtypes.int64, TensorShape([None, 2])), (dtypes.int64, TensorShape([None])),
            (dtypes.int64, TensorShape([2])), (logits.dtype, TensorShape([batch, 1]))]


def ctc_loss(labels: Any, inputs: Any = None, sequence_length: Any = None,
             preprocess_collapse_repeated: bool = False, ctc_merge_repeated: bool = True,
             ignore_longer_outputs_than_inputs: bool = False, time_major: bool = True,
             logits: Any = None) -> Tensor:
    """Per-example CTC loss [batch]: minus the log probability of the ``labels``
    (SparseTensor, int32 values) under the softmax of ``inputs`` [max_time, batch,
    num_classes] (batch-major with ``time_major=False``)."""
    if not isinstance(labels, SparseTensor):
        raise TypeError(f"Expected argument `labels` to be a SparseTensor. Received "
                        f"labels={labels} of type: {type(labels).__name__}")
    scores = inputs if inputs is not None else logits
    if scores is None or sequence_length is None:
        raise TypeError("ctc_loss needs labels, inputs (or logits=) and sequence_length")
    scores_t = convert_to_tensor(scores, name="logits")
    if not time_major:
        scores_t = array_ops.transpose(scores_t, [1, 0, 2])
    values = labels.values
    if values.dtype != dtypes.int32:
        raise TypeError(f"ctc_loss: labels must have int32 values, got {values.dtype.name}")
    with get_default_graph().name_scope("CTCLoss") as scope:
        lengths = convert_to_tensor(sequence_length, dtype=dtypes.int32, name="sequence_length")
        attrs = {"preprocess_collapse_repeated": bool(preprocess_collapse_repeated),
                 "ctc_merge_repeated": bool(ctc_merge_repeated),
                 "ignore_longer_outputs_than_inputs": bool(ignore_longer_outputs_than_inputs)}
        op = apply_op("CTCLoss", [scores_t, labels.indices, values, lengths], attrs,
                      name=scope)
    return op.outputs[0]


@gradient("CTCLoss")
def _ctc_loss_grad(op: Operation, grad_loss: Tensor, unused_grad: Tensor) -> list:
    # the kernel's gradient output, scaled per example; it has no gradient itself (TF's
    # prevent_gradient), so it is not differentiated again
    per_example = array_ops.stop_gradient(op.outputs[1])
    return [array_ops.reshape(grad_loss, [1, -1, 1]) * per_example, None, None, None]


def ctc_greedy_decoder(inputs: Any, sequence_length: Any, merge_repeated: bool = True,
                       blank_index: Any = None) -> tuple:
    """Best-path decoding: the most likely class per step, repeats merged (with
    ``merge_repeated``), blanks dropped; returns ``([SparseTensor decoded], neg_sum_logits)``."""
    scores = convert_to_tensor(inputs, name="inputs")
    if blank_index is not None and blank_index != -1:
        raise NotImplementedError("ctc_greedy_decoder: zmtf supports the default blank (the "
                                  "last class) only, not blank_index")
    lengths = convert_to_tensor(sequence_length, dtype=dtypes.int32, name="sequence_length")
    op = apply_op("CTCGreedyDecoder", [scores, lengths],
                  {"merge_repeated": bool(merge_repeated)}, name="CTCGreedyDecoder")
    indices, values, shape, neg_sum = op.outputs
    return [SparseTensor(indices, values, shape)], neg_sum

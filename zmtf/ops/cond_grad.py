"""Gradients of tf.cond's Switch and Merge (see cond_ops.py).

Merge forwarded the live branch's value, so its gradient goes back into that branch only:
Switch(grad, pred), whose untaken side is dead and makes that branch's gradient ops skip.
A Switch sent its input into one branch, so its gradient is the Merge of its outputs'
gradients (a branch that did not use the value contributes zeros, dead when not taken).
"""

from __future__ import annotations

from zmtf.framework.gradient_registry import gradient
from zmtf.framework.graph import Operation, Tensor
from zmtf.ops import array_ops
from zmtf.ops.cond_ops import merge, switch

Grads = list[Tensor | None]


@gradient("Merge")
def _merge_grad(op: Operation, grad: Tensor, _index_grad: Tensor | None = None) -> Grads:
    pred_name = op.attrs.get("_cond_pred")
    if pred_name is None:
        raise LookupError(f"No gradient defined for operation '{op.name}' (op type: Merge) built "
                          f"outside tf.cond")
    pred = op.graph.get_tensor_by_name(pred_name)
    false_grad, true_grad = switch(grad, pred)
    return [false_grad, true_grad]


@gradient("Switch")
def _switch_grad(op: Operation, false_grad: Tensor | None, true_grad: Tensor | None) -> Grads:
    if false_grad is None and true_grad is None:
        return [None, None]
    false_grad = false_grad if false_grad is not None else array_ops.zeros_like(op.outputs[0])
    true_grad = true_grad if true_grad is not None else array_ops.zeros_like(op.outputs[1])
    return [merge([false_grad, true_grad]), None]

"""Weight gradients beside the backward pass, at bind time (the last of bind's rewrites).

tf.gradients groups each op's gradients in a tuple: whatever reads one of them waits for
all of them. A layer's weight gradient (a MatMul's, a convolution's filter gradient) feeds
only its optimizer's update, yet through the tuple the rest of the backward pass (the layer
below, which needs the layer's *input* gradient) waits for it too, so the weight gradients
sit on the step's critical path one after the other.

A weight gradient here is a pure node (MatMul, Conv2DBackpropFilter) whose value only
stateful nodes read (the optimizer's update, a _Send to the parameter server), and none of
whose inputs can be a variable's memory (no variable reached through ops that may return a
view of it). Its control edges to stateless nodes order nothing anyone can observe and are
dropped; those to stateful nodes (the tuple's other readers: the updates) stay, so no
update runs before the gradients its tuple promised. The node is marked ``BESIDE``: when
another node is ready with it, the executor hands it to the device's pool and goes on with
the backward pass on its own thread (while the machine has a core to spare), and its kernel
keeps its parts on its one thread (``intra_op.one_worker``): the other core is running the
backward pass.

Only a weight gradient with a sibling gets this: another product that reads the same
gradient and carries the pass on (a convolution's input gradient, the dense layer's other
product). A first layer's weight gradient has none (its input needs no gradient): handed to
the pool with only small nodes left beside it, the MLP's first layer cost its step 1.25x.

So a convolution's filter gradient runs beside its input gradient and then beside the layer
below's backward, and a dense layer's weight product beside the product that carries the
gradient on. Measured on the 2-vCPU target (bench/models.py's CNN, one process, alternating
blocks of 20 steps, against the plan without this rewrite): the step 0.853x, 0.874x, 0.875x
in three runs (the two gradients as one node side by side, which this replaces, measured
0.936x the same way). The MLP, LSTM and embedding models: 1.007x, 0.998x, 1.004x.

Values are the same bits: each kernel is unchanged, and its chunks depend on shapes only.
Plans with tf.cond (deadness) are left as they are. Off with the other fusions
(``ZMTF_FUSION=0``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime import intra_op
from zmtf.runtime.conv_fusion import FILTER_OP
from zmtf.runtime.plan_rewrites import (
    has_deadness, has_effects, named_nodes, producers, reaches, slot_readers,
)

#: the attr that marks a weight gradient to run beside the backward pass
BESIDE = "beside_backward"
_WEIGHT_GRADIENTS = frozenset({"Conv2DBackpropFilter", FILTER_OP, "MatMul"})
#: the products that carry the backward pass on to the layer below: a weight gradient's
#: sibling, which reads the same gradient
_CARRIERS = frozenset({"Conv2DBackpropInput", "MatMul", "_SlicedMatMul"})
#: ops whose value may be (a view of) their input's memory: a variable read through them
#: is still the variable's memory, which an update may change while the gradient waits (a
#: same-dtype Cast returns its input, BroadcastTo and the splits numpy views)
_VIEW_OPS = frozenset({
    "Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient", "CheckNumerics",
    "EnsureShape", "PlaceholderWithDefault", "Reshape", "ExpandDims", "Squeeze", "Transpose",
    "Slice", "StridedSlice", "Split", "SplitV", "Unpack", "ReverseV2", "BroadcastTo", "Cast",
    "Bitcast", "_ReadVariableRef", "ReadVariableOp", "_TransposeForMatMul",
})


def run_weight_gradients_beside(plan: StepPlan) -> StepPlan:
    """``plan`` with its weight gradients freed from their tuples' stateless readers and
    marked ``BESIDE`` (the same plan if it has none)."""
    nodes = plan.nodes
    if not any(n.op_type in _WEIGHT_GRADIENTS for n in nodes) or has_deadness(nodes):
        return plan
    producer = producers(nodes)
    named = named_nodes(plan, producer)
    readers = slot_readers(nodes)
    out = list(nodes)
    for i, n in enumerate(nodes):
        if n.op_type not in _WEIGHT_GRADIENTS or i in named or "/device:GPU:" in n.device:
            continue
        data = set().union(*(readers.get(s, ()) for s in n.output_slots))
        if not data or not all(has_effects(nodes[c].op_type) for c in data):
            continue
        if not _has_carrier(nodes, readers, i) or any(_reads_state(nodes, producer, s) for s in n.input_slots):
            continue
        kept = tuple(c for c in n.consumers if c in data or has_effects(nodes[c].op_type))
        for c in set(n.consumers) - set(kept):
            out[c] = replace(out[c], pending_count=out[c].pending_count - 1)
        out[i] = replace(out[i], consumers=kept, attrs={**n.attrs, BESIDE: True})
    return replace(plan, nodes=tuple(out))


def _has_carrier(nodes: tuple[PlannedNode, ...], readers: dict[int, set[int]], i: int) -> bool:
    """Whether another product reads one of node i's inputs, has a stateless reader and
    does not come before node i (the forward product reads the same activation): the
    backward pass goes on through it while node i runs (without one, as for a first layer
    whose input needs no gradient, little would run beside it: it stays as it is)."""
    for s in nodes[i].input_slots:
        for j in readers.get(s, ()):
            if j != i and nodes[j].op_type in _CARRIERS and any(
                    not has_effects(nodes[c].op_type) for t in nodes[j].output_slots for c in readers.get(t, ())
            ) and not reaches(nodes, j, i):
                return True
    return False


def _reads_state(nodes: tuple[PlannedNode, ...], producer: dict[int, int], slot: int) -> bool:
    """Whether the value in ``slot`` may be a stateful node's memory (a variable's), directly
    or through ops that may return a view."""
    seen: set[int] = set()
    todo = [slot]
    while todo:
        p = producer.get(todo.pop())
        if p is None or p in seen:
            continue
        seen.add(p)
        node = nodes[p]
        if has_effects(node.op_type):
            return True
        if node.op_type in _VIEW_OPS:
            todo.extend(node.input_slots)
    return False


class OneWorkerKernel:
    """A ``BESIDE`` node's kernel: run with its parts kept on its thread."""

    def __init__(self, kernel: Callable[..., Any]) -> None:
        self.kernel = kernel

    def __call__(self, ctx: Any, inputs: list, attrs: dict) -> list:
        with intra_op.one_worker():
            return self.kernel(ctx, inputs, attrs)

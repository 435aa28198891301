"""Run a convolution's two gradients side by side, at bind time (after conv_fusion).

A training step's Conv2DBackpropInput and Conv2DBackpropFilter of one layer read the same
out_backprop and nothing of each other, and both are ready at once. They become one node
(PAIR_OP) whose kernel runs them as two parts (kernels/cpu/parts.py): the calling thread one,
the intra-op helper the other, each kernel whole on its thread. Without a helper, CPU to
spare, or when timed slower (parts.run_keyed), they run one after the other, as before,
each splitting its own batch chunks when it can.

Why: split in turn, each kernel's two halves wait for each other and for the hand-off, and
two threads sharing one GEMM's chunks run at ~80%. Measured on the 2-vCPU target (the small
CNN's second layer, 64x13x13x16 -> 32 under 3x3, float32, in one process): filter gradient
1,081-1,086 us and input gradient 1,131-1,139 us on one thread; the two, each split in
turn, 1,780-1,803 us; side by side 1,294-1,312 us.

Values are the same bits as unpaired: each member is its own kernel on its own inputs
(a kernel run inside a part keeps its chunks on its thread, and chunks depend on shapes
only). Both must be on one CPU device, read the same out_backprop, be fetched or targeted by
nobody, and neither wait for the other. Off with the other fusions (``ZMTF_FUSION=0``).
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.framework.memory_budget import charge_to, current_account
from zmtf.kernels.cpu import parts
from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.conv_fusion import FILTER_OP
from zmtf.runtime.fused_kernels import FusedMemberError
from zmtf.runtime.fusion import merge_groups
from zmtf.runtime.plan_rewrites import has_deadness, named_nodes, producers, reaches

PAIR_OP = "_Conv2DGradients"
_INPUT_GRADIENT = "Conv2DBackpropInput"
_FILTER_GRADIENTS = frozenset({"Conv2DBackpropFilter", FILTER_OP})


def pair_conv_gradients(plan: StepPlan) -> StepPlan:
    """``plan`` with each convolution's two gradients as one PAIR_OP node (the same plan if
    it has none)."""
    nodes = plan.nodes
    if not any(n.op_type == _INPUT_GRADIENT for n in nodes) or has_deadness(nodes):
        return plan
    named = named_nodes(plan, producers(nodes))
    filters: dict[tuple[int, str], int] = {}   # (out_backprop slot, device) -> filter gradient
    for i, n in enumerate(nodes):
        if n.op_type in _FILTER_GRADIENTS and _pairable(n) and i not in named:
            filters.setdefault((n.input_slots[2], n.device), i)
    pairs: list[tuple[int, int]] = []
    for i, n in enumerate(nodes):
        if n.op_type == _INPUT_GRADIENT and _pairable(n) and i not in named:
            f = filters.pop((n.input_slots[2], n.device), None)
            if f is not None and not reaches(nodes, i, f) and not reaches(nodes, f, i):
                pairs.append((i, f))
    if not pairs:
        return plan
    return merge_groups(plan, pairs, lambda pair: _pair_node(nodes[pair[0]], nodes[pair[1]]))


def _pairable(node: PlannedNode) -> bool:
    return (len(node.input_slots) >= 3 and len(node.output_slots) == 1
            and "/device:GPU:" not in node.device)


def _pair_node(first: PlannedNode, second: PlannedNode) -> PlannedNode:
    """The node running ``first`` (the input gradient) and ``second`` (the filter
    gradient): first's inputs then second's in, first's value then second's out."""
    names = (first.name, second.name)
    attrs = {"_node_name": first.name, "_device": first.device, "fused_nodes": names,
             "fused_members": tuple((n.name, n.op_type, n.kernel_dtype, n.attrs) for n in (first, second)),
             "first_inputs": len(first.input_slots),
             "_label": f"{first.name} = {PAIR_OP}[{first.op_type}+{second.op_type}]({', '.join(names)})"}
    return PlannedNode(first.name, PAIR_OP, first.device, second.kernel_dtype, attrs,
                       first.input_slots + second.input_slots,
                       first.output_slots + second.output_slots, (), 0)


class ConvGradientPairKernel:
    """The kernel of a PAIR_OP node: its two members' kernels as two parts (``parts``),
    timed per node and out_backprop shape. A member's failure names the member."""

    def __init__(self, attrs: dict, device_type: str, lookup: Callable[[str, str, Any], Any]) -> None:
        self.members = [(name, op, lookup(op, device_type, dtype), member_attrs)
                        for name, op, dtype, member_attrs in attrs["fused_members"]]
        self.first_inputs = attrs["first_inputs"]

    def __call__(self, ctx: Any, inputs: list, attrs: dict) -> list:
        split = self.first_inputs
        member_inputs = (inputs[:split], inputs[split:])
        values: list[Any] = [None, None]
        account = current_account()   # the step's memory account, on the helper's thread too

        def part(k: int, worker: int) -> None:
            name, op, kernel, member_attrs = self.members[k]
            previous = charge_to(account)
            try:
                values[k] = kernel(ctx, member_inputs[k], member_attrs)[0]
            except Exception as exc:  # noqa: BLE001 - named after the member that failed
                raise FusedMemberError(name, op, exc) from exc
            finally:
                charge_to(previous)

        key = (PAIR_OP, attrs["_node_name"], getattr(inputs[2], "shape", None))
        parts.run_keyed(key, 2, lambda workers: parts.run_parts(2, part, workers))
        return values

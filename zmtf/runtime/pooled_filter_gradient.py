"""A first layer's filter gradient from its max pool's gradient, chunk by chunk (bind time,
after conv_fusion).

In a CNN's first layer, ``Conv2D -> bias -> Relu -> MaxPool``, nobody wants the input's
gradient: the gradient of the Relu's input (conv_fusion's POOL_GRAD_OP, with the bias's
sum) is read by the filter gradient alone. The two become one node (POOLED_FILTER_OP) that
computes that gradient a batch chunk at a time (the convolution's own chunks, ~10 images of
28x28) into one small buffer and multiplies each chunk by its columns while it is in cache:
the 64x26x26x16 gradient (2.7 MB) is never written out nor read back.

Values are the same bits as the two nodes: the pool gradient's kernel runs image by image
and adds the bias's sum in the same order, and the filter gradient's GEMMs run over the same
chunks (conv.conv2d_backprop_filter_by_chunks). Inputs that the one-pass kernels do not take
run the two nodes' kernels one after the other. Both nodes must be on one CPU device and
fetched by nobody. Off with the other fusions (``ZMTF_FUSION=0``).
"""

from __future__ import annotations

from typing import Any, Callable

from zmtf.kernels.cpu import conv as conv_kernels
from zmtf.kernels.cpu import pool as pool_kernels
from zmtf.kernels.cpu.common import shape_input
from zmtf.kernels.shapes import sum_to_shape_axes
from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.conv_fusion import FILTER_OP, POOL_GRAD_OP, FusedPoolGradKernel
from zmtf.runtime.fused_kernels import FusedMemberError
from zmtf.runtime.fusion import merge_groups
from zmtf.runtime.plan_rewrites import has_deadness, named_nodes, producers

POOLED_FILTER_OP = "_FusedMaxPoolGradFilter"
_FILTER_GRADIENTS = frozenset({"Conv2DBackpropFilter", FILTER_OP})


def fuse_pooled_filter_gradients(plan: StepPlan) -> StepPlan:
    """``plan`` with each pool gradient read only by a filter gradient joined to it (the
    same plan if there is none)."""
    nodes = plan.nodes
    if not any(n.op_type == POOL_GRAD_OP for n in nodes) or has_deadness(nodes):
        return plan
    named = named_nodes(plan, producers(nodes))
    readers: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        for s in n.input_slots:
            readers.setdefault(s, []).append(i)
    pairs: dict[int, int] = {}   # filter gradient -> its pool gradient
    for p, n in enumerate(nodes):
        if n.op_type != POOL_GRAD_OP or not n.attrs.get("sum_channels") or p in named:
            continue
        users = readers.get(n.output_slots[0], [])
        if len(users) != 1:
            continue
        f = users[0]
        node = nodes[f]
        if (node.op_type in _FILTER_GRADIENTS and f not in named and node.device == n.device
                and len(node.input_slots) >= 3 and node.input_slots.index(n.output_slots[0]) == 2
                and len(node.output_slots) == 1):
            pairs[f] = p
    if not pairs:
        return plan
    return merge_groups(plan, [(p, f) for f, p in pairs.items()],
                        lambda group: _joined_node(nodes[group[0]], nodes[group[1]]))


def _joined_node(pool: PlannedNode, gradient: PlannedNode) -> PlannedNode:
    """Inputs: the pool gradient's, then the filter gradient's but its out_backprop;
    outputs: the bias's gradient, the filter's."""
    members = pool.attrs["fused_members"] + ((gradient.name, gradient.op_type, gradient.kernel_dtype,
                                              gradient.attrs),)
    names = tuple(m[0] for m in members)
    ops = "+".join(m[1] for m in members)
    attrs = {"_node_name": gradient.name, "_device": gradient.device, "fused_nodes": names,
             "pool_attrs": pool.attrs, "filter_member": members[-1],
             "pool_inputs": len(pool.input_slots),
             "_label": f"{gradient.name} = {POOLED_FILTER_OP}[{ops}]({', '.join(names)})"}
    filter_inputs = gradient.input_slots[:2] + gradient.input_slots[3:]
    return PlannedNode(gradient.name, POOLED_FILTER_OP, gradient.device, gradient.kernel_dtype, attrs,
                       pool.input_slots + filter_inputs, (pool.output_slots[1], gradient.output_slots[0]), (), 0)


class PooledFilterGradientKernel:
    """The kernel of a POOLED_FILTER_OP node: the pool gradient chunk by chunk into the
    filter gradient's GEMMs, or, for inputs that path does not take, the pool gradient's
    fused kernel and then the filter gradient's."""

    def __init__(self, attrs: dict, device_type: str, lookup: Callable[[str, str, Any], Any]) -> None:
        self.pool = FusedPoolGradKernel(attrs["pool_attrs"], device_type, lookup)
        self.pool_attrs = attrs["pool_attrs"]
        name, op, dtype, filter_attrs = attrs["filter_member"]
        self.filter = (name, op, lookup(op, device_type, dtype), filter_attrs)
        self.pool_inputs = attrs["pool_inputs"]

    def __call__(self, ctx: Any, inputs: list, attrs: dict) -> list:
        pool_in, filter_in = inputs[:self.pool_inputs], inputs[self.pool_inputs:]
        relu_out, grad, target = pool_in[0], pool_in[2], pool_in[3]
        name, op, kernel, filter_attrs = self.filter
        shape = shape_input(target, self.pool_attrs["_node_name"])
        if sum_to_shape_axes(tuple(relu_out.shape), tuple(shape), self.pool_attrs["_node_name"]) == (0, 1, 2):
            by_images = pool_kernels.relu_pool_grad_by_images(relu_out, grad, self.pool_attrs, True)
            if by_images is not None:
                fill, sums = by_images
                try:
                    gradient = conv_kernels.conv2d_backprop_filter_by_chunks(
                        ctx, filter_in[0], filter_in[1], filter_in[2] if len(filter_in) > 2 else None,
                        filter_attrs, relu_out.shape, relu_out.dtype, fill)
                except Exception as exc:  # noqa: BLE001 - named after the member that failed
                    raise FusedMemberError(name, op, exc) from exc
                if gradient is not None:
                    return [sums.reshape(shape), gradient]
        dx, sums = self.pool(ctx, pool_in, self.pool_attrs)
        try:
            return [sums, kernel(ctx, [filter_in[0], filter_in[1], dx, *filter_in[2:]], filter_attrs)[0]]
        except Exception as exc:  # noqa: BLE001
            raise FusedMemberError(name, op, exc) from exc

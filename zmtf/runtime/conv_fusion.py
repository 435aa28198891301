"""Fuse a plan's convolutions with what follows them, at bind time (as TF's grappler
remapper makes ``_FusedConv2D``).

* ``Conv2D -> Add/AddV2/BiasAdd(bias) [-> Relu]`` becomes one node (CONV_OP): the bias and
  the Relu are applied in one pass over the convolution's output while it is in cache,
  instead of two more nodes each writing a fresh activation (the small CNN's first layer:
  64x26x26x16, 2.7 MB, per node).
* ``MaxPoolGrad -> ReluGrad [-> SumToShape]`` of a Relu's output (the pooled layer's
  gradient, and its bias's) becomes one node (POOL_GRAD_OP): the winner's share times
  ``winner > 0``, and the bias's sum, in the gradient's one pass.
* A Conv2D whose input also feeds a Conv2DBackpropFilter with the same window attributes
  (its gradient in a training step) hands that gradient its im2col columns through an extra
  output slot (FILTER_OP reads it), so the columns are copied once per step, not twice.

Values are the same bits as unfused (the kernels compute each member's formula, and the
GEMMs run over the same chunks). Nodes must be on one CPU device, float32 or float64, the
intermediate values read by nothing else, fetched or targeted by nobody (the values the
fused node outputs may be). Plans with tf.cond stay as they are. Off with elementwise fusion (``ZMTF_FUSION=0``, or the session's
``global_jit_level = OFF``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Sequence

from zmtf.kernels.cpu import conv as conv_kernels
from zmtf.kernels.cpu import pool as pool_kernels
from zmtf.kernels.cpu.common import shape_input
from zmtf.kernels.shapes import sum_to_shape_axes
from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.plan_rewrites import has_deadness, named_nodes, producers, reaches, slot_readers
from zmtf.runtime.fused_kernels import FusedMemberError
from zmtf.runtime.fusion import consumers_of, merged_predecessors
from zmtf.runtime import intra_op  # noqa: F401 - installs the convolutions' helper thread

CONV_OP = "_FusedConv2D"
POOL_GRAD_OP = "_FusedMaxPoolGrad"
FILTER_OP = "_Conv2DBackpropFilterWithColumns"
_BIAS_OPS = frozenset({"Add", "AddV2", "BiasAdd"})
_DTYPES = frozenset({"float32", "float64"})
#: the window attributes a Conv2D and a filter gradient must share for the same columns
_WINDOW_ATTRS = ("strides", "padding", "dilations", "data_format", "explicit_paddings")
#: inputs whose array may change in place during a step (a variable's buffer): not shared
_MUTABLE_SOURCES = frozenset({"Variable", "VariableV2", "ReadVariableOp", "Identity",
                              "RefIdentity", "VarHandleOp", "TemporaryVariable"})


def fuse_convolutions(plan: StepPlan) -> StepPlan:
    """``plan`` with its Conv2D chains fused (the same plan if there are none)."""
    nodes = plan.nodes
    if (not any(n.op_type in ("Conv2D", "MaxPoolGrad") for n in nodes)
            or has_deadness(nodes)):
        return plan
    producer = producers(nodes)
    readers = slot_readers(nodes)
    named = named_nodes(plan, producer)
    taken: set[int] = set()
    chains: list[tuple[list[int], int | None]] = []     # (members, filter gradient to feed)
    for i, n in enumerate(nodes):
        if n.op_type == "MaxPoolGrad" and i not in named and _cpu_float(n) and len(n.input_slots) == 3:
            relu_grad = _only_reader(nodes, readers, i)
            if relu_grad is not None and _is_relu_grad_of_input(nodes[relu_grad], n):
                bias_grad = _bias_gradient(nodes, readers, producer, relu_grad, named)
                chains.append(([i, relu_grad] + ([bias_grad] if bias_grad is not None else []), None))
            continue
        if n.op_type != "Conv2D" or i in named or not _cpu_float(n) or len(n.input_slots) != 2:
            continue
        members = [i]   # the last member's value may be fetched (it is the fused node's)
        add = _only_reader(nodes, readers, i)
        if add is not None and _is_bias_add(nodes[add], n):
            members.append(add)
            relu = None if add in named else _only_reader(nodes, readers, add)
            if relu is not None and nodes[relu].op_type == "Relu" and _same_kind(nodes[relu], n):
                members.append(relu)
        gradient = _filter_gradient(nodes, readers, producer, i, taken)
        if len(members) > 1 or gradient is not None:
            taken.update(members)
            if gradient is not None:
                taken.add(gradient)
            chains.append((members, gradient))
    return _rebuild(plan, chains) if chains else plan


def _cpu_float(node: PlannedNode) -> bool:
    return node.kernel_dtype in _DTYPES and "/device:GPU:" not in node.device and len(node.output_slots) == 1


def _same_kind(node: PlannedNode, conv: PlannedNode) -> bool:
    return (node.device == conv.device and node.kernel_dtype == conv.kernel_dtype
            and len(node.output_slots) == 1)


def _only_reader(nodes: Sequence[PlannedNode], readers: dict[int, set[int]], i: int) -> int | None:
    """The one node that reads node i's value (once), and the only one that waits for it."""
    node = nodes[i]
    users = readers.get(node.output_slots[0], set())
    if len(node.consumers) != 1 or len(users) != 1:
        return None
    (user,) = users
    if user != node.consumers[0] or nodes[user].input_slots.count(node.output_slots[0]) != 1:
        return None
    return user


def _is_relu_grad_of_input(relu_grad: PlannedNode, pool_grad: PlannedNode) -> bool:
    """ReluGrad(MaxPoolGrad(x, y, g), x): the pooled features are the Relu's output."""
    return (relu_grad.op_type == "ReluGrad" and _same_kind(relu_grad, pool_grad)
            and relu_grad.input_slots == (pool_grad.output_slots[0], pool_grad.input_slots[0]))


def _bias_gradient(nodes: Sequence[PlannedNode], readers: dict[int, set[int]],
                   producer: dict[int, int], relu_grad: int, named: set[int]) -> int | None:
    """A SumToShape of ReluGrad's value (the bias's gradient) that can join its node: the
    ReluGrad's value is then an output of the fused node, not fetched."""
    if relu_grad in named:
        return None
    node = nodes[relu_grad]
    for s in sorted(readers.get(node.output_slots[0], ())):
        sums = nodes[s]
        if (sums.op_type == "SumToShape" and len(sums.input_slots) == 2
                and sums.input_slots[0] == node.output_slots[0] and sums.input_slots[1] != node.output_slots[0]
                and _same_kind(sums, node)):
            shape = producer.get(sums.input_slots[1])
            if shape is None or not reaches(nodes, relu_grad, shape):
                return s
    return None


def _is_bias_add(add: PlannedNode, conv: PlannedNode) -> bool:
    if add.op_type not in _BIAS_OPS or len(add.input_slots) != 2 or not _same_kind(add, conv):
        return False
    if add.op_type == "BiasAdd" and add.attrs.get("data_format", "NHWC") not in ("NHWC", b"NHWC"):
        return False
    return conv.attrs.get("data_format", "NHWC") in ("NHWC", b"NHWC")


def _filter_gradient(nodes: Sequence[PlannedNode], readers: dict[int, set[int]],
                     producer: dict[int, int], i: int, taken: set[int]) -> int | None:
    """The Conv2DBackpropFilter of conv i's input with conv i's window, run after conv i."""
    conv = nodes[i]
    x = conv.input_slots[0]
    source = producer.get(x)
    if source is not None and nodes[source].op_type in _MUTABLE_SOURCES:
        return None
    for f in sorted(readers.get(x, ())):
        node = nodes[f]
        if (node.op_type == "Conv2DBackpropFilter" and f not in taken and node.input_slots[0] == x
                and len(node.input_slots) == 3 and _same_kind(node, conv)
                and all(node.attrs.get(k) == conv.attrs.get(k) for k in _WINDOW_ATTRS)
                and reaches(nodes, i, f)):
            return f
    return None


def _rebuild(plan: StepPlan, chains: list[tuple[list[int], int | None]]) -> StepPlan:
    """Each chain's members as one CONV_OP node at its last member's place; each fed filter
    gradient as a FILTER_OP node reading the columns' new slot and waiting for the chain."""
    nodes = plan.nodes
    owner = {m: k for k, (members, _) in enumerate(chains) for m in members}
    fed = {gradient: k for k, (_, gradient) in enumerate(chains) if gradient is not None}
    last_of = {members[-1]: k for k, (members, _) in enumerate(chains)}
    new_index: dict[int, int] = {}
    kept: list[int] = []
    for i in range(len(nodes)):
        if i in owner and i not in last_of:
            continue
        new_index[i] = len(kept)
        kept.append(i)
    for i, k in owner.items():
        new_index[i] = new_index[chains[k][0][-1]]
    preds = merged_predecessors(nodes, new_index, len(kept))
    column_slot: dict[int, int] = {}
    for gradient, k in fed.items():
        column_slot[k] = plan.num_slots + len(column_slot)
        preds[new_index[gradient]].add(new_index[chains[k][0][-1]])
    consumers = consumers_of(preds)
    out: list[PlannedNode] = []
    for new, i in enumerate(kept):
        waited_by, waits = tuple(sorted(consumers[new])), len(preds[new])
        if i in last_of:
            k = last_of[i]
            node = _fused_node(nodes, chains[k][0], column_slot.get(k))
        elif i in fed:
            n = nodes[i]
            attrs = {**n.attrs, "_label": f"{n.name} = {FILTER_OP}(columns of "
                                          f"{nodes[chains[fed[i]][0][0]].name})"}
            node = replace(n, op_type=FILTER_OP, attrs=attrs,
                           input_slots=(*n.input_slots, column_slot[fed[i]]))
        else:
            node = nodes[i]
        out.append(replace(node, consumers=waited_by, pending_count=waits))
    return replace(plan, nodes=tuple(out), num_slots=plan.num_slots + len(column_slot),
                   roots=tuple(i for i, n in enumerate(out) if n.pending_count == 0),
                   targets=tuple(new_index[t] for t in plan.targets))


def _fused_node(nodes: Sequence[PlannedNode], members: list[int], column_slot: int | None) -> PlannedNode:
    """The node computing ``members`` (its edges are the caller's to set)."""
    first, last = nodes[members[0]], nodes[members[-1]]
    names = tuple(nodes[m].name for m in members)
    ops = "+".join(nodes[m].op_type for m in members)
    common = {"_node_name": last.name, "_device": last.device, "fused_nodes": names,
              "fused_members": tuple((nodes[m].name, nodes[m].op_type, nodes[m].kernel_dtype,
                                      nodes[m].attrs) for m in members)}
    if first.op_type == "MaxPoolGrad":
        inputs, outputs = first.input_slots, nodes[members[1]].output_slots
        if len(members) == 3:   # and the bias's gradient: its shape in, its sum out
            inputs, outputs = inputs + last.input_slots[1:], outputs + last.output_slots
        attrs = {**first.attrs, **common, "sum_channels": len(members) == 3,
                 "_label": f"{last.name} = {POOL_GRAD_OP}[{ops}]({', '.join(names)})"}
        return PlannedNode(last.name, POOL_GRAD_OP, last.device, first.kernel_dtype, attrs,
                           inputs, outputs, (), 0)
    conv_inputs = list(first.input_slots)
    bias_position = None
    if len(members) > 1:
        add = nodes[members[1]]
        bias_position = 1 - add.input_slots.index(first.output_slots[0])
        conv_inputs.append(add.input_slots[bias_position])
    label = f"{last.name} = {CONV_OP}[{ops}]({', '.join(names)})"
    if column_slot is not None:
        label += " (columns kept for the filter gradient)"
    attrs = {**first.attrs, **common, "_label": label, "bias_position": bias_position,
             "relu": len(members) == 3, "keep_columns": column_slot is not None}
    conv_outputs = (last.output_slots[0],) + ((column_slot,) if column_slot is not None else ())
    return PlannedNode(last.name, CONV_OP, last.device, first.kernel_dtype, attrs, tuple(conv_inputs),
                       conv_outputs, (), 0)


class _Chain:
    """A fused node's members' own kernels, for inputs its one-pass kernel does not take;
    a member's failure names the member (``FusedMemberError``)."""

    def __init__(self, attrs: dict, device_type: str, lookup: Callable[..., Any]) -> None:
        self.members = [(name, op, lookup(op, device_type, dtype), member_attrs)
                        for name, op, dtype, member_attrs in attrs["fused_members"]]

    def run(self, ctx: Any, member_inputs: Callable[[int, Any], list], count: int | None = None) -> Any:
        """The value of the last of the first ``count`` members (None: all); member k's
        inputs are ``member_inputs(k, value so far)``."""
        value: Any = None
        for k, (name, op, kernel, member_attrs) in enumerate(self.members[:count]):
            try:
                value = kernel(ctx, member_inputs(k, value), member_attrs)[0]
            except Exception as exc:  # noqa: BLE001 - named after the member that failed
                raise FusedMemberError(name, op, exc) from exc
        return value


class FusedConvKernel(_Chain):
    """The kernel of a CONV_OP node: ``conv.conv2d_bias_relu``, or, for inputs it does not
    take (float16 is excluded by the plan; a bias that is not an [out_c] vector), the
    members' own kernels one after another."""

    def __init__(self, attrs: dict, device_type: str, lookup: Callable[..., Any]) -> None:
        super().__init__(attrs, device_type, lookup)
        self.bias_position = attrs["bias_position"]
        self.relu = bool(attrs["relu"])
        self.keep_columns = bool(attrs["keep_columns"])

    def __call__(self, ctx: Any, inputs: list, attrs: dict) -> list:
        bias = inputs[2] if self.bias_position is not None else None
        outputs = conv_kernels.conv2d_bias_relu(ctx, inputs[0], inputs[1], bias, self.relu, attrs,
                                                self.keep_columns)
        if outputs is not None:
            return outputs

        def member_inputs(k: int, value: Any) -> list:
            if k == 0:
                return inputs[:2]
            if k == 1:
                return [value, inputs[2]] if self.bias_position == 1 else [inputs[2], value]
            return [value]

        value = self.run(ctx, member_inputs)
        return [value, None] if self.keep_columns else [value]


class FusedPoolGradKernel(_Chain):
    """The kernel of a POOL_GRAD_OP node: ``pool.max_pool_grad_relu_grad`` (with the bias's
    gradient when SumToShape joined and sums over all but the channel axis), or the members'
    kernels for inputs that one does not take."""

    def __init__(self, attrs: dict, device_type: str, lookup: Callable[..., Any]) -> None:
        super().__init__(attrs, device_type, lookup)
        self.sum_channels = bool(attrs.get("sum_channels"))

    def __call__(self, ctx: Any, inputs: list, attrs: dict) -> list:
        x, grad = inputs[0], inputs[2]
        if self.sum_channels:
            target = shape_input(inputs[3], attrs["_node_name"])
            axes = sum_to_shape_axes(tuple(x.shape), tuple(target), attrs["_node_name"])
            if axes == (0, 1, 2):
                outputs = pool_kernels.max_pool_grad_relu_grad(ctx, x, grad, attrs, sum_channels=True)
                if outputs is not None:
                    return [outputs[0], outputs[1].reshape(target)]
        else:
            outputs = pool_kernels.max_pool_grad_relu_grad(ctx, x, grad, attrs)
            if outputs is not None:
                return outputs
        dx = self.run(ctx, lambda k, value: inputs[:3] if k == 0 else [value, x], 2)
        if not self.sum_channels:
            return [dx]
        name, op, kernel, sum_attrs = self.members[2]
        try:
            return [dx, kernel(ctx, [dx, inputs[3]], sum_attrs)[0]]
        except Exception as exc:  # noqa: BLE001 - named after the member that failed
            raise FusedMemberError(name, op, exc) from exc


def filter_gradient_kernel(ctx: Any, inputs: list, attrs: dict) -> list:
    """FILTER_OP: Conv2DBackpropFilter with the forward's columns (or None) as a 4th input."""
    return conv_kernels.conv2d_backprop_filter(ctx, inputs, attrs)

"""Drop a plan's plumbing nodes (Identity, NoOp) before it is bound: they cost a step ~3 us
of executor work each and compute nothing.

A training graph is full of them: ``tf.gradients`` wraps each op's gradients in a
``tuple`` (an Identity per tensor, each waiting on a ``group_deps`` NoOp) and every
optimizer ends in a NoOp; they are a third of an unrolled LSTM step's nodes. TF's grappler
(the dependency optimizer) removes them the same way: a removed node's consumers read its
input slot directly and wait, instead of for it, for everything it waited for (its control
edges are forwarded, so every ordering the graph asked for still holds).

Kept, as grappler keeps them: fetched and targeted nodes (a trace shows them). Kept too:
nodes of plans with tf.cond (an Identity after a Switch is a branch's pivot: dead values
travel along its control edges), GPU nodes, Identities of variable references, and
nodes whose removal would add more edges than it saves (a NoOp joining many to many).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.plan_rewrites import has_deadness, named_nodes, predecessors, producers

#: op types that compute nothing: a node of one is pure dependency plumbing
_PLUMBING = frozenset({"Identity", "NoOp"})
#: plans with these run dead branches (tf.cond): control edges carry deadness, so keep all
#: producers whose output an Identity would turn into a value (a reference): keep those
_REF_PRODUCERS = frozenset({"Variable", "VariableV2", "Switch", "RefSwitch"})
#: extra edges a removal may add beyond the ones it saves (edges cost ~0.1 us, a node ~3 us)
_EDGE_SLACK = 8


def prune_plumbing(plan: StepPlan) -> StepPlan:
    """``plan`` without the Identity and NoOp nodes it can do without (the same plan if none)."""
    nodes = plan.nodes
    if has_deadness(nodes) or not any(n.op_type in _PLUMBING for n in nodes):
        return plan
    producer = producers(nodes)
    named = named_nodes(plan, producer)
    preds = predecessors(nodes)
    removed: set[int] = set()
    alias: dict[int, int] = {}              # a removed Identity's output slot -> its input's
    waits: list[set[int]] = [set() for _ in nodes]   # kept nodes each node waits for
    for i, n in enumerate(nodes):           # plan order is a topological order
        for p in preds[i]:
            if p in removed:
                waits[i] |= waits[p]
            else:
                waits[i].add(p)
        if i not in named and _removable(n, nodes, producer, len(waits[i])):
            removed.add(i)
            if n.op_type == "Identity":
                alias[n.output_slots[0]] = alias.get(n.input_slots[0], n.input_slots[0])
    if not removed:
        return plan
    return _rebuild(plan, removed, waits, alias)


def _removable(node: PlannedNode, nodes: Sequence[PlannedNode], producer: dict[int, int],
               num_waits: int) -> bool:
    if node.op_type not in _PLUMBING or "/device:GPU:" in node.device:
        return False
    if node.op_type == "Identity":
        if len(node.input_slots) != 1 or len(node.output_slots) != 1:
            return False
        source = producer.get(node.input_slots[0])
        if source is not None and nodes[source].op_type in _REF_PRODUCERS:
            return False
    fan_out = len(node.consumers)
    return num_waits * fan_out <= num_waits + fan_out + _EDGE_SLACK


def _rebuild(plan: StepPlan, removed: set[int], waits: list[set[int]], alias: dict[int, int]) -> StepPlan:
    """The kept nodes renumbered, reading through ``alias``, waiting for ``waits``."""
    kept = [i for i in range(len(plan.nodes)) if i not in removed]
    index = {old: new for new, old in enumerate(kept)}
    consumers: list[list[int]] = [[] for _ in kept]
    for new, old in enumerate(kept):
        for p in waits[old]:
            consumers[index[p]].append(new)
    nodes = []
    for new, old in enumerate(kept):
        n = plan.nodes[old]
        nodes.append(replace(n, input_slots=tuple(alias.get(s, s) for s in n.input_slots),
                             consumers=tuple(sorted(consumers[new])), pending_count=len(waits[old])))
    return replace(plan, nodes=tuple(nodes),
                   fetch_slots=tuple(alias.get(s, s) for s in plan.fetch_slots),
                   roots=tuple(i for i, n in enumerate(nodes) if n.pending_count == 0),
                   targets=tuple(index[i] for i in plan.targets))

"""tfprof's model: per-node statistics of a graph and its traced steps, and the scope, graph
and op views built from them with TF's accounting, filtering and ordering rules.

Pure: it reads a graph, step stats (a StepStats message, read as ``formats.step_stats_proto``
NodeRuns) and an options dict already checked by ``zmtf.profiler``. Rendering text is
``profile_format``'s job. The results are TF's GraphNodeProto / MultiGraphNodeProto messages;
a repeated message field holds copies, so a displayed tree is copied into one message last.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from zmtf.interop.flops_registry import float_ops
from zmtf.formats.graph_def_proto import shape_proto
from zmtf.formats.profile_proto import STAT_FIELDS, GraphNodeProto, MultiGraphNodeProto
from zmtf.formats.step_stats_proto import node_runs

ROOT = "_TFProfRoot"
SCOPE_PARENT = "_TFScopeParent"
TRAINABLE_VARIABLES = "_trainable_variables"
INT64_MAX = 2**63 - 1

#: order_by value -> the total it sorts by, largest first ("name" sorts by name)
ORDER_KEYS = {"micros": "total_exec_micros", "accelerator_micros": "total_accelerator_exec_micros",
              "cpu_micros": "total_cpu_exec_micros", "params": "total_parameters",
              "float_ops": "total_float_ops", "occurrence": "total_run_count"}


@dataclass(eq=False)
class ProfNode:
    """A graph node (or a scope parent, or the root) with its own stats and its totals."""

    proto: Any
    op_types: set[str]
    children: list[ProfNode] = field(default_factory=list)
    account: bool = True
    own: dict[str, int] = field(default_factory=dict)
    op_type: str = ""
    #: the statistics its message has no field for (MultiGraphNodeProto: the run counts)
    extra: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.proto.name)

    def stat(self, name: str) -> int:
        return self.extra[name] if name in self.extra else int(getattr(self.proto, name))

    def set_stat(self, name: str, value: int) -> None:
        if name in self.proto.DESCRIPTOR.fields_by_name:   # TF's int64: a count past it saturates
            setattr(self.proto, name, min(value, INT64_MAX))
        else:
            self.extra[name] = value

    def reset_totals(self, with_self: bool) -> None:
        for stat in STAT_FIELDS:
            self.set_stat(stat, self.own.get(stat, 0) if self.account else 0)
            self.set_stat(f"total_{stat}", self.stat(stat) if with_self else 0)

    def add_totals(self, other: ProfNode) -> None:
        for stat in STAT_FIELDS:
            name = f"total_{stat}"
            self.set_stat(name, self.stat(name) + other.stat(name))


def step_times(step_stats: Any) -> dict[str, tuple[int, int, int, set[str]]]:
    """node name -> (cpu micros, accelerator micros, runs, devices) of one traced step."""
    out: dict[str, tuple[int, int, int, set[str]]] = {}
    for t in node_runs(step_stats):
        micros = int(round((t.end - t.start) * 1e6))
        cpu, acc, runs, devices = out.get(t.node_name, (0, 0, 0, set()))
        on_accelerator = "/device:GPU:" in t.device.upper()
        out[t.node_name] = (cpu + (0 if on_accelerator else micros),
                            acc + (micros if on_accelerator else 0), runs + 1, devices | {t.device})
    return out


def _timed(steps: dict[int, dict[str, Any]], step: int, name: str) -> tuple[int, int, int, set[str]]:
    """This node's times in ``step``, or its mean over the steps it ran in (step -1)."""
    picked = [steps[step]] if step >= 0 else list(steps.values())
    ran = [s[name] for s in picked if name in s]
    if not ran:
        return 0, 0, 0, set()
    n = len(ran)
    return (sum(r[0] for r in ran) // n, sum(r[1] for r in ran) // n, sum(r[2] for r in ran) // n,
            set().union(*(r[3] for r in ran)))


def graph_nodes(graph: Any, steps: dict[int, dict[str, Any]], step: int) -> dict[str, ProfNode]:
    """One ProfNode per graph op: parameters of trainable variables, float ops, times."""
    trainable = {v.op.name for v in graph.get_collection("trainable_variables")}
    nodes = {}
    for op in graph.get_operations():
        cpu, acc, runs, devices = _timed(steps, step, op.name)
        devices |= {op.device} if op.device else set()
        is_var = op.name in trainable
        shape = op.outputs[0].shape if op.outputs else None
        params = shape.num_elements() if is_var and shape.is_fully_defined() else 0
        proto = GraphNodeProto(name=op.name, devices=sorted(devices),
                               shapes=[shape_proto(shape.as_list())] if is_var and shape.dims is not None else [])
        own = {"run_count": runs, "cpu_exec_micros": cpu, "accelerator_exec_micros": acc,
               "exec_micros": cpu + acc, "parameters": params,
               "float_ops": float_ops(op) * max(runs, 1)}
        types = {op.type, *devices} | ({TRAINABLE_VARIABLES} if is_var else set())
        nodes[op.name] = ProfNode(proto, types, own=own, op_type=op.type)
    return nodes


def _accounted(node: ProfNode, regexes: Sequence[str]) -> bool:
    if list(regexes) == [".*"]:
        return True
    return any(re.fullmatch(r, t) for r in regexes for t in node.op_types)


def _shown(node: ProfNode, opts: dict[str, Any], depth: int) -> bool:
    """TF's ShouldShow: min filters (times on totals, the rest on the node's own), depth, names."""
    if node.name == ROOT:
        return True
    p = node.proto
    if (p.total_exec_micros < opts["min_micros"]
            or p.total_accelerator_exec_micros < opts.get("min_accelerator_micros", 0)
            or p.total_cpu_exec_micros < opts.get("min_cpu_micros", 0)
            or p.parameters < opts["min_params"] or p.float_ops < opts["min_float_ops"]
            or node.stat("run_count") < opts["min_occurrence"] or depth > opts["max_depth"]):
        return False
    shows = opts["show_name_regexes"] == [".*"] or any(
        re.fullmatch(r, node.name) for r in opts["show_name_regexes"])
    return shows and not any(re.fullmatch(r, node.name) for r in opts["hide_name_regexes"])


def sort_nodes(nodes: list[Any], order_by: str) -> list[Any]:
    """Largest total first for a statistic; by name for "name" (ties stay in name order)."""
    by_name = sorted(nodes, key=lambda n: n.name)
    key = ORDER_KEYS.get(order_by)
    return by_name if key is None else sorted(by_name, key=lambda n: -n.stat(key))


def _account(roots: list[ProfNode], opts: dict[str, Any], seen: set[int]) -> list[ProfNode]:
    """Keep the nodes that are accounted or hold accounted nodes; sum their totals."""
    kept = []
    for node in roots:
        if id(node) in seen:   # graph view: a node reached twice is expanded once
            continue
        seen.add(id(node))
        children = _account(node.children, opts, seen)
        node.account = _accounted(node, opts["account_type_regexes"])
        if node.account or children:
            node.reset_totals(with_self=True)
            node.children = children
            for child in children:
                node.add_totals(child)
            kept.append(node)
    return kept


def _display(roots: list[ProfNode], opts: dict[str, Any], depth: int) -> list[ProfNode]:
    """TF's PrintScope: hidden nodes hand their displayed descendants up to their parent."""
    shown = []
    for node in roots:
        show = _shown(node, opts, depth)
        below: list[ProfNode] = []
        if depth <= opts["max_depth"] and not any(
                re.fullmatch(r, node.name) for r in opts["trim_name_regexes"]):
            below = _display(node.children, opts, depth + 1)
        if show:
            if opts["account_displayed_op_only"]:
                node.reset_totals(with_self=True)
            node.children = sort_nodes(below, opts["order_by"])
            for child in node.children:
                if opts["account_displayed_op_only"]:
                    node.add_totals(child)
            shown.append(node)
        else:
            shown.extend(below)
    return shown


def _start_at(roots: list[ProfNode], regexes: list[str]) -> list[ProfNode]:
    found = []
    for node in roots:
        if any(re.fullmatch(r, node.name) for r in regexes):
            found.append(node)
        else:
            found.extend(_start_at(node.children, regexes))
    return found


def tree_view(top: list[ProfNode], opts: dict[str, Any]) -> ProfNode:
    """Account, start, display and sort a tree of nodes under the root; protos linked."""
    root = ProfNode(GraphNodeProto(name=ROOT), {SCOPE_PARENT}, account=False)
    root.reset_totals(with_self=False)
    roots = _account(top, opts, set())
    for node in roots:
        root.add_totals(node)
    if opts["start_name_regexes"] != [".*"]:
        roots = _start_at(roots, opts["start_name_regexes"])
    root.children = roots
    root = _display([root], opts, 1)[0]
    linked = GraphNodeProto()
    _link(root, linked)
    root.proto = linked
    return root


def _link(node: ProfNode, into: Any) -> int:
    """Copy the displayed tree into one message, parents first: ``into`` is where this node's
    copy goes (a repeated message field holds copies, so each node is written once, in its
    place). Returns the nodes it holds, itself included (``total_definition_count``)."""
    into.CopyFrom(node.proto)
    count = 1
    for child in node.children:
        count += _link(child, into.children.add())
    node.proto.total_definition_count = into.total_definition_count = count
    return count


def scope_tree(nodes: dict[str, ProfNode]) -> list[ProfNode]:
    """Nodes nested by name ("a/b" under "a"), with scope parents for missing prefixes."""
    by_name = dict(nodes)
    for name in list(nodes):
        while "/" in name:
            name = name.rsplit("/", 1)[0]
            by_name.setdefault(name, ProfNode(GraphNodeProto(name=name), {SCOPE_PARENT}))
    top = []
    for name, node in sorted(by_name.items()):
        parent = by_name.get(name.rsplit("/", 1)[0]) if "/" in name else None
        (parent.children if parent else top).append(node)
    return top


def dataflow_tree(graph: Any, nodes: dict[str, ProfNode]) -> list[ProfNode]:
    """Nodes under the nodes that consume them: the graph's outputs on top, inputs below."""
    consumed = set()
    for op in graph.get_operations():
        inputs = sorted({t.op.name for t in op.inputs} | {c.name for c in op.control_inputs})
        nodes[op.name].children = [nodes[name] for name in inputs]
        consumed.update(inputs)
    return [nodes[op.name] for op in graph.get_operations() if op.name not in consumed]


def op_view(nodes: dict[str, ProfNode], opts: dict[str, Any]) -> tuple[MultiGraphNodeProto, list]:
    """Op types in display order (TF's op view); returns the root and the displayed types."""
    members: dict[str, list[ProfNode]] = defaultdict(list)
    for node in nodes.values():
        members[node.op_type].append(node)
    types = []
    for op_type, group in members.items():
        multi = ProfNode(MultiGraphNodeProto(name=op_type), set().union(*(n.op_types for n in group)),
                         own={s: sum(n.own[s] for n in group) for s in STAT_FIELDS})
        multi.account = _accounted(multi, opts["account_type_regexes"])
        multi.reset_totals(with_self=True)
        for n in group:
            n.reset_totals(with_self=True)
        multi.proto.graph_nodes.extend(n.proto for n in sorted(group, key=lambda n: n.name))
        types.append(multi)
    ordered = [t for t in sort_nodes(types, opts["order_by"]) if t.account]
    _chain(ordered, with_self_first=True)
    start = _first_match(ordered, opts["start_name_regexes"])
    shown = []
    for depth, multi in enumerate(ordered[start:]):
        if depth > opts["max_depth"] or any(re.fullmatch(r, multi.name) for r in opts["trim_name_regexes"]):
            break
        if _shown(multi, opts, depth):
            shown.append(multi)
    if opts["account_displayed_op_only"]:
        _chain(shown, with_self_first=True)
    root = ProfNode(MultiGraphNodeProto(name=ROOT), set())
    source = shown if opts["account_displayed_op_only"] else ordered
    for stat in STAT_FIELDS:
        root.set_stat(f"total_{stat}", source[0].stat(f"total_{stat}") if source else 0)
    into = root.proto
    for multi in shown:   # a chain: each type's copy goes under the one before it
        into = into.children.add()
        into.CopyFrom(multi.proto)
    return root.proto, shown


def _chain(ordered: list[ProfNode], with_self_first: bool) -> None:
    """Each op type's totals: itself plus every type after it."""
    after = None
    for multi in reversed(ordered):
        multi.reset_totals(with_self=with_self_first)
        if after is not None:
            multi.add_totals(after)
        after = multi


def _first_match(ordered: list[ProfNode], regexes: list[str]) -> int:
    if regexes == [".*"] or not regexes:
        return 0
    for i, multi in enumerate(ordered):
        if any(re.fullmatch(r, multi.name) for r in regexes):
            return i
    return len(ordered)

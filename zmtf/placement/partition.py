"""Split a placed step into one subgraph per task, joined by _Send/_Recv pairs.

Pure: placed ops in, one ``TaskPartition`` per task out, each with its graph as plain dicts
(``framework.graph_io`` format) ready for RegisterGraph. Edges that cross tasks become a
``_Send`` in the producer's partition and a ``_Recv`` in the consumer's. An edge into the
master's own task needs no ``_Send``: the producer's partition returns the value in its
RunGraph reply (one message fewer on the hot path; "ps pushes a in its reply").

A master partition that only waits (it sends nothing, every value it receives rides in a
reply, and nothing in it but sources runs before one arrives) is *deferred*: the master
starts it after the replies, with their values fed in place of its ``_Recv`` nodes. It
would only have parked on those Recvs; started late it runs straight through, with no Recv,
no rendezvous and no second pass of the executor (the latency of ``b = a + 2``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from zmtf.framework.device_spec import DeviceSpec
from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.graph_io import graph_to_dict


def task_of(device: str) -> str:
    """"/job:ps/replica:0/task:1/device:CPU:0" -> "/job:ps/replica:0/task:1"."""
    spec = DeviceSpec.from_string(device)
    return f"/job:{spec.job}/replica:{spec.replica or 0}/task:{spec.task or 0}"


def rendezvous_key(tensor_name: str, src_task: str, dst_task: str) -> str:
    return f"{tensor_name};{src_task};{dst_task}"


@dataclass
class TaskPartition:
    """What one task runs for a step, and how its values reach the others."""

    task: str
    graph: dict[str, Any] = field(default_factory=dict)
    arrays: list[np.ndarray] = field(default_factory=list)
    feeds: list[str] = field(default_factory=list)        # client feeds this partition consumes
    fetches: list[str] = field(default_factory=list)      # tensors it returns in its reply
    targets: list[str] = field(default_factory=list)      # ops it must run (targets and _Sends)
    reply_keys: list[str] = field(default_factory=list)   # rendezvous keys of fetches[len(client_fetches):]
    client_fetches: list[str] = field(default_factory=list)
    # Deferred (the master's partition only, see the module docstring): the rendezvous keys of
    # the replies it waits for, and ``feeds`` followed by the _Recv outputs they are fed to.
    recv_keys: list[str] = field(default_factory=list)
    run_feeds: list[str] = field(default_factory=list)

    @property
    def deferred(self) -> bool:
        return bool(self.recv_keys)


def partition(ops: Sequence[Operation], devices: dict[str, str], *, master_task: str,
              feeds: Sequence[Tensor], fetches: Sequence[Tensor],
              targets: Sequence[Operation]) -> dict[str, TaskPartition]:
    """One TaskPartition per task that has work in this step."""
    task = {op.name: task_of(devices[op.name]) for op in ops}
    fed = set(feeds)
    parts: dict[str, TaskPartition] = {}
    by_task: dict[str, list[Operation]] = {}
    for op in ops:
        by_task.setdefault(task[op.name], []).append(op)
    edges: dict[tuple[str, str], _Edge] = {}  # (tensor or ^op, dst task) -> edge
    for op in ops:
        dst = task[op.name]
        for t in op.inputs:
            if t in fed or task[t.op.name] == dst:
                continue
            edges.setdefault((t.name, dst), _Edge(t.name, task[t.op.name], dst, t, False))
        for c in op.control_inputs:
            if task[c.name] != dst:
                edges.setdefault(("^" + c.name, dst), _Edge(c.name, task[c.name], dst, None, True))
    # A value for the master rides back in the producer's RunGraph reply only if the producer
    # waits for no other task in this step; else the reply could wait on the master (training:
    # parameters ps->worker, gradients worker->ps) and the step would deadlock.
    waits = {e.dst_task for e in edges.values()}
    for name, members in by_task.items():
        parts[name] = _build(name, members, edges, master_task if name not in waits else "")
    _assign_feeds_fetches_targets(parts, ops, task, feeds, fetches, targets)
    if master_task in parts:
        _defer_if_only_waiting(parts[master_task], by_task[master_task], edges, waits, fed)
    return parts


#: Ops that may run before a deferred partition's replies arrive: they compute nothing
#: (a variable's or constant's value, a fed value, a ref's read), so starting late costs nothing.
_SOURCE_OPS = frozenset({"Const", "VariableV2", "Variable", "VarHandleOp", "Placeholder", "Identity",
                         "NoOp"})


def _defer_if_only_waiting(part: TaskPartition, members: list[Operation], edges: dict,
                           waits: set[str], fed: set[Tensor]) -> None:
    """Mark the master's partition deferred when starting it after the replies loses nothing:
    it sends nothing (so no other partition waits for it), each value it receives rides in a
    RunGraph reply, and each of its ops that runs without one is a source (``_SOURCE_OPS``)."""
    master = part.task
    incoming: dict[str, _Edge] = {}
    for e in edges.values():
        if e.src_task == master:
            return
        if e.dst_task == master:
            if e.control or e.src_task in waits:
                return
            incoming[e.source] = e
    if not incoming:
        return
    inside = {op.name for op in members}
    waiting: set[str] = set()   # ops that run only after a reply arrived
    for op in _in_order(members, inside):
        if any(t.name in incoming or t.op.name in waiting
               for t in op.inputs if t not in fed) or any(c.name in waiting for c in op.control_inputs):
            waiting.add(op.name)
        elif op.type not in _SOURCE_OPS:
            return
    part.recv_keys = [e.key for e in incoming.values()]
    part.run_feeds = part.feeds + [e.recv_name + ":0" for e in incoming.values()]


def _in_order(members: list[Operation], inside: set[str]) -> list[Operation]:
    """``members`` with every op after the ops of ``inside`` it reads (depth first)."""
    ordered: list[Operation] = []
    seen: set[str] = set()
    for root in members:
        stack = [(root, False)]
        while stack:
            op, expanded = stack.pop()
            if expanded:
                ordered.append(op)
                continue
            if op.name in seen:
                continue
            seen.add(op.name)
            stack.append((op, True))
            for dep in [t.op for t in op.inputs] + list(op.control_inputs):
                if dep.name in inside and dep.name not in seen:
                    stack.append((dep, False))
    return ordered


@dataclass(frozen=True)
class _Edge:
    source: str          # tensor name, or op name for a control edge
    src_task: str
    dst_task: str
    tensor: Tensor | None
    control: bool

    @property
    def key(self) -> str:
        return rendezvous_key(("^" if self.control else "") + self.source, self.src_task, self.dst_task)

    @property
    def recv_name(self) -> str:
        return recv_name_of(self.key)


def recv_name_of(key: str) -> str:
    """The _Recv node of a rendezvous key (a timeline names the reply-carried ones the same)."""
    source, src_task, _ = key.split(";")
    return f"_recv/{source.lstrip('^').replace(':', '_')}/from{src_task.replace('/', '_')}"


def _build(task: str, members: list[Operation], edges: dict, master_task: str) -> TaskPartition:
    graph = members[0].graph
    data, arrays = graph_to_dict(graph, ops=members)
    nodes: list[dict[str, Any]] = data["nodes"]
    incoming = {(e.source, e.control): e for e in edges.values() if e.dst_task == task}
    for node in nodes:
        node["inputs"] = [incoming[(name, False)].recv_name + ":0" if (name, False) in incoming else name
                          for name in node["inputs"]]
        node["control_inputs"] = [incoming[(name, True)].recv_name if (name, True) in incoming else name
                                  for name in node["control_inputs"]]
    recvs = [_recv_node(e) for e in incoming.values()] + _feed_stubs(graph, nodes, task)
    part = TaskPartition(task)
    sends = []
    for e in edges.values():
        if e.src_task != task:
            continue
        if e.dst_task == master_task and not e.control:
            part.fetches.append(e.source)       # returned in the RunGraph reply
            part.reply_keys.append(e.key)
        else:
            sends.append(_send_node(e))
    part.targets.extend(n["name"] for n in sends)
    data["nodes"] = recvs + nodes + sends
    part.graph, part.arrays = data, arrays
    return part


def _feed_stubs(graph: Any, nodes: list[dict[str, Any]], task: str) -> list[dict[str, Any]]:
    """Fed tensors whose producer is not in this partition arrive as Placeholder stand-ins."""
    present = {n["name"] for n in nodes}
    stubs: dict[str, dict[str, Any]] = {}
    for node in nodes:
        for name in node["inputs"]:
            producer = name.rpartition(":")[0]
            if producer in present or producer in stubs or producer.startswith("_recv/"):
                continue
            op = graph.get_operation_by_name(producer)
            outputs = [[t.dtype.name, t.shape.dims] for t in op.outputs]
            stubs[producer] = {"name": producer, "op": "Placeholder", "inputs": [], "control_inputs": [],
                               "device": f"{task}/device:CPU:0", "colocation": [],
                               "attrs": {"dtype": outputs[0][0], "shape": outputs[0][1]},
                               "outputs": outputs}
    return list(stubs.values())


def _recv_node(e: _Edge) -> dict[str, Any]:
    dtype: str
    shape: list[int | None] | None
    if e.control:
        dtype, shape = "bool", []   # a control edge carries only a token
    else:
        assert e.tensor is not None, f"data edge {e.source} without its tensor"
        dtype, shape = e.tensor.dtype.name, e.tensor.shape.dims
    return {"name": e.recv_name, "op": "_Recv", "inputs": [], "control_inputs": [],
            "device": f"{e.dst_task}/device:CPU:0",  # transfers land in host memory
            "colocation": [], "attrs": {"key": e.key, "src_task": e.src_task, "dtype": dtype,
                                        "shape": shape}, "outputs": [[dtype, shape]]}


def _send_node(e: _Edge) -> dict[str, Any]:
    inputs, control = ([], [e.source]) if e.control else ([e.source], [])
    return {"name": f"_send/{e.source.replace(':', '_')}/to{e.dst_task.replace('/', '_')}",
            "op": "_Send", "inputs": inputs, "control_inputs": control,
            "device": f"{e.src_task}/device:CPU:0",
            "colocation": [], "attrs": {"key": e.key, "dst_task": e.dst_task}, "outputs": []}


def _assign_feeds_fetches_targets(parts: dict[str, TaskPartition], ops: Sequence[Operation],
                                  task: dict[str, str], feeds: Sequence[Tensor],
                                  fetches: Sequence[Tensor], targets: Sequence[Operation]) -> None:
    for t in feeds:
        for op in ops:
            if t in op.inputs and t.name not in parts[task[op.name]].feeds:
                parts[task[op.name]].feeds.append(t.name)
    for part in parts.values():
        part.client_fetches = []
    for t in fetches:
        if t in set(feeds):
            continue
        part = parts[task[t.op.name]]
        part.client_fetches.append(t.name)
    for part in parts.values():
        # client fetches first, then the values other partitions need from the reply
        part.fetches = part.client_fetches + part.fetches
    for op in targets:
        parts[task[op.name]].targets.append(op.name)

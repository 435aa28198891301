"""Compute only the columns of a matrix product that its one reader keeps.

The gradient of ``concat([x_t, h], 1) @ W`` in an unrolled RNN is ``dgates @ W^T`` (all of
the concat's columns), then a StridedSlice keeps h's half: the x_t half is never read (x_t
is fed). For the LSTM of bench/models.py that is 19 products of [32,512] @ [512,256] per
step, ~105 us each, of which the slice keeps 128 columns. A bind-time rewrite makes such a
MatMul and its StridedSlice one ``SLICED_OP`` node (kernels/cpu/matmul.py) that multiplies
by the kept columns of the right operand only (a strided view BLAS reads in place): ~52 us,
the same values (each kept element is the same dot product).

Rewritten: a CPU MatMul (float32/64) whose value only a StridedSlice reads, not fetched or
a target, where the slice keeps every row and a fixed range of columns (a spec of two
constant slices, the first whole). The node takes the StridedSlice's name and output
slot; the MatMul's other consumers (control edges) wait for what it waited for. Plans
with tf.cond are left alone. Off with fusion (``ZMTF_FUSION=0`` or ``global_jit_level =
OFF``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.fusion import without_nodes

SLICED_OP = "_SlicedMatMul"
_DTYPES = frozenset({"float32", "float64"})
_DEADNESS_OPS = frozenset({"Switch", "RefSwitch", "Merge", "RefMerge"})


def slice_products(plan: StepPlan) -> StepPlan:
    """``plan`` with each MatMul whose one reader keeps some of its columns computing only
    those (see the module docstring); the plan itself when there is none."""
    nodes = plan.nodes
    if not any(n.op_type == "StridedSlice" for n in nodes) or any(n.op_type in _DEADNESS_OPS for n in nodes):
        return plan
    producer = {s: i for i, n in enumerate(nodes) for s in n.output_slots}
    named = set(plan.targets) | {producer[s] for s in plan.fetch_slots if s in producer}
    readers: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        for s in n.input_slots:
            readers.setdefault(s, []).append(i)
    pairs: dict[int, int] = {}   # StridedSlice -> the MatMul it slices
    for i, n in enumerate(nodes):
        if n.op_type != "StridedSlice" or len(n.input_slots) != 1 or _columns(n.attrs.get("spec")) is None:
            continue
        m = producer.get(n.input_slots[0], -1)
        if m < 0 or m in named:
            continue
        mm = nodes[m]
        if (mm.op_type == "MatMul" and mm.kernel_dtype in _DTYPES and "/device:GPU:" not in mm.device
                and mm.device == n.device and len(mm.input_slots) == 2 and len(mm.output_slots) == 1
                and readers.get(mm.output_slots[0]) == [i]):
            pairs[i] = m
    return _rewrite(plan, pairs) if pairs else plan


def _columns(spec: Any) -> tuple[int | None, int | None, int | None] | None:
    """The (start, stop, step) of columns a StridedSlice spec keeps of a matrix, every row
    kept; None for any other spec (more axes, a dynamic bound, an index, a new axis)."""
    if not isinstance(spec, list) or len(spec) != 2:
        return None
    rows, cols = spec
    if not (isinstance(rows, list) and isinstance(cols, list) and len(rows) == 4 and len(cols) == 4):
        return None
    if rows[0] != "s" or rows[1] is not None or rows[2] is not None or rows[3] not in (None, 1):
        return None
    if cols[0] != "s" or not all(v is None or type(v) is int for v in cols[1:]) or cols[3] == 0:
        return None
    return cols[1], cols[2], cols[3]


def _rewrite(plan: StepPlan, pairs: dict[int, int]) -> StepPlan:
    """Each (StridedSlice, MatMul) pair becomes one SLICED_OP node at the slice's place."""
    return without_nodes(plan, set(pairs.values()),
                         {s: _sliced_node(plan.nodes[m], plan.nodes[s]) for s, m in pairs.items()})


def _sliced_node(matmul: PlannedNode, strided_slice: PlannedNode) -> PlannedNode:
    """The node computing ``strided_slice`` of ``matmul``'s product: the kept columns only."""
    columns = _columns(strided_slice.attrs["spec"])
    start, stop, step = columns if columns is not None else (None, None, None)
    kept = f"{'' if start is None else start}:{'' if stop is None else stop}" + (
        "" if step is None else f":{step}")
    name = strided_slice.name
    attrs = {"_node_name": name, "_device": strided_slice.device, "columns": columns,
             "transpose_a": bool(matmul.attrs.get("transpose_a")),
             "transpose_b": bool(matmul.attrs.get("transpose_b")),
             "_label": f"{name} = {SLICED_OP}({matmul.name}[:, {kept}])"}
    return replace(strided_slice, op_type=SLICED_OP, kernel_dtype=matmul.kernel_dtype, attrs=attrs,
                   input_slots=matmul.input_slots)

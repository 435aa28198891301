"""Fold a MatMul's one reader into it: a slice of its columns, or a bias add.

* A column slice: the gradient of ``concat([x_t, h], 1) @ W`` in an unrolled RNN is
  ``dgates @ W^T`` (all of the concat's columns), then a StridedSlice keeps h's half: the
  x_t half is never read (x_t is fed). For the LSTM of bench/models.py that is 19 products
  of [32,512] @ [512,256] per step, ~105 us each, of which the slice keeps 128 columns. As
  one ``SLICED_OP`` node (kernels/cpu/matmul.py) it multiplies by the kept columns of the
  right operand only (a strided view BLAS reads in place): ~52 us, the same values (each
  kept element is the same dot product). Folded: a StridedSlice that keeps every row and a
  fixed range of columns (a spec of two constant slices, the first whole).
* A bias add: ``x @ W + b`` as an Add of the product: ``ADD_OP`` adds the bias into the
  product's own buffer (no second [32,512] array, one node less: ~10 us of the Add's ~15),
  as grappler's remapper makes MatMul + BiasAdd one _FusedMatMul. Folded: an Add or AddV2
  of the product and another tensor; a bias that would change the product's shape or
  dtype runs as the Add would (the same kernel, in the same order).

Rewritten: a CPU MatMul (float32/64) whose value only that reader reads, neither fetched
nor a target, on the reader's device. The node takes the reader's name and output slot;
the MatMul's other consumers (control edges) wait for what it waited for. Plans with
tf.cond are left alone. Off with fusion (``ZMTF_FUSION=0`` or ``global_jit_level = OFF``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from zmtf.placement.plan import PlannedNode, StepPlan
from zmtf.runtime.plan_rewrites import has_deadness, producers, named_nodes
from zmtf.runtime.fusion import without_nodes

SLICED_OP = "_SlicedMatMul"
ADD_OP = "_MatMulAdd"
_ADDS = frozenset({"Add", "AddV2"})
_DTYPES = frozenset({"float32", "float64"})


def fold_matmul_readers(plan: StepPlan) -> StepPlan:
    """``plan`` with each MatMul whose one reader is a column slice or an add folded into
    that reader (see the module docstring); the plan itself when there is none."""
    nodes = plan.nodes
    if not any(n.op_type == "MatMul" for n in nodes) or has_deadness(nodes):
        return plan
    producer = producers(nodes)
    named = named_nodes(plan, producer)
    readers: dict[int, list[int]] = {}
    for i, n in enumerate(nodes):
        for s in n.input_slots:
            readers.setdefault(s, []).append(i)
    pairs: dict[int, int] = {}   # reader -> the MatMul it reads
    for m, mm in enumerate(nodes):
        if (mm.op_type != "MatMul" or m in named or mm.kernel_dtype not in _DTYPES or "/device:GPU:" in mm.device
                or len(mm.input_slots) != 2 or len(mm.output_slots) != 1):
            continue
        who = readers.get(mm.output_slots[0], [])
        if (len(who) == 1 and nodes[who[0]].device == mm.device
                and nodes[who[0]].kernel_dtype == mm.kernel_dtype and _foldable(nodes[who[0]])):
            pairs[who[0]] = m
    return _rewrite(plan, pairs) if pairs else plan


def _foldable(reader: PlannedNode) -> bool:
    """Whether ``reader``, a MatMul's one reader, folds into it."""
    if reader.op_type == "StridedSlice":
        return len(reader.input_slots) == 1 and _columns(reader.attrs.get("spec")) is not None
    return (reader.op_type in _ADDS and len(reader.input_slots) == 2 and len(set(reader.input_slots)) == 2
            and len(reader.output_slots) == 1)


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
    """Each (reader, MatMul) pair becomes one node at the reader's place."""
    return without_nodes(plan, set(pairs.values()),
                         {r: _folded_node(plan.nodes[m], plan.nodes[r]) for r, m in pairs.items()})


def _folded_node(matmul: PlannedNode, reader: PlannedNode) -> PlannedNode:
    """The node computing ``reader`` of ``matmul``'s product in one kernel."""
    name = reader.name
    attrs: dict[str, Any] = {"_node_name": name, "_device": reader.device,
                             "transpose_a": bool(matmul.attrs.get("transpose_a")),
                             "transpose_b": bool(matmul.attrs.get("transpose_b"))}
    if reader.op_type == "StridedSlice":
        columns = _columns(reader.attrs["spec"])
        start, stop, step = columns if columns is not None else (None, None, None)
        kept = f"{'' if start is None else start}:{'' if stop is None else stop}" + (
            "" if step is None else f":{step}")
        attrs.update(columns=columns, _label=f"{name} = {SLICED_OP}({matmul.name}[:, {kept}])")
        return replace(reader, op_type=SLICED_OP, kernel_dtype=matmul.kernel_dtype, attrs=attrs,
                       input_slots=matmul.input_slots)
    first = reader.input_slots[0] == matmul.output_slots[0]   # the product is the Add's x
    other = reader.input_slots[1 if first else 0]
    attrs.update(add=reader.op_type, product_first=first,
                 _label=f"{name} = {ADD_OP}({matmul.name}, {reader.op_type})")
    return replace(reader, op_type=ADD_OP, attrs=attrs, input_slots=(*matmul.input_slots, other))

"""Float-operation counts per op type, by TF's formulas (its ``RegisterStatistics("flops")``).

The profiler's ``float_ops`` come from static shapes: an op whose shapes are not fully
known counts 0, as does an op type with no formula. Counts match TF's for every type here.
"""

from __future__ import annotations

from math import prod
from typing import Any, Callable

_FlopsFn = Callable[[Any], "int | None"]


def _elements(tensor: Any) -> int | None:
    shape = tensor.shape
    return shape.num_elements() if shape.is_fully_defined() else None


def _per_input_element(per_element: int) -> _FlopsFn:
    def count(op: Any) -> int | None:
        n = _elements(op.inputs[0])
        return None if n is None else n * per_element
    return count


def _per_output_element(per_element: int) -> _FlopsFn:
    def count(op: Any) -> int | None:
        n = _elements(op.outputs[0])
        return None if n is None else n * per_element
    return count


def _reduction(finalize: int) -> _FlopsFn:
    """``in - out`` additions, plus ``finalize`` per output (Mean divides once each)."""
    def count(op: Any) -> int | None:
        n_in, n_out = _elements(op.inputs[0]), _elements(op.outputs[0])
        return None if n_in is None or n_out is None else n_in + n_out * (finalize - 1)
    return count


def _matmul(op: Any) -> int | None:
    a, out = op.inputs[0].shape, _elements(op.outputs[0])
    if out is None or not a.is_fully_defined():
        return None
    transposed = op.attrs.get("transpose_a", False) or op.attrs.get("adj_x", False)
    k = a.as_list()[-2] if transposed else a.as_list()[-1]
    return 2 * k * out


def _conv2d(op: Any) -> int | None:
    kernel, out = op.inputs[1].shape, _elements(op.outputs[0])
    if out is None or not kernel.is_fully_defined():
        return None
    height, width, in_depth = kernel.as_list()[:3]
    return 2 * out * height * width * in_depth


def _pool(op: Any) -> int | None:
    out = _elements(op.outputs[0])
    return None if out is None else out * prod(op.attrs["ksize"])


def _add_n(op: Any) -> int | None:
    n = _elements(op.inputs[0]) if op.inputs else 0
    return None if n is None else n * (len(op.inputs) - 1)


def _l2_loss(op: Any) -> int | None:
    n = _elements(op.inputs[0])
    return None if n is None else 3 * n - 1


FLOPS: dict[str, _FlopsFn] = {
    **{t: _per_input_element(1) for t in ("Reciprocal", "Square", "Log", "Neg", "AssignSub",
                                           "AssignAdd", "BiasAdd")},
    "Rsqrt": _per_input_element(2),
    "Softmax": _per_input_element(5),
    "L2Loss": _l2_loss,
    **{t: _per_output_element(1) for t in ("Add", "AddV2", "Sub", "Mul", "RealDiv", "Maximum",
                                            "Minimum", "Pow", "GreaterEqual", "Greater",
                                            "LessEqual", "Less", "Equal", "NotEqual")},
    "SquaredDifference": _per_output_element(2),
    "RsqrtGrad": _per_output_element(4),
    **{t: _reduction(0) for t in ("Sum", "ArgMax", "ArgMin", "BiasAddGrad")},
    "Mean": _reduction(1),
    "AvgPool": _pool,
    "MaxPool": _pool,
    "AddN": _add_n,
    **{t: _matmul for t in ("MatMul", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3")},
    "Conv2D": _conv2d,
}


def float_ops(op: Any) -> int:
    """TF's float-op count of ``op`` from its static shapes; 0 if unknown or uncounted."""
    count = FLOPS.get(op.type)
    if count is None:
        return 0
    try:
        return int(count(op) or 0)
    except (IndexError, KeyError, TypeError):
        return 0

"""``tf.einsum``, lowered to existing ops so its gradient comes with them.

The equation is parsed once (``parse_equation``), then: repeated labels inside one operand
become diagonals (``ii->i``), labels no one else needs are summed away, and operands are
combined left to right, through one matmul where two operands share no batch label and
their shapes are known, else by a broadcast multiply and a sum. Ellipses are not built.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from zmtf.framework.errors import InvalidArgumentError
from zmtf.framework.graph import Tensor, get_default_graph
from zmtf.ops import array_ops, math_ops
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.diag_ops import matrix_diag_part


@dataclass(frozen=True, slots=True)
class Equation:
    """An einsum equation: one label string per operand, and the output's labels."""

    inputs: tuple[str, ...]
    output: str


def parse_equation(equation: str, operand_count: int) -> Equation:
    """Validate ``equation`` for ``operand_count`` operands; the implicit form (no ``->``)
    outputs the labels used once, in alphabetical order, as numpy and TF do."""
    text = equation.replace(" ", "")
    if "." in text:
        raise InvalidArgumentError(f"tf.einsum: ellipsis ('...') is not built in zmtf, in "
                                   f"{equation!r}; name every axis with a letter")
    if text.count("->") > 1:
        raise InvalidArgumentError(f"tf.einsum: equation {equation!r} has more than one '->'")
    left, arrow, right = text.partition("->")
    inputs = tuple(left.split(","))
    if len(inputs) != operand_count:
        raise InvalidArgumentError(f"tf.einsum: equation {equation!r} names {len(inputs)} operands "
                                   f"but {operand_count} were given")
    for labels in inputs + (right,):
        bad = [c for c in labels if not c.isalpha()]
        if bad:
            raise InvalidArgumentError(f"tf.einsum: {bad[0]!r} in {equation!r} is not a label; "
                                       f"labels are letters, operands are separated by ','")
    used = "".join(inputs)
    if not arrow:
        right = "".join(sorted(c for c in set(used) if used.count(c) == 1))
    for c in right:
        if right.count(c) > 1 or c not in used:
            raise InvalidArgumentError(f"tf.einsum: output label {c!r} of {equation!r} must "
                                       f"appear once in the output and in some input")
    return Equation(inputs, right)


def einsum(equation: str, *inputs: Any, name: str | None = None, **kwargs: Any) -> Tensor:
    """Sum of products over the labels of ``equation``: ``einsum('ij,jk->ik', a, b)`` is a
    matmul, ``'ij->ji'`` a transpose, ``'ii->'`` a trace, ``'bij,bjk->bik'`` a batch matmul."""
    if kwargs:
        raise TypeError(f"tf.einsum: unexpected keyword arguments {sorted(kwargs)}")
    with get_default_graph().name_scope(name or "einsum"):
        tensors = [convert_to_tensor(x) for x in inputs]
        if not tensors:
            raise InvalidArgumentError("tf.einsum: give at least one operand")
        parsed = parse_equation(equation, len(tensors))
        _check_ranks_and_sizes(parsed, tensors, equation)
        operands = [_diagonals(t, labels) for t, labels in zip(tensors, parsed.inputs)]
        result, labels = operands[0]
        for i, (other, other_labels) in enumerate(operands[1:], 1):
            later = parsed.output + "".join(lab for _, lab in operands[i + 1:])
            result, labels = _contract(result, labels, other, other_labels, later)
        result, labels = _sum_away(result, labels, parsed.output)
        if labels == parsed.output:
            return result
        return array_ops.transpose(result, [labels.index(c) for c in parsed.output])


def _check_ranks_and_sizes(parsed: Equation, tensors: list[Tensor], equation: str) -> None:
    sizes: dict[str, int] = {}
    for i, (t, labels) in enumerate(zip(tensors, parsed.inputs)):
        if t.shape.ndims is None:
            raise InvalidArgumentError(f"tf.einsum: operand {i} ({t.name}) needs a known rank")
        if t.shape.ndims != len(labels):
            raise InvalidArgumentError(f"tf.einsum: operand {i} has rank {t.shape.ndims} but "
                                       f"{labels!r} in {equation!r} names {len(labels)} axes")
        for c, d in zip(labels, t.shape.as_list()):
            if d is not None and sizes.setdefault(c, d) != d:
                raise InvalidArgumentError(f"tf.einsum: label {c!r} of {equation!r} has size "
                                           f"{sizes[c]} in one place and {d} in operand {i}")


def _diagonals(t: Tensor, labels: str) -> tuple[Tensor, str]:
    """Take the diagonal over each label repeated in one operand (``ii`` -> ``i``)."""
    while len(set(labels)) < len(labels):
        c = next(c for c in labels if labels.count(c) > 1)
        first, second = labels.index(c), labels.index(c, labels.index(c) + 1)
        rest = [k for k in range(len(labels)) if k not in (first, second)]
        t = matrix_diag_part(array_ops.transpose(t, rest + [first, second]))
        labels = "".join(labels[k] for k in rest) + c
    return t, labels


def _sum_away(t: Tensor, labels: str, keep: str) -> tuple[Tensor, str]:
    axes = [k for k, c in enumerate(labels) if c not in keep]
    if not axes:
        return t, labels
    return math_ops.reduce_sum(t, axes), "".join(c for c in labels if c in keep)


def _contract(a: Tensor, a_labels: str, b: Tensor, b_labels: str, later: str) -> tuple[Tensor, str]:
    """a and b combined; the labels that ``later`` (output and operands to come) needs stay."""
    a, a_labels = _sum_away(a, a_labels, b_labels + later)
    b, b_labels = _sum_away(b, b_labels, a_labels + later)
    shared = [c for c in a_labels if c in b_labels]
    batch = [c for c in shared if c in later]
    summed = [c for c in shared if c not in later]
    a_free = [c for c in a_labels if c not in shared]
    b_free = [c for c in b_labels if c not in shared]
    if (not batch and a.dtype.is_floating and a.shape.is_fully_defined()
            and b.shape.is_fully_defined()):
        return _matmul(a, a_labels, b, b_labels, a_free, summed, b_free)
    order = batch + a_free + b_free + summed
    product = math_ops.multiply(_aligned(a, a_labels, order), _aligned(b, b_labels, order))
    kept = batch + a_free + b_free
    if summed:
        product = math_ops.reduce_sum(product, list(range(len(kept), len(order))))
    return product, "".join(kept)


def _aligned(t: Tensor, labels: str, order: list[str]) -> Tensor:
    """t transposed to ``order`` with size-1 axes for the labels it lacks (to broadcast)."""
    present = [c for c in order if c in labels]
    t = array_ops.transpose(t, [labels.index(c) for c in present])
    for k, c in enumerate(order):
        if c not in labels:
            t = array_ops.expand_dims(t, k)
    return t


def _matmul(a: Tensor, a_labels: str, b: Tensor, b_labels: str, a_free: list[str],
            summed: list[str], b_free: list[str]) -> tuple[Tensor, str]:
    size = dict(zip(a_labels, a.shape.as_list())) | dict(zip(b_labels, b.shape.as_list()))

    def count(labels: list[str]) -> int:
        return math.prod(size[c] for c in labels)

    left = array_ops.reshape(array_ops.transpose(a, [a_labels.index(c) for c in a_free + summed]),
                             [count(a_free), count(summed)])
    right = array_ops.reshape(array_ops.transpose(b, [b_labels.index(c) for c in summed + b_free]),
                              [count(summed), count(b_free)])
    product = math_ops.matmul(left, right)
    return (array_ops.reshape(product, [size[c] for c in a_free + b_free]),
            "".join(a_free + b_free))

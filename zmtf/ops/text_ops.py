"""String transforms with TF's semantics, dense in and out: tf.substr, tf.regex_replace,
tf.strings.regex_full_match, tf.strings.strip / lower / upper and tf.reduce_join.

Regular expressions are RE2's (as in TF): the CPU kernels (kernels/cpu/text.py) run them
with Python's ``re`` after a translation that keeps RE2's meaning (``$`` is the end of the
text, ``\\w``/``\\d``/``\\s`` are ASCII, ``.`` is one UTF-8 character), and refuse what
RE2 refuses (lookarounds, backreferences) or what ``re`` would read otherwise (``\\p{..}``,
``\\C``, ``\\Q..\\E``) with InvalidArgumentError. None of these ops is differentiable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework import dtypes
from zmtf.framework.gradient_registry import not_differentiable
from zmtf.framework.graph import Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.ops.string_ops import _string_input
from zmtf.framework.scopes import name_scope
from zmtf.framework.tensor_shape import TensorShape

_SAME_SHAPE = ("StringStrip", "StringLower", "StringUpper", "StaticRegexReplace",
               "RegexReplace")
STRING_INPUT_OPS.update({*_SAME_SHAPE, "Substr", "StaticRegexFullMatch", "RegexFullMatch",
                         "ReduceJoin"})


@op_def(*_SAME_SHAPE)
def _same_shape_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.string, inputs[0].shape)]


@op_def("StaticRegexFullMatch", "RegexFullMatch")
def _full_match_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return [(dtypes.bool_, inputs[0].shape)]


@op_def("Substr")
def _substr_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    strings, pos, length = inputs
    if not pos.shape.is_compatible_with(length.shape):
        raise ValueError(f"substr: pos and len must have the same shape, got {pos.shape} and "
                         f"{length.shape}")
    if pos.shape.ndims == 0:
        return [(dtypes.string, strings.shape)]
    if not strings.shape.is_compatible_with(pos.shape):
        raise ValueError(f"substr: pos and len must be scalars or have the input's shape "
                         f"{strings.shape}, got {pos.shape}")
    return [(dtypes.string, strings.shape.merge_with(pos.shape))]


@op_def("ReduceJoin")
def _reduce_join_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    strings, axes = inputs
    rank = strings.shape.ndims
    if rank is None or axes.op.type != "Const":
        return [(dtypes.string, TensorShape(None))]
    reduced = {int(a) % max(rank, 1) for a in np.asarray(axes.op.get_attr("value")).reshape(-1)}
    dims = strings.shape.as_list()
    if attrs["keep_dims"]:
        return [(dtypes.string, TensorShape([1 if i in reduced else d
                                             for i, d in enumerate(dims)]))]
    return [(dtypes.string, TensorShape([d for i, d in enumerate(dims) if i not in reduced]))]


not_differentiable(*_SAME_SHAPE, "Substr", "StaticRegexFullMatch", "RegexFullMatch",
                   "ReduceJoin")


def substr(input: Any, pos: Any, len: Any, name: str | None = None,  # noqa: A002 (TF's names)
           unit: str = "BYTE") -> Tensor:
    """``len`` bytes (or UTF-8 characters, ``unit="UTF8_CHAR"``) of each string from
    ``pos`` (negative: from the end); InvalidArgumentError when pos is past either end.
    ``pos`` and ``len`` are scalars or have the input's shape."""
    if unit not in ("BYTE", "UTF8_CHAR"):
        raise ValueError(f"substr: unit must be 'BYTE' or 'UTF8_CHAR', got {unit!r}")
    strings = _string_input(input, "Substr")
    pos = convert_to_tensor(pos, name="pos")
    length = convert_to_tensor(len, dtype=pos.dtype, name="len")
    if pos.dtype not in (dtypes.int32, dtypes.int64):
        raise TypeError(f"substr: pos and len must be int32 or int64, got {pos.dtype.name}")
    return apply_op("Substr", [strings, pos, length], {"unit": unit, "T": pos.dtype.name},
                    name=name or "Substr").outputs[0]


def strip(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Each string without leading and trailing ASCII whitespace."""
    return apply_op("StringStrip", [_string_input(input, "StringStrip")], {},
                    name=name or "StringStrip").outputs[0]


def lower(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """Each string lowercased: ASCII letters only, or every letter with encoding="utf-8"."""
    return _case("StringLower", input, encoding, name)


def upper(input: Any, encoding: str = "", name: str | None = None) -> Tensor:  # noqa: A002
    """Each string uppercased: ASCII letters only, or every letter with encoding="utf-8"."""
    return _case("StringUpper", input, encoding, name)


def _case(op_type: str, value: Any, encoding: str, name: str | None) -> Tensor:
    if encoding not in ("", "utf-8"):
        raise ValueError(f"{op_type}: encoding must be '' or 'utf-8', got {encoding!r}")
    return apply_op(op_type, [_string_input(value, op_type)], {"encoding": encoding},
                    name=name or op_type).outputs[0]


def regex_replace(input: Any, pattern: Any, rewrite: Any,  # noqa: A002
                  replace_global: bool = True, name: str | None = None) -> Tensor:
    """Each match of the RE2 ``pattern`` (the first only, without ``replace_global``)
    replaced by ``rewrite``, where \\1..\\9 are groups, \\0 the match, \\\\ a backslash."""
    strings = _string_input(input, "RegexReplace")
    if isinstance(pattern, (str, bytes)) and isinstance(rewrite, (str, bytes)):
        return apply_op("StaticRegexReplace", [strings], {
            "pattern": _text(pattern), "rewrite": _text(rewrite),
            "replace_global": bool(replace_global)}, name=name or "StaticRegexReplace").outputs[0]
    return apply_op("RegexReplace", [strings, _string_input(pattern, "RegexReplace"),
                                     _string_input(rewrite, "RegexReplace")],
                    {"replace_global": bool(replace_global)},
                    name=name or "RegexReplace").outputs[0]


def regex_full_match(input: Any, pattern: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Whether each whole string matches the RE2 ``pattern`` (bool, the input's shape)."""
    strings = _string_input(input, "RegexFullMatch")
    if isinstance(pattern, (str, bytes)):
        return apply_op("StaticRegexFullMatch", [strings], {"pattern": _text(pattern)},
                        name=name or "StaticRegexFullMatch").outputs[0]
    return apply_op("RegexFullMatch", [strings, _string_input(pattern, "RegexFullMatch")], {},
                    name=name or "RegexFullMatch").outputs[0]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def reduce_join(inputs: Any, axis: Any = None, keep_dims: bool | None = None,
                separator: str = "", name: str | None = None, reduction_indices: Any = None,
                keepdims: bool | None = None) -> Tensor:
    """The strings joined with ``separator`` along ``axis`` (all axes when None, in
    row-major order); with several axes the first listed varies fastest, as in TF. An
    empty reduction gives ""."""
    keep = bool(keepdims if keepdims is not None else keep_dims)
    axis = axis if axis is not None else reduction_indices
    with name_scope(name, "ReduceJoin"):
        strings = _string_input(inputs, "ReduceJoin")
        rank = strings.shape.ndims
        if axis is None:
            if rank is None:
                raise ValueError("reduce_join over every axis needs the input's rank; pass axis")
            axis = list(range(rank - 1, -1, -1))   # TF's: the last axis varies fastest
        axes = convert_to_tensor(axis, dtype=dtypes.int32, name="reduction_indices")
        _check_axes(axes, rank)
        return apply_op("ReduceJoin", [strings, axes],
                        {"keep_dims": keep, "separator": str(separator)}).outputs[0]


def _check_axes(axes: Tensor, rank: int | None) -> None:
    if rank is None or axes.op.type != "Const":
        return
    for a in np.asarray(axes.op.get_attr("value")).reshape(-1).tolist():
        if not -rank <= a < max(rank, 1):
            raise ValueError(f"Invalid reduction dimension {a} for input with {rank} "
                             f"dimensions.")


__all__ = ["lower", "reduce_join", "regex_full_match", "regex_replace", "strip", "substr",
           "upper"]

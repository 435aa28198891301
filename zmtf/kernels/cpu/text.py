"""CPU kernels of the string transforms (ops/text_ops.py): Substr, StringStrip,
StringLower/Upper, (Static)RegexReplace, (Static)RegexFullMatch and ReduceJoin.

Strings are bytes; regexes see them as UTF-8 text (undecodable bytes kept through
surrogateescape, so nothing is lost) and run as RE2 would (re2_patterns.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.cpu.common import shape_str, str_attr
from zmtf.kernels.cpu.re2_patterns import compile_re2, rewriter
from zmtf.kernels.registry import register


def _map(strings: Any, fn: Callable[[bytes], Any], dtype: Any = object) -> np.ndarray:
    strings = np.asarray(strings, dtype=object)
    out = np.empty(strings.shape, dtype=dtype)
    flat = out.reshape(-1)
    for i, s in enumerate(strings.flat):
        flat[i] = fn(s)
    return out


def _decode(s: bytes) -> str:
    return s.decode("utf-8", "surrogateescape")


def _encode(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


@register("StringStrip", dtypes=["string"])
def string_strip(ctx: Any, inputs: list, attrs: dict) -> list:
    return [_map(inputs[0], bytes.strip)]   # ASCII whitespace, as absl's StripAsciiWhitespace


@register("StringLower", dtypes=["string"])
def string_lower(ctx: Any, inputs: list, attrs: dict) -> list:
    if attrs.get("encoding"):
        return [_map(inputs[0], lambda s: _encode(_decode(s).lower()))]
    return [_map(inputs[0], bytes.lower)]


@register("StringUpper", dtypes=["string"])
def string_upper(ctx: Any, inputs: list, attrs: dict) -> list:
    if attrs.get("encoding"):
        return [_map(inputs[0], lambda s: _encode(_decode(s).upper()))]
    return [_map(inputs[0], bytes.upper)]


# ---- regular expressions ------------------------------------------------------------------
def _replace(strings: Any, pattern: str, rewrite: str, replace_global: bool) -> np.ndarray:
    regex = compile_re2(pattern)
    replace = rewriter(rewrite, regex)
    if replace is None:
        return np.array(strings, dtype=object, copy=True)
    count = 0 if replace_global else 1
    return _map(strings, lambda s: _encode(regex.sub(replace, _decode(s), count=count)))


def _scalar_text(value: Any, what: str, attrs: dict) -> str:
    value = np.asarray(value, dtype=object)
    if value.shape != ():
        raise InvalidArgumentError(f"{what} must be a scalar, got shape {shape_str(value.shape)} "
                                   f"(node '{attrs['_node_name']}')")
    return _decode(value[()])


@register("StaticRegexReplace", dtypes=["string"])
def static_regex_replace(ctx: Any, inputs: list, attrs: dict) -> list:
    return [_replace(inputs[0], attrs["pattern"], attrs["rewrite"], attrs["replace_global"])]


@register("RegexReplace", dtypes=["string"])
def regex_replace(ctx: Any, inputs: list, attrs: dict) -> list:
    pattern = _scalar_text(inputs[1], "Pattern", attrs)
    rewrite = _scalar_text(inputs[2], "Rewrite", attrs)
    return [_replace(inputs[0], pattern, rewrite, attrs["replace_global"])]


def _full_match(strings: Any, pattern: str) -> np.ndarray:
    regex = compile_re2(pattern)
    return _map(strings, lambda s: regex.fullmatch(_decode(s)) is not None, dtype=bool)


@register("StaticRegexFullMatch", dtypes=["string"])
def static_regex_full_match(ctx: Any, inputs: list, attrs: dict) -> list:
    return [_full_match(inputs[0], attrs["pattern"])]


@register("RegexFullMatch", dtypes=["string"])
def regex_full_match(ctx: Any, inputs: list, attrs: dict) -> list:
    return [_full_match(inputs[0], _scalar_text(inputs[1], "Pattern", attrs))]


# ---- substrings ---------------------------------------------------------------------------
@register("Substr", dtypes=["string"])
def substr(ctx: Any, inputs: list, attrs: dict) -> list:
    """Substr(s, pos, len): pos may count from the end; past either end is an error."""
    strings = np.asarray(inputs[0], dtype=object)
    try:
        strings, pos, length = np.broadcast_arrays(strings, np.asarray(inputs[1]),
                                                   np.asarray(inputs[2]))
    except ValueError:
        raise InvalidArgumentError(
            f"Substr (node '{attrs['_node_name']}'): pos {shape_str(np.shape(inputs[1]))} and "
            f"len {shape_str(np.shape(inputs[2]))} must be scalars or have the input's shape "
            f"{shape_str(np.shape(inputs[0]))}") from None
    chars = attrs.get("unit") == "UTF8_CHAR"
    out = np.empty(strings.shape, dtype=object)
    flat = out.reshape(-1)
    for i, (s, p, n) in enumerate(zip(strings.flat, pos.flat, length.flat)):
        text = _decode(s) if chars else s
        p, n = int(p), int(n)
        if not -len(text) <= p <= len(text):
            raise InvalidArgumentError(f"pos {p} out of range for string {s!r} at index {i}")
        start = p + len(text) if p < 0 else p
        piece = text[start:] if n < 0 else text[start:start + n]   # len < 0: to the end
        flat[i] = _encode(piece) if chars else piece
    return [out]


# ---- ReduceJoin ---------------------------------------------------------------------------
@register("ReduceJoin", dtypes=["string"])
def reduce_join(ctx: Any, inputs: list, attrs: dict) -> list:
    """Join along the given axes, the first one listed varying fastest (TF's order); an
    empty reduction gives b""."""
    strings = np.asarray(inputs[0], dtype=object)
    rank = strings.ndim
    axes = []
    for a in np.asarray(inputs[1]).reshape(-1).tolist():
        if not -rank <= a < max(rank, 1):
            raise InvalidArgumentError(f"Invalid reduction dimension {a} for input with "
                                       f"{rank} dimensions (node '{attrs['_node_name']}')")
        if a % max(rank, 1) not in axes:
            axes.append(a % max(rank, 1))
    axes = [a for a in axes if a < rank]
    kept = [d for d in range(rank) if d not in axes]
    moved = np.transpose(strings, kept + axes[::-1])
    kept_shape = tuple(strings.shape[d] for d in kept)
    rows = moved.reshape(kept_shape + (-1,)) if moved.size else \
        np.empty(kept_shape + (0,), dtype=object)
    separator = str_attr(attrs, "separator", attrs["_node_name"]).encode()
    out = np.empty(kept_shape, dtype=object)
    flat_out = out.reshape(-1)
    for i, row in enumerate(rows.reshape(int(np.prod(kept_shape)), rows.shape[-1])):
        flat_out[i] = separator.join(row.tolist())
    if attrs["keep_dims"]:
        out = out.reshape(tuple(1 if d in axes else strings.shape[d] for d in range(rank)))
    return [out]

"""What a node of each op type looks like when zmtf builds it, to explain a node that fails.

A graph from the network can carry a node of a known op with attrs or inputs that zmtf's
own builders never produce: a missing ``padding``, three inputs to a Fill, an int where a
list of strides belongs. Its kernel then fails with a bare Python error ("too many values
to unpack (expected 2)"). TF checks every NodeDef against its OpDef first; zmtf has no
hand-written OpDefs, so ``op_signature_table`` records the signatures its builders made
across the test suite (``tools/gen_op_signatures.py`` regenerates it), and ``explain`` uses
them *after* a kernel has failed, to say what differs. It never refuses a node by itself:
a signature seen in tests is evidence, not a specification.

A signature is ``(input_counts, required, kinds, lengths)``: the data-input counts seen (a
``(low, high)`` range when they vary a lot: such an op is variadic, only ``low`` counts),, the attrs every node of the op carried, per
attr the kinds of value seen (``kind_of``), and the attrs that were always a list of one
length (a pool's ``ksize``: 4). Attrs that start with "_" belong to the runtime
and are skipped.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from zmtf.framework.dtypes import as_dtype

#: Distinct input counts above which an op counts as variadic: a range, not a set.
VARIADIC_AFTER = 4
_MAX_KIND_DEPTH = 3


def kind_of(value: Any, depth: int = 0) -> str:
    """A short name of an attr value's shape of data: "int", "list[int]", "tuple[int|none]";
    a string that names a dtype ("float32") is a "dtype"."""
    if value is None:
        return "none"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, (list, tuple)):
        outer = "list" if isinstance(value, list) else "tuple"
        if depth >= _MAX_KIND_DEPTH:
            return f"{outer}[...]"
        return f"{outer}[{'|'.join(sorted({kind_of(v, depth + 1) for v in value}))}]"
    if isinstance(value, np.ndarray):
        return "array"
    if isinstance(value, str) and _names_dtype(value):
        return "dtype"
    return type(value).__name__


def _names_dtype(text: str) -> bool:
    try:
        as_dtype(text)
    except Exception:  # noqa: BLE001 - whatever numpy makes of a string, it is no dtype name
        return False
    return True


def _split(kind: str) -> tuple[str, set[str]]:
    """"list[int|none]" -> ("list", {"int", "none"}); a scalar kind -> (kind, set())."""
    outer, bracket, rest = kind.partition("[")
    if not bracket:
        return kind, set()
    inner = rest[:-1]
    return outer, set(_top_level(inner)) if inner else set()


def _top_level(inner: str) -> list[str]:
    """Split "int|list[int|none]" at the "|" that are not inside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(inner):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append(inner[start:i])
            start = i + 1
    parts.append(inner[start:])
    return parts


def kind_matches(kind: str, seen: list[str]) -> bool:
    """Whether a value of ``kind`` is like one of the ``seen`` kinds: an int passes for a float,
    a dtype name for any string, an empty list for any list, and a list whose items are of seen item kinds passes."""
    if kind in seen or (kind == "int" and "float" in seen) or (kind == "dtype" and "str" in seen):
        return True
    outer, items = _split(kind)
    if outer not in ("list", "tuple"):
        return False
    seen_items: set[str] = set()
    for other in seen:
        other_outer, other_items = _split(other)
        if other_outer == outer:
            if not items:
                return True
            seen_items |= other_items
    return bool(seen_items) and all(kind_matches(item, sorted(seen_items)) for item in items)


Signature = tuple[Any, list[str], dict[str, list[str]], dict[str, int]]


def explain(op_type: str, input_count: int, attrs: dict[str, Any],
            table: dict[str, Signature] | None = None) -> str | None:
    """How this node differs from the ``op_type`` nodes zmtf builds; None when it does not
    (or when the op has no recorded signature)."""
    if table is None:
        from zmtf.framework.op_signature_table import SIGNATURES as table
    signature = table.get(op_type)
    if signature is None:
        return None
    counts, required, expected, lengths = signature
    problems = []
    if isinstance(counts, tuple):
        low, _ = counts   # variadic: a longer list than the tests built is still fine
        if input_count < low:
            problems.append(f"it has {input_count} input{'s' * (input_count != 1)}, "
                            f"not {low} or more")
    elif input_count not in counts:
        wanted = " or ".join(str(c) for c in counts)
        problems.append(f"it has {input_count} input{'s' * (input_count != 1)}, not {wanted}")
    given = {k for k in attrs if not k.startswith("_")}
    missing = sorted(set(required) - given)
    if missing:
        problems.append(f"attr{'s' * (len(missing) > 1)} {', '.join(map(repr, missing))} "
                        f"missing")
    for key in sorted(given & expected.keys()):
        kind = kind_of(attrs[key])
        if not kind_matches(kind, expected[key]):
            problems.append(f"attr '{key}' is {_short(attrs[key])} ({_short(kind, 60, str)}), "
                            f"where zmtf builds {_short(' or '.join(expected[key]), 120, str)}")
        elif key in lengths and len(attrs[key]) != lengths[key]:
            problems.append(f"attr '{key}' has {len(attrs[key])} items, where zmtf builds "
                            f"{lengths[key]}")
    if not problems:
        return None
    return (f"this {op_type} node is not like the ones zmtf builds: {'; '.join(problems)} "
            f"({_carries(op_type, required)})")


def _carries(op_type: str, required: list[str]) -> str:
    if not required:
        return f"zmtf's {op_type} nodes carry no attrs"
    return f"zmtf's {op_type} nodes carry attr{'s' * (len(required) > 1)} {', '.join(required)}"


def _short(value: Any, limit: int = 40, show: Callable[[Any], str] = repr) -> str:
    text = show(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def merge_signature(counts: set[int], nodes: int, carried: dict[str, int],
                    kinds: dict[str, set[str]], lengths: dict[str, set[int]]) -> Signature:
    """Observations of one op type -> its signature: the input counts (a range past
    ``VARIADIC_AFTER`` distinct ones), the attrs all ``nodes`` carried, the kinds seen, and
    the attrs always seen as lists of one length (``lengths``: -1 stands for a non-list)."""
    shown: Any = sorted(counts) if len(counts) <= VARIADIC_AFTER else (min(counts), max(counts))
    required = sorted(key for key, n in carried.items() if n == nodes)
    fixed = {key: next(iter(seen)) for key, seen in sorted(lengths.items())
             if len(seen) == 1 and next(iter(seen)) >= 0}
    return shown, required, {key: sorted(kinds[key]) for key in sorted(kinds)}, fixed


__all__ = ["VARIADIC_AFTER", "Signature", "explain", "kind_matches", "kind_of", "merge_signature"]

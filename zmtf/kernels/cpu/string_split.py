"""StringSplit / StringSplitV2: a vector of strings into SparseTensor parts (see
ops/string_split_ops.py for the two splitting rules)."""

from __future__ import annotations

from typing import Any

import numpy as np

from zmtf.framework.errors import InvalidArgumentError
from zmtf.kernels.registry import register


def _checked(inputs: list, attrs: dict) -> tuple[np.ndarray, bytes]:
    source, separator = inputs
    node = attrs["_node_name"]
    if source.ndim != 1:
        raise InvalidArgumentError(f"input must be a vector, got shape: {list(source.shape)} "
                                   f"(node '{node}')")
    if separator.ndim != 0:
        raise InvalidArgumentError(f"delimiter must be a scalar, got shape: {list(separator.shape)} "
                                   f"(node '{node}')")
    return source, bytes(separator.item())


def _parts(rows: list[list[bytes]]) -> list:
    indices = [(r, c) for r, tokens in enumerate(rows) for c in range(len(tokens))]
    values = np.empty(len(indices), dtype=object)
    values[:] = [token for tokens in rows for token in tokens]
    longest = max((len(tokens) for tokens in rows), default=0)
    return [np.asarray(indices, dtype=np.int64).reshape(-1, 2), values,
            np.asarray([len(rows), longest], dtype=np.int64)]


@register("StringSplit")
def string_split(ctx: Any, inputs: list, attrs: dict) -> list:
    source, delimiter = _checked(inputs, attrs)
    skip_empty = attrs.get("skip_empty", True)
    rows = []
    for text in source:
        text = bytes(text)
        if not text:
            rows.append([])      # TF: an empty string has no tokens, whatever skip_empty says
            continue
        if not delimiter:
            tokens = [text[i:i + 1] for i in range(len(text))]
        else:
            first = delimiter[:1]
            tokens = text.translate(bytes.maketrans(delimiter, first * len(delimiter))).split(first)
        rows.append([t for t in tokens if t] if skip_empty else tokens)
    return _parts(rows)


@register("StringSplitV2")
def string_split_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    source, sep = _checked(inputs, attrs)
    maxsplit = attrs.get("maxsplit", -1)
    return _parts([bytes(text).split(sep or None, maxsplit) for text in source])

"""PrintV2: fill tf.print's template with its tensors, formatted as TF's SummarizeValue does
(``[1 2 ... 9 10]``, floats with the fewest of 6/9 (float) or 15/17 (double) significant
digits that read back exactly, strings in quotes), and write it where output_stream says."""

from __future__ import annotations

import logging
import sys
from typing import Any

import numpy as np

from zmtf.kernels.registry import register

_tf_log = logging.getLogger("tensorflow")
_FILE = "file://"


@register("PrintV2")
def print_v2(ctx: Any, inputs: list, attrs: dict) -> list:
    """PrintV2(tensors...): writes the filled template followed by ``end``; no outputs."""
    text = attrs["template"].format(*(format_tensor(np.asarray(t), attrs["summarize"])
                                      for t in inputs))
    stream = attrs["output_stream"]
    if stream.startswith(_FILE):   # a file of the server's: only under its file root
        stream = _FILE + ctx.resources.files.check(stream[len(_FILE):], attrs["_node_name"])
    _write(stream, text, attrs["end"])
    return []


def _write(stream: str, text: str, end: str) -> None:
    if stream in ("stderr", "stdout"):
        out = sys.stderr if stream == "stderr" else sys.stdout
        out.write(text + end)
        out.flush()
    elif stream.startswith("log("):
        getattr(_tf_log, stream[4:-1])(text + end.rstrip("\n"))
    else:
        with open(stream[len(_FILE):], "a", encoding="utf-8") as file:
            file.write(text + end)


def format_tensor(value: np.ndarray, summarize: int) -> str:
    """One tensor as TF prints it: nested brackets, ``...`` past ``summarize`` entries."""
    if value.ndim == 0:
        return _scalar(value[()], value.dtype)
    return _nested(value, summarize, indent=1)


def _nested(value: np.ndarray, summarize: int, indent: int) -> str:
    n = value.shape[0]
    cut = 0 <= summarize and n > 2 * summarize
    rows = list(range(summarize)) + [-1] + list(range(n - summarize, n)) if cut else list(range(n))
    if value.ndim == 1:
        items = ["..." if i < 0 else _scalar(value[i], value.dtype) for i in rows]
        return "[" + " ".join(items) + "]"
    joiner = "\n" * (value.ndim - 1) + " " * indent
    items = ["..." if i < 0 else _nested(value[i], summarize, indent + 1) for i in rows]
    return "[" + joiner.join(items) + "]"


def _scalar(x: Any, dtype: np.dtype) -> str:
    if dtype.kind == "f":
        return _float(float(x), 6 if dtype.itemsize <= 4 else 15, 9 if dtype.itemsize <= 4 else 17,
                      np.float32 if dtype.itemsize <= 4 else np.float64)
    if dtype.kind == "b":
        return "1" if x else "0"
    if dtype.kind in "OSU":
        text = x.decode("utf-8", "backslashreplace") if isinstance(x, bytes) else str(x)
        return f'"{text}"'
    return str(int(x))


def _float(x: float, short: int, long: int, kind: type) -> str:
    if np.isnan(x):
        return "nan"
    if np.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = f"{x:.{short}g}"
    return text if kind(float(text)) == kind(x) else f"{x:.{long}g}"

"""``tf.print`` (TF 1.14+'s PrintV2): print tensors' values when the op runs, where it is
placed, to stderr, stdout, a ``tf.logging`` level or a file, formatted as TF formats them.

Python values among the arguments are formatted now (``str``); tensors, also those inside
lists, tuples and dicts, become ``{}`` slots of one template that the kernel fills at run
time. The result is the op itself, to put in ``tf.control_dependencies``.
"""

from __future__ import annotations

import sys
from typing import Any

from zmtf.framework.graph import Operation, Tensor
from zmtf.framework.op_def import STRING_INPUT_OPS, apply_op, op_def
from zmtf.ops.constant_op import convert_to_tensor
from zmtf.framework.sparse_tensor import SparseTensor

STRING_INPUT_OPS.add("PrintV2")

#: the streams as they were at import (a test harness may swap sys.stdout/stderr later): the
#: kernel writes to whatever sys.stdout/sys.stderr are when it runs
_STDERR, _STDOUT = sys.stderr, sys.stdout

#: the tf.logging function names tf.print accepts as output_stream, and their levels
_LOG_LEVELS = ("info", "warning", "error")


@op_def("PrintV2", stateful=True)
def _print_v2_outputs(inputs: list[Tensor], attrs: dict[str, Any]) -> list:
    return []


def print_v2(*inputs: Any, output_stream: Any = sys.stderr, summarize: int | None = 3,
             sep: str = " ", end: str = "\n", name: str | None = None) -> Operation:
    """Print ``inputs`` (tensors and Python values) when the returned op runs, as TF's
    ``tf.print``: ``summarize`` first and last entries per dimension (None or -1: all)."""
    stream = _stream_name(output_stream)
    if not isinstance(sep, str) or not isinstance(end, str):
        raise TypeError("tf.print: sep and end must be strings")
    tensors: list[Tensor] = []
    parts = [_template_of(value, tensors) for value in inputs]
    template = sep.join(parts)
    attrs = {"template": template, "output_stream": stream, "end": end,
             "summarize": -1 if summarize is None else int(summarize)}
    return apply_op("PrintV2", tensors, attrs, name=name or "PrintV2")


class _Slot:
    """A tensor's place in str() of a Python structure; becomes "{}" in the template."""

    TOKEN = "\x00slot\x00"

    def __repr__(self) -> str:
        return self.TOKEN

    __str__ = __repr__


def _template_of(value: Any, tensors: list[Tensor]) -> str:
    """``value`` as a template piece: str() of it with "{}" at each tensor (also inside a
    list, tuple or dict); its own braces are doubled so that they print as they are."""
    text = str(_slot_tensors(value, tensors))
    return text.replace("{", "{{").replace("}", "}}").replace(_Slot.TOKEN, "{}")


def _slot_tensors(value: Any, tensors: list[Tensor]) -> Any:
    if isinstance(value, SparseTensor):
        raise NotImplementedError("tf.print of a SparseTensor is not built in zmtf; print its "
                                  "indices, values and dense_shape")
    if isinstance(value, Tensor) or hasattr(value, "_ref_tensor"):
        tensors.append(convert_to_tensor(value))
        return _Slot()
    if isinstance(value, dict):
        return {k: _slot_tensors(v, tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_slot_tensors(v, tensors) for v in value)
    return value


def _stream_name(output_stream: Any) -> str:
    """output_stream as the kernel's attr: "stderr", "stdout", "log(info)", "file://path"."""
    if output_stream is sys.stderr or output_stream is _STDERR or output_stream is sys.__stderr__:
        return "stderr"
    if output_stream is sys.stdout or output_stream is _STDOUT or output_stream is sys.__stdout__:
        return "stdout"
    if isinstance(output_stream, str) and output_stream.startswith("file://"):
        return output_stream
    level = getattr(output_stream, "__name__", None)
    if level in _LOG_LEVELS and "logging" in getattr(output_stream, "__module__", ""):
        return f"log({level})"
    raise ValueError(f"Unsupported output stream, logging level, or file.{output_stream}. "
                     f"Supported streams are sys.stdout, sys.stderr, tf.logging.info, "
                     f"tf.logging.warning, tf.logging.error, or a 'file://' path")

"""TF1's older scope spellings, kept so TF1 code runs: ``op_scope`` and ``variable_op_scope``
(the values-first forms of name_scope and variable_scope), and ``container``."""

from __future__ import annotations

import re
from contextlib import contextmanager
from typing import Any, Iterator

from zmtf.framework.graph import get_default_graph
from zmtf.ops.variable_scope import VariableScope, variable_scope


@contextmanager
def op_scope(values: Any, name: str | None, default_name: str | None = None) -> Iterator[str]:
    """``name_scope(name, default_name, values)`` with the arguments in TF 0.x's order."""
    with get_default_graph().name_scope(name if name is not None else default_name) as scope:
        yield scope


@contextmanager
def variable_op_scope(values: Any, name_or_scope: Any, default_name: str | None = None,
                      **kwargs: Any) -> Iterator[VariableScope]:
    """``variable_scope(name_or_scope, default_name, values, **kwargs)``, values first."""
    with variable_scope(name_or_scope, default_name=default_name, values=values, **kwargs) as scope:
        yield scope


_CONTAINER_NAME = re.compile(r"([A-Za-z0-9.][A-Za-z0-9_.\-/]*)?\Z")   # TF's rule


@contextmanager
def container(container_name: str) -> Iterator[str]:
    """Variables made inside live in the resource container ``container_name`` ("" is the
    default one, named after the task's job): ``tf.Session.reset(target, [name])`` clears
    them and leaves the other containers alone. Queues and other shared resources stay in
    the default container."""
    if not isinstance(container_name, str):
        raise TypeError(f"container_name must be a string, got {type(container_name).__name__}")
    if not _CONTAINER_NAME.match(container_name):
        raise ValueError(f"container name {container_name!r} is not valid: use letters, digits "
                         f"and '_', '.', '-', '/' (not first)")
    graph = get_default_graph()
    outer = getattr(graph, "_container", "")
    graph._container = container_name   # type: ignore[attr-defined]  # read by variable_op
    try:
        yield container_name
    finally:
        graph._container = outer   # type: ignore[attr-defined]

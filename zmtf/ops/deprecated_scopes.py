"""TF1's older scope spellings, kept so TF1 code runs: ``op_scope`` and ``variable_op_scope``
(the values-first forms of name_scope and variable_scope), and ``container``."""

from __future__ import annotations

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


@contextmanager
def container(container_name: str) -> Iterator[None]:
    """Accepted for TF1 code; zmtf keeps no named containers: every stateful op's resource
    lives in its session's (or its worker's) one container, and ``tf.Session.reset`` clears
    that whole container whatever ``containers`` it is given."""
    if not isinstance(container_name, str):
        raise TypeError(f"container_name must be a string, got {type(container_name).__name__}")
    yield

"""``tf.keras.backend``, the graph-mode part TF1 scripts use: the learning phase (a
per-graph ``placeholder_with_default(False)`` that Dropout and BatchNormalization read when
called without ``training``), per-graph layer name counters, floatx/epsilon, get_session."""

from __future__ import annotations

import re
import weakref
from typing import Any

from zmtf.framework import dtypes
from zmtf.framework.graph import get_default_graph
from zmtf.ops import composite_ops
from zmtf.ops.constant_op import constant
from zmtf.ops.state_ops import is_variable_initialized
from zmtf.ops.variables import global_variables, variables_initializer

_EPSILON = [1e-7]
_FLOATX = ["float32"]
#: graph -> {"phase": tensor or 0/1 set by set_learning_phase, "uids": {prefix: count}}
_PER_GRAPH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SESSION: list[Any] = [None]


def _state() -> dict[str, Any]:
    graph = get_default_graph()
    if graph not in _PER_GRAPH:
        _PER_GRAPH[graph] = {"phase": None, "uids": {}}
    return _PER_GRAPH[graph]


def epsilon() -> float:
    """The fuzz factor keras adds to denominators (1e-7)."""
    return _EPSILON[0]


def set_epsilon(value: float) -> None:
    _EPSILON[0] = float(value)


def floatx() -> str:
    """The default float type of keras weights, as a string ('float32')."""
    return _FLOATX[0]


def set_floatx(value: str) -> None:
    if value not in ("float16", "float32", "float64"):
        raise ValueError(f"Unknown floatx type: {value!r}")
    _FLOATX[0] = str(value)


def learning_phase() -> Any:
    """The graph's learning phase: the value set by ``set_learning_phase`` (0 or 1), else a
    bool ``placeholder_with_default(False)`` named "keras_learning_phase" (feed True to train)."""
    state = _state()
    if state["phase"] is None:
        with get_default_graph().name_scope(""):
            state["phase"] = composite_ops.placeholder_with_default(
                constant(False), shape=[], name="keras_learning_phase")
    return state["phase"]


def set_learning_phase(value: int) -> None:
    """Fix the learning phase of the default graph: 0 = test, 1 = train."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _state()["phase"] = int(value)


def get_uid(prefix: str = "") -> int:
    """1, 2, 3, ... for each call with ``prefix`` in the default graph."""
    uids = _state()["uids"]
    uids[prefix] = uids.get(prefix, 0) + 1
    return uids[prefix]


def unique_object_name(base: str) -> str:
    """``base``, then ``base_1``, ``base_2``, ... in the default graph (keras layer names)."""
    count = get_uid(base) - 1
    return base if count == 0 else f"{base}_{count}"


def to_snake_case(name: str) -> str:
    """'MaxPooling2D' -> 'max_pooling2d', as keras names layers from their class."""
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return snake if snake[0] != "_" else "private" + snake


def reset_uids() -> None:
    _state()["uids"].clear()


def clear_session() -> None:
    """Forget the default graph's layer names and learning phase, and the keras session.
    (TF1 also resets the default graph; zmtf leaves that to ``tf.reset_default_graph()``.)"""
    _PER_GRAPH.pop(get_default_graph(), None)
    if _SESSION[0] is not None:
        _SESSION[0].close()
        _SESSION[0] = None


def get_session() -> Any:
    """The default session if one is active, else keras's own ``tf.Session`` (made once);
    variables of the graph that are not yet initialized are initialized, as in TF1."""
    from zmtf.client.session import Session, get_default_session

    session = get_default_session()
    if session is None:
        if _SESSION[0] is None or _SESSION[0].graph is not get_default_graph():
            _SESSION[0] = Session()
        session = _SESSION[0]
    candidates = global_variables()
    if candidates:
        flags = session.run([is_variable_initialized(v) for v in candidates])
        pending = [v for v, ready in zip(candidates, flags) if not ready]
        if pending:
            session.run(variables_initializer(pending))
    return session


def dtype_of(value: Any = None) -> Any:
    """The zmtf dtype for a keras dtype argument (default floatx)."""
    return dtypes.as_dtype(value or floatx())

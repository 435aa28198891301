"""``tf.contrib.framework``: arg_scope, the global step, and the variable creators and
getters of TF1's slim era."""

from __future__ import annotations

from typing import Any

from zmtf.contrib.arg_scope import (
    add_arg_scope, arg_scope, arg_scoped_arguments, current_arg_scope, has_arg_scope,
)
from zmtf.contrib.variables import add_model_variable, model_variable, variable
from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.training.optimizers import create_global_step, get_global_step, get_or_create_global_step


def get_variables(scope: Any = None, suffix: str | None = None,
                  collection: str = GraphKeys.GLOBAL_VARIABLES) -> list[Any]:
    """Variables of ``collection`` whose names match ``scope`` (a regex from their start,
    or a VariableScope) followed somewhere by ``suffix`` (a regex), as TF's."""
    if scope is not None and not isinstance(scope, str):
        scope = scope.name
    if suffix is not None:
        scope = (scope or "") + ".*" + suffix
    return get_default_graph().get_collection(collection, scope)


def get_model_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    return get_variables(scope, suffix, GraphKeys.MODEL_VARIABLES)


def get_trainable_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    return get_variables(scope, suffix, GraphKeys.TRAINABLE_VARIABLES)


def get_local_variables(scope: Any = None, suffix: str | None = None) -> list[Any]:
    return get_variables(scope, suffix, GraphKeys.LOCAL_VARIABLES)


def get_variables_by_name(given_name: str, scope: Any = None) -> list[Any]:
    """Variables whose last name part is ``given_name``."""
    return get_variables(scope=scope, suffix=f"/{given_name}:|^{given_name}:")


def get_unique_variable(var_op_name: str) -> Any:
    """The one variable named ``var_op_name`` (ValueError if none or several)."""
    candidates = get_variables(scope=var_op_name)
    if not candidates:
        raise ValueError(f"Couldn't find variable {var_op_name}")
    for candidate in candidates:
        if candidate.op.name == var_op_name:
            return candidate
    raise ValueError(f"Variable {var_op_name} does not uniquely identify a variable")


def get_variables_to_restore(include: list[str] | None = None,
                             exclude: list[str] | None = None) -> list[Any]:
    """Global variables under any ``include`` scope and under no ``exclude`` scope (for a
    Saver that restores part of a model)."""
    if include is None:
        chosen = get_variables()
    else:
        chosen = [v for scope in include for v in get_variables(scope)]
    excluded = {id(v) for scope in (exclude or []) for v in get_variables(scope)}
    return [v for v in chosen if id(v) not in excluded]


__all__ = ["add_arg_scope", "add_model_variable", "arg_scope", "arg_scoped_arguments",
           "current_arg_scope", "has_arg_scope", "model_variable", "variable",
           "create_global_step", "get_global_step", "get_local_variables", "get_model_variables",
           "get_or_create_global_step", "get_trainable_variables", "get_unique_variable",
           "get_variables", "get_variables_by_name", "get_variables_to_restore"]

"""``tf.make_template``: wrap a function so every call shares the variables of its first.

As TF1's Template: the first call enters a fresh variable scope (``name``, made unique; or
the scope made at construction with ``create_scope_now_``) and creates the variables; each
later call re-enters that scope with reuse, so ``tf.get_variable`` finds them. A later call
that creates a trainable variable is refused: that is ``tf.Variable`` where
``tf.get_variable`` was meant, and the copies would silently diverge.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

from zmtf.framework.graph import GraphKeys, get_default_graph
from zmtf.ops.variable_scope import VariableScope, variable_scope


class Template:
    """A function whose variables are created on its first call and reused on later ones."""

    def __init__(self, name: str, func: Callable[..., Any], create_scope_now: bool = False,
                 unique_name: str | None = None) -> None:
        if name is None:
            raise ValueError("name cannot be None.")
        self._name = name
        self._func = func
        self._unique_name = unique_name
        self._variable_scope: VariableScope | None = None
        self._variables_created = False
        if create_scope_now:
            with self._new_scope() as scope:
                self._variable_scope = scope

    def _new_scope(self) -> Any:
        return variable_scope(self._unique_name, default_name=self._name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._variable_scope is None:
            with self._new_scope() as scope:
                self._variable_scope = scope
                return self._call_func(args, kwargs)
        with variable_scope(self._variable_scope, reuse=self._variables_created):
            return self._call_func(args, kwargs)

    def _call_func(self, args: tuple, kwargs: dict) -> Any:
        graph = get_default_graph()
        trainable_before = len(graph.get_collection(GraphKeys.TRAINABLE_VARIABLES))
        result = self._func(*args, **kwargs)
        if self._variables_created:
            created = graph.get_collection(GraphKeys.TRAINABLE_VARIABLES)[trainable_before:]
            if created:
                raise ValueError(
                    "Trainable variable created when calling a template after the first time, "
                    f"perhaps you used tf.Variable when you meant tf.get_variable: {created}")
        else:
            self._variables_created = True
        return result

    @property
    def name(self) -> str:
        return self._name

    @property
    def func(self) -> Callable[..., Any]:
        return self._func

    @property
    def variable_scope(self) -> VariableScope | None:
        return self._variable_scope

    @property
    def variable_scope_name(self) -> str | None:
        """The scope's name with a trailing '/', so it prefixes only this template's variables."""
        if self._variable_scope is None:
            return None
        return self._variable_scope.name + "/"

    def _collection(self, key: str) -> list[Any]:
        if self._variable_scope is None:
            return []
        return get_default_graph().get_collection(key, scope=self.variable_scope_name)

    @property
    def variables(self) -> list[Any]:
        return self.global_variables + self.local_variables

    @property
    def global_variables(self) -> list[Any]:
        return self._collection(GraphKeys.GLOBAL_VARIABLES)

    @property
    def local_variables(self) -> list[Any]:
        return self._collection(GraphKeys.LOCAL_VARIABLES)

    @property
    def trainable_variables(self) -> list[Any]:
        return self._collection(GraphKeys.TRAINABLE_VARIABLES)

    @property
    def non_trainable_variables(self) -> list[Any]:
        trainable = {id(v) for v in self.trainable_variables}
        return [v for v in self.global_variables if id(v) not in trainable]


def make_template(name_: str, func_: Callable[..., Any], create_scope_now_: bool = False,
                  unique_name_: str | None = None, custom_getter_: Any = None,
                  **kwargs: Any) -> Template:
    """TF1's ``tf.make_template``; ``kwargs`` are bound to ``func_`` (functools.partial)."""
    if custom_getter_ is not None:
        raise NotImplementedError("tf.make_template(custom_getter_=...): zmtf has no custom "
                                  "getters; create the variables with tf.get_variable instead")
    if kwargs:
        func_ = functools.partial(func_, **kwargs)
    return Template(name_, func_, create_scope_now=create_scope_now_, unique_name=unique_name_)

"""Calling a user's input_fn and model_fn with the arguments they ask for, as TF does.

A model_fn takes ``features`` and any of ``labels, mode, params, config``; an input_fn any
of ``mode, params, config``. An input_fn returns features, ``(features, labels)``, or a
``tf.data.Dataset`` of either (read through an initializable iterator, initialized by a
hook when the session starts).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from zmtf.estimator.model_fn import EstimatorSpec
from zmtf.ops.dataset_ops import Dataset
from zmtf.framework.scopes import device
from zmtf.training.session_run_hook import SessionRunHook

_VALID_MODEL_FN_ARGS = frozenset({"features", "labels", "mode", "params", "self", "config"})


def fn_args(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The names fn can be called with (a partial's bound keywords excluded, as TF's fn_args)."""
    bound = set(fn.keywords) if isinstance(fn, functools.partial) else set()
    parameters = inspect.signature(fn).parameters.values()
    return tuple(p.name for p in parameters
                 if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in bound)


def verify_model_fn_args(model_fn: Callable[..., Any], params: Any) -> None:
    """TF's checks of a model_fn's signature against the params given to the Estimator."""
    args = set(fn_args(model_fn))
    if "features" not in args:
        raise ValueError(f"model_fn ({model_fn}) must include features argument.")
    if params is not None and "params" not in args:
        raise ValueError(f"model_fn ({model_fn}) does not include params argument, but params "
                         f"({params}) is passed to Estimator.")
    unexpected = sorted(args - _VALID_MODEL_FN_ARGS)
    if unexpected:
        raise ValueError(f"model_fn ({model_fn}) has following not expected args: {unexpected}")


def call_input_fn(input_fn: Callable[..., Any], mode: str, params: Any, config: Any) -> Any:
    """Call input_fn with what it asks for, its ops pinned to the CPU (TF's rule)."""
    args = fn_args(input_fn)
    kwargs = {name: value for name, value in (("mode", mode), ("params", params), ("config", config))
              if name in args}
    with device("/cpu:0"):
        return input_fn(**kwargs)


class DatasetInitializerHook(SessionRunHook):
    """Initialize the input_fn's dataset iterator once the session exists."""

    def __init__(self, iterator: Any) -> None:
        self._iterator = iterator

    def begin(self) -> None:
        self._initializer = self._iterator.initializer

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self._initializer)


def parse_input_fn_result(result: Any) -> tuple[Any, Any, list[SessionRunHook]]:
    """(features, labels or None, hooks) from what an input_fn returned."""
    hooks: list[SessionRunHook] = []
    if isinstance(result, Dataset):
        iterator = result.make_initializable_iterator()
        hooks.append(DatasetInitializerHook(iterator))
        result = iterator.get_next()
    if isinstance(result, (list, tuple)):
        if len(result) != 2:
            raise ValueError("input_fn should return (features, labels) as a len 2 tuple.")
        return result[0], result[1], hooks
    return result, None, hooks


def call_model_fn(model_fn: Callable[..., Any], features: Any, labels: Any, mode: str, params: Any,
                  config: Any) -> EstimatorSpec:
    """Call model_fn with what it asks for; it must return an EstimatorSpec."""
    args = fn_args(model_fn)
    kwargs: dict[str, Any] = {}
    if "labels" in args:
        kwargs["labels"] = labels
    elif labels is not None:
        raise ValueError("model_fn does not take labels, but input_fn returns labels.")
    for name, value in (("mode", mode), ("params", params), ("config", config)):
        if name in args:
            kwargs[name] = value
    spec = model_fn(features=features, **kwargs)
    if not isinstance(spec, EstimatorSpec):
        raise ValueError("model_fn should return an EstimatorSpec.")
    return spec
